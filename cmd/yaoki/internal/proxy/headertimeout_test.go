package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// silentUpstream reads each request and never answers it: a hung worker,
// a dead backend behind a load balancer that accepted the connection. It
// counts the requests it got, and returns when the proxy closes the
// connection.
func silentUpstream(got *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got.Add(1)
		<-r.Context().Done()
	})
}

// readProblem reads the answer on the connection of dial's proxy to req
// (raw HTTP/1.1), within an hour of virtual time, and decodes its
// problem+json body.
func readProblem(t *testing.T, br *bufio.Reader) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the client got no answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var p map[string]any
	if ct := resp.Header.Get("Content-Type"); ct == "application/problem+json" {
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("problem %q: %v", body, err)
		}
	}
	return resp, p
}

func TestProxyUpstreamHeaderTimeout(t *testing.T) {
	// The fault: an upstream that takes the request and never answers.
	// The wait for the answer's header had no bound but the policy's
	// AttemptTimeout, which the default policy does not set: the client,
	// the handler and the upstream's connection were held until the
	// client gave up. Now the route's upstream read timeout (nginx's
	// proxy_read_timeout) bounds it as it bounds each wait for the body's
	// bytes: the attempt times out, is retried where the request may be
	// sent again, and the client gets a 504 problem once the attempts are
	// spent; a POST without key is sent once and gets its 504 after one
	// timeout. On the pool's own path (a GET, a small PUT) and on its
	// fallback http.Transport (a POST without key, a PUT of 100 KiB).
	const idle = 10 * time.Second
	for _, c := range []struct {
		name, method string
		body         int
		attempts     int32
		reason       string
	}{
		{"GET, the front end", "GET", -1, 3, "attempts_exhausted"},
		{"GET, the pool's own path", "GET", 0, 3, "attempts_exhausted"},
		{"PUT, the pool's own path", "PUT", 10, 3, "attempts_exhausted"},
		{"PUT of 100 KiB, the fallback transport", "PUT", 100 << 10, 3, "attempts_exhausted"},
		{"POST without key, the fallback transport", "POST", 10, 1, "not_idempotent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got atomic.Int32
				var log lockedBuffer
				dial := pipeRoute(t, DefaultClientTimeout, Route{UpstreamReadTimeout: idle}, &log, silentUpstream(&got))
				conn := dial()
				conn.SetReadDeadline(time.Now().Add(time.Hour)) // virtual: a bound on the failure
				start := time.Now()
				if c.body < 0 { // no body, no Content-Length
					go fmt.Fprintf(conn, "%s /slow HTTP/1.1\r\nHost: proxy.test\r\n\r\n", c.method)
				} else {
					go fmt.Fprintf(conn, "%s /slow HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: %d\r\n\r\n%s",
						c.method, c.body, strings.Repeat("b", c.body))
				}
				resp, p := readProblem(t, bufio.NewReader(conn))
				el := time.Since(start)
				if resp.StatusCode != http.StatusGatewayTimeout || p["reason"] != c.reason {
					t.Errorf("the client got %d %v, want 504 problem+json %s", resp.StatusCode, p, c.reason)
				}
				if n := got.Load(); n != c.attempts {
					t.Errorf("the upstream got %d requests, want %d", n, c.attempts)
				}
				// Each attempt waited between 7/8 of the timeout and the
				// timeout; the backoffs between them are under 100 ms.
				if lo, hi := time.Duration(c.attempts)*idle*7/8, time.Duration(c.attempts)*(idle+100*time.Millisecond); el < lo || el > hi {
					t.Errorf("the answer came after %v, want %v to %v (%d attempts, upstream read timeout %v)", el, lo, hi, c.attempts, idle)
				}
				if d, _ := p["detail"].(string); !strings.Contains(d, "no byte of the answer's header for 10s") {
					t.Errorf("the problem's detail %q, want the header timeout named", d)
				}
			})
		})
	}
}

func TestProxyUpstreamHeaderTimeoutZeroWaits(t *testing.T) {
	// An upstream read timeout of 0 (-1 in Route) is no bound on the
	// header either: an upstream that thinks for an hour before it
	// answers is waited for, and sent the request once.
	synctest.Test(t, func(t *testing.T) {
		var got atomic.Int32
		dial := pipeRoute(t, 0, Route{UpstreamReadTimeout: -1}, io.Discard,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				time.Sleep(time.Hour) // virtual: the bubble's clock
				io.WriteString(w, "thought")
			}))
		conn := dial()
		io.WriteString(conn, "GET /think HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || err != nil || string(body) != "thought" || got.Load() != 1 {
			t.Errorf("got %d %q, %v after %d requests; want 200 thought after one", resp.StatusCode, body, err, got.Load())
		}
	})
}

func TestProxyUpstreamHeaderTimeoutSlowButSteady1xx(t *testing.T) {
	// The timeout is the wait of one read: an upstream that sends a 103
	// Early Hints every 8 s (timeout 10 s) for 40 s, then its answer, is
	// waited for; its answer is relayed.
	synctest.Test(t, func(t *testing.T) {
		dial := pipeRoute(t, 0, Route{UpstreamReadTimeout: 10 * time.Second}, io.Discard,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for range 5 {
					time.Sleep(8 * time.Second) // virtual: the bubble's clock
					w.Header().Set("Link", "</a.css>; rel=preload")
					w.WriteHeader(http.StatusEarlyHints)
				}
				io.WriteString(w, "done")
			}))
		conn := dial()
		io.WriteString(conn, "GET /hints HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		for err == nil && resp.StatusCode == http.StatusEarlyHints {
			resp, err = http.ReadResponse(br, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || err != nil || string(body) != "done" {
			t.Errorf("got %d %q, %v; want 200 done", resp.StatusCode, body, err)
		}
	})
}
