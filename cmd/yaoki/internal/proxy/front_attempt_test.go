package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

func TestFrontAttemptTimeout(t *testing.T) {
	// The fault: the upstream hangs on the first attempt (a stuck
	// worker). The policy's AttemptTimeout cuts it (its connection
	// closed) and the retry, on a new connection, gets the answer.
	var n atomic.Int32
	seen := make(chan string, 4)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			i := n.Add(1)
			if i == 1 {
				c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
				_, err := br.ReadByte()
				seen <- fmt.Sprintf("attempt %s hung, then %v", req.Header.Get("Attempt-Count"), err)
				return
			}
			seen <- "attempt " + req.Header.Get("Attempt-Count") + " answered"
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	fp := newFrontProxy(t, url, Route{Policy: retry.Policy{MaxAttempts: 2, AttemptTimeout: 50 * time.Millisecond}})
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("GET: %v %q, %v; want the second attempt's 200", resp, body, err)
	}
	got := []string{<-seen, <-seen}
	slices.Sort(got)
	if want := []string{"attempt 1 hung, then EOF", "attempt 2 answered"}; !slices.Equal(got, want) {
		t.Errorf("the upstream saw %q, want %q (the first attempt's connection closed)", got, want)
	}
}

func TestFrontLongAnswerHead(t *testing.T) {
	// An answer whose head is longer than the front end's buffers (a
	// field of 100 KiB) is relayed whole; one past net/http's bound on an
	// answer's head (10 MiB) is the upstream's fault: 502.
	long := strings.Repeat("v", 100<<10)
	url := answersByPath(t, map[string]string{
		"/long":      "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Length: 2\r\n\r\nok",
		"/closehuge": "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Many: "+strings.Repeat("v", 1000)+"\r\n", 11<<10) + "Content-Length: 2\r\n\r\nok",
	})
	fp := newFrontProxy(t, url, Route{Policy: retry.Policy{MaxAttempts: 1}})
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /long HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || body != "ok" || resp.Header.Get("X-Long") != long {
		t.Fatalf("GET /long: %v, %v; want 200 with the 100 KiB field", resp, err)
	}
	io.WriteString(conn, "GET /closehuge HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, _, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 502 {
		t.Fatalf("GET /closehuge: %v, %v; want 502", resp, err)
	}
}
