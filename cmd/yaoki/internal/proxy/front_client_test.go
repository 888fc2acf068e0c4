package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// noFrontGoroutines reports whether no goroutine runs the front end's
// serving or watching of a client connection.
func noFrontGoroutines() bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	return !strings.Contains(stacks, "(*frontConn).serve") && !strings.Contains(stacks, "(*frontConn).watch")
}

func TestFrontClientGoneCancelsAttempt(t *testing.T) {
	// The fault: the client goes away while the upstream has not answered
	// its GET (a client's timeout, a user who gave up). The front end
	// hears the close (it watches the connection once a request takes
	// longer than watchAfter) and cancels the attempt: the upstream sees
	// its connection closed, no retry is sent for a client that is gone,
	// and nothing of the request is left running.
	got := make(chan struct{}, 4)
	upClosed := make(chan struct{}, 4)
	var requests atomic.Int32
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		requests.Add(1)
		got <- struct{}{}
		// Hang: never answer, and hear the proxy close the connection
		// (or give up after a bound that only a failure reaches).
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, br)
		upClosed <- struct{}{}
	})
	fp := newFrontProxy(t, url, Route{})
	conn, _ := fp.dial(t)
	io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: front\r\n\r\n")
	<-got
	conn.Close()
	select {
	case <-upClosed:
	case <-afterBound():
		t.Fatal("the upstream's connection was not closed after the client went away")
	}
	eventually(t, "the front end still serves the connection of the client gone", func() bool { return fp.conns() == 0 })
	eventually(t, "a goroutine of the front end's connection is left", noFrontGoroutines)
	if n := requests.Load(); n != 1 {
		t.Errorf("the upstream got %d requests, want 1: no retry for a client gone", n)
	}
	if n := fp.handed.Load(); n != 0 {
		t.Errorf("%d connections handed over, want 0", n)
	}
}

func TestFrontClientGoneDuringRetryWait(t *testing.T) {
	// The fault: the client goes away while the front end waits to retry
	// (a 503 with Retry-After: 5). The wait ends when the close is heard,
	// and no retry follows. A retry that went anyway would come 5 s after
	// the first answer, within the bound the test waits for the
	// connection's end.
	var requests atomic.Int32
	got := make(chan struct{}, 4)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			requests.Add(1)
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 0\r\n\r\n")
			got <- struct{}{}
		}
	})
	fp := newFrontProxy(t, url, Route{})
	conn, _ := fp.dial(t)
	io.WriteString(conn, "GET /busy HTTP/1.1\r\nHost: front\r\n\r\n")
	<-got
	conn.Close()
	eventually(t, "the front end still serves the connection of the client gone", func() bool { return fp.conns() == 0 })
	if n := requests.Load(); n != 1 {
		t.Errorf("the upstream got %d requests, want 1: no retry for a client gone during the wait", n)
	}
}

func TestFrontPipelined(t *testing.T) {
	// Two GETs in one write are answered in order; a POST pipelined after
	// a GET is handed, with its body, to net/http's server, which answers
	// it after the GET's answer; the upstream sees each request as sent.
	url, seen := smuggleUpstream(t)
	fp := newFrontProxy(t, url, Route{})
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /one HTTP/1.1\r\nHost: front\r\n\r\nGET /two HTTP/1.1\r\nHost: front\r\n\r\n")
	for _, want := range []string{"GET /one ", "GET /two "} {
		resp, body, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("answer for %s: %v %q, %v; want 200 ok", want, resp, body, err)
		}
		if got := <-seen; got != want {
			t.Errorf("the upstream saw %q, want %q", got, want)
		}
	}
	if n := fp.handed.Load(); n != 0 {
		t.Errorf("%d connections handed over after two GETs, want 0", n)
	}
	io.WriteString(conn, "GET /three HTTP/1.1\r\nHost: front\r\n\r\nPOST /four HTTP/1.1\r\nHost: front\r\nContent-Length: 5\r\n\r\nhello")
	for _, want := range []string{"GET /three ", "POST /four hello"} {
		resp, body, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("answer for %s: %v %q, %v; want 200 ok", want, resp, body, err)
		}
		if got := <-seen; got != want {
			t.Errorf("the upstream saw %q, want %q", got, want)
		}
	}
	if n := fp.handed.Load(); n != 1 {
		t.Errorf("%d connections handed over, want 1 (at the POST)", n)
	}
	// net/http serves the connection from then on, GETs too.
	io.WriteString(conn, "GET /five HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("GET after the POST: %v %q, %v; want 200 ok", resp, body, err)
	}
	if got := <-seen; got != "GET /five " {
		t.Errorf("the upstream saw %q, want GET /five", got)
	}
}

func TestFrontPipelinedPastTheBuffer(t *testing.T) {
	// A hundred GETs in one write, past the front end's read buffer (4
	// KiB), some heads across its end: each answered, in order. Then a
	// head written a byte at a time: served when its last byte comes.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
		}
	})
	fp := newFrontProxy(t, url, Route{})
	conn, br := fp.dial(t)
	var msg strings.Builder
	for i := range 100 {
		fmt.Fprintf(&msg, "GET /%d HTTP/1.1\r\nHost: front\r\nX-Pad: %s\r\n\r\n", i, strings.Repeat("p", i))
	}
	go io.WriteString(conn, msg.String())
	for i := range 100 {
		resp, body, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != 200 || body != "/"+strconv.Itoa(i) {
			t.Fatalf("answer %d: %v %q, %v; want 200 /%d", i, resp, body, err, i)
		}
	}
	for _, b := range []byte("GET /bytes HTTP/1.1\r\nHost: front\r\n\r\n") {
		conn.Write([]byte{b})
	}
	if resp, body, _, err := readFinal(br, "GET"); err != nil || resp.StatusCode != 200 || body != "/bytes" {
		t.Fatalf("the head written a byte at a time: %v %q, %v; want 200 /bytes", resp, body, err)
	}
	if n := fp.handed.Load(); n != 0 {
		t.Errorf("%d connections handed over, want 0", n)
	}
}

func TestFrontConnectionClose(t *testing.T) {
	// A client's Connection: close ends the connection after the answer,
	// which says so: a relayed answer and one of the proxy's own (a 502
	// for an upstream that answers nothing).
	url := answersByPath(t, map[string]string{
		"/ok":    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/close": "",
	})
	fp := newFrontProxy(t, url, Route{Policy: retry.Policy{MaxAttempts: 1}})
	for _, c := range []struct {
		path   string
		status int
	}{{"/ok", 200}, {"/close", 502}} {
		conn, br := fp.dial(t)
		io.WriteString(conn, "GET "+c.path+" HTTP/1.1\r\nHost: front\r\nConnection: close\r\n\r\n")
		resp, _, _, err := readFinal(br, "GET")
		if err != nil || resp.StatusCode != c.status || !resp.Close {
			t.Errorf("GET %s: %v, %v; want %d with Connection: close", c.path, resp, err, c.status)
			continue
		}
		if _, err := br.ReadByte(); err == nil {
			t.Errorf("GET %s: the connection stayed open after the answer", c.path)
		}
	}
}
