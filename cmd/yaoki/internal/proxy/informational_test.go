package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestProxyEndless1xx(t *testing.T) {
	// The fault: an upstream that answers with 103 Early Hints after 103
	// Early Hints and never with a final answer (a bug, a hostile
	// upstream), each within the read timeout. The proxy relayed every one
	// of them to the client for as long as the upstream sent them, and
	// held the client. Now an attempt ends after 10 1xx answers (the
	// client gets at most 10 per request), and the client gets a 502
	// problem that says why, after the attempts the method allows: on the
	// pool's own path (GET) and on its fallback http.Transport (a POST
	// without key, sent once; a PUT of 100 KiB).
	//
	// And one whose few 1xx answers have long headers (2 MiB each): they
	// count towards the answer's 10 MiB, as if they were its own, and the
	// client gets at most 10 MiB of them for its request (it got a fifth,
	// now and then a sixth, from the fallback transport, which ends the
	// exchange a little after the hook that counts them asks it to).
	long := "X-Long: " + strings.Repeat("l", 2<<20) + "\r\n"
	for _, c := range []struct {
		method   string
		body     int
		hint     string // one 1xx answer's fields
		hints    int    // how many the client gets
		attempts int32
		reason   string
		detail   string
	}{
		{"GET", 0, "", 10, 3, "attempts_exhausted", "more than 10 informational (1xx) answers"},
		{"POST", 10, "", 10, 1, "not_idempotent", "more than 10 informational (1xx) answers"},
		{"PUT", 100 << 10, "", 10, 3, "attempts_exhausted", "more than 10 informational (1xx) answers"},
		// Four fit in 10 MiB; the fifth passes the bound: the client
		// gets four in all, whatever the attempts bring (http.Transport
		// may pass a fifth, or a sixth, to the proxy before it ends the
		// exchange).
		{"GET", 0, long, 4, 3, "attempts_exhausted", "exceeded 10 MiB"},
		{"POST", 10, long, 4, 1, "not_idempotent", "1xx) answers whose headers passed 10 MiB"},
	} {
		hint := "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n" + c.hint + "\r\n"
		url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			io.Copy(io.Discard, req.Body)
			for range 100000 { // a bound on the failure: endless for the proxy
				if _, err := io.WriteString(c, hint); err != nil {
					return // the proxy closed the connection
				}
			}
		})
		// A proxy for each: its guards are its own (the retries of one
		// would spend the budget of the next).
		front := proxyFront(t, url)
		conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second)) // a bound on the failure, not a wait
		go fmt.Fprintf(conn, "%s /hints HTTP/1.1\r\nHost: front\r\nContent-Length: %d\r\n\r\n%s", c.method, c.body, strings.Repeat("b", c.body))
		br := bufio.NewReader(conn)
		hints := 0
		var resp *http.Response
		for hints <= 1000 {
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: after %d 1xx answers: %v", c.method, hints, err)
			}
			if resp.StatusCode >= 200 {
				break
			}
			hints++
		}
		if hints != c.hints {
			t.Fatalf("%s: the client got %d 1xx answers, want %d (relayed up to the bound)", c.method, hints, c.hints)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		var p struct{ Reason, Detail string }
		json.Unmarshal(body, &p)
		if resp.StatusCode != http.StatusBadGateway || p.Reason != c.reason || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: got %d %.300s, want 502 %s, %q", c.method, resp.StatusCode, body, c.reason, c.detail)
		}
		if n := conns.Load(); n != c.attempts {
			t.Errorf("%s: the upstream got %d connections, want %d (one per attempt, each closed)", c.method, n, c.attempts)
		}
	}
}

func TestFrontEndless1xx(t *testing.T) {
	// The fault of TestProxyEndless1xx on the front end (a GET without a
	// body): an upstream that sends 103 after 103. Each attempt ends after
	// 10, and the client gets 10 in all for its request, not 10 for each
	// of the 3 attempts, then a 502 that says why.
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		for range 100000 { // a bound on the failure: endless for the proxy
			if _, err := io.WriteString(c, hint); err != nil {
				return
			}
		}
	})
	front := proxyFront(t, url)
	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second)) // a bound on the failure, not a wait
	io.WriteString(conn, "GET /hints HTTP/1.1\r\nHost: front\r\n\r\n")
	br := bufio.NewReader(conn)
	hints := 0
	var resp *http.Response
	for hints <= 1000 {
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("after %d 1xx answers: %v", hints, err)
		}
		if resp.StatusCode >= 200 {
			break
		}
		hints++
	}
	body, _ := io.ReadAll(resp.Body)
	if hints != 10 || resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "more than 10 informational") {
		t.Errorf("the client got %d 1xx answers, then %d %.200s; want 10, then 502 with the reason", hints, resp.StatusCode, body)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("the upstream got %d connections, want 3 (one per attempt, each closed)", n)
	}
}
