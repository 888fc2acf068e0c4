package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// expectUpstream is a loopback upstream that answers 500 to the first
// request and 200 with the body it read to the others, and records the
// Expect field of each request. With continues, it answers Expect:
// 100-continue with a 100 before reading the body; without, it never
// does (it reads the body as it comes, as many servers do).
func expectUpstream(t *testing.T, continues bool) (url string, expects func() []string) {
	var mu sync.Mutex
	var seen []string
	var n atomic.Int32
	url, _ = rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			mu.Lock()
			seen = append(seen, req.Header.Get("Expect"))
			mu.Unlock()
			if continues && req.Header.Get("Expect") == "100-continue" {
				io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				t.Errorf("upstream: reading the body: %v", err)
				return
			}
			if n.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nbusy")
				continue
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	return url, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// putExpecting sends a PUT of body with Expect: 100-continue through front
// and returns the status, the answer's body and the 1xx answers the
// client got.
func putExpecting(t *testing.T, front *httptest.Server, body string) (int, string, []int) {
	t.Helper()
	var interim []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
		interim = append(interim, code)
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "PUT", front.URL+"/x", strings.NewReader(body))
	req.Header.Set("Expect", "100-continue")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(got), interim
}

func TestProxyExpectContinueBodyKept(t *testing.T) {
	// The fault: a client sends Expect: 100-continue, and the upstream
	// never answers it with a 100 (it reads the body as it comes, as
	// many servers do); the first attempt gets a 500. The proxy keeps the
	// body for its retries, so it has read it whole (and the client had
	// its 100 Continue) before the first attempt: passed on, the Expect
	// would only make each attempt wait for a 100 that never comes before
	// sending the body (http.Transport's ExpectContinueTimeout, 1 s). The
	// upstream sees no Expect, the retry sends the body, the client gets
	// the one 100 Continue the proxy sent when it read the body.
	url, expects := expectUpstream(t, false)
	front := proxyFront(t, url)
	code, body, interim := putExpecting(t, front, "hello")
	if code != 200 || body != "hello" {
		t.Fatalf("got %d %q, want 200 hello (the retry's answer)", code, body)
	}
	if got := expects(); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Errorf("the upstream saw Expect %q on its attempts, want 2 attempts without Expect (the proxy holds the body)", got)
	}
	if len(interim) != 1 || interim[0] != 100 {
		t.Errorf("the client got the 1xx answers %v, want one 100 Continue", interim)
	}
}

func TestProxyExpectContinueBodyStreamed(t *testing.T) {
	// A body longer than the route keeps is sent once, streamed as the
	// client sends it: the Expect goes on to the upstream, which decides,
	// and a 100 Continue reaches the client.
	url, expects := expectUpstream(t, true)
	front := routeFront(t, url, Route{MaxBody: 4})
	code, body, interim := putExpecting(t, front, "hello")
	if code != 500 || body != "busy" {
		t.Fatalf("got %d %q, want the one attempt's 500 busy", code, body)
	}
	if got := expects(); len(got) != 1 || got[0] != "100-continue" {
		t.Errorf("the upstream saw Expect %q, want one attempt with 100-continue", got)
	}
	// The upstream's 100 is relayed, and net/http's server may send its
	// own as the body is first read: the two race, and a client takes
	// any number of 1xx answers (RFC 9110 §15.2).
	if len(interim) == 0 || slices.ContainsFunc(interim, func(c int) bool { return c != 100 }) {
		t.Errorf("the client got the 1xx answers %v, want 100 Continue", interim)
	}
}
