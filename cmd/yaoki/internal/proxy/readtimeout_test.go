package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The faults of an upstream that stalls in the middle of an answer's
// body, on virtual time: the proxy and its upstream are real net/http
// servers over net.Pipe connections (pipeRoute), the proxy's pool dialing
// the upstream over pipes on its own path and on its fallback
// http.Transport's.

// lockedBuffer is a bytes.Buffer that the proxy's log may be written to
// from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stallingUpstream answers with the header, then part of the body
// (flushed), then sends nothing more until the proxy goes away; with
// length, the header says the whole body's length, else the body is
// chunked. released gets the time the handler saw its request's context
// end: the proxy closed the connection.
func stallingUpstream(part string, length int, released chan<- time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if length > 0 {
			w.Header().Set("Content-Length", fmt.Sprint(length))
		}
		io.WriteString(w, part)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
		released <- time.Now()
	})
}

func TestProxyUpstreamStallsMidBody(t *testing.T) {
	// The fault: an upstream that sends the header and part of the body,
	// then nothing (a hung worker, a half-open connection). It held the
	// client, the handler and the upstream's connection for ever; now,
	// after the route's upstream read timeout, the client's connection is
	// closed with the answer cut (never a clean end that looks whole), the
	// upstream's connection is closed, and the proxy's log says why.
	const idle = 10 * time.Second
	for _, c := range []struct {
		name, method string
		length       int // 0: chunked
	}{
		{"GET with Content-Length, the pool's own path", "GET", 1000},
		{"GET chunked, the pool's own path", "GET", 0},
		{"POST without key, the fallback transport", "POST", 1000},
		{"POST chunked, the fallback transport", "POST", 0},
		{"GET with Content-Length, the front end", "GET (no body)", 1000},
		{"GET chunked, the front end", "GET (no body)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				released := make(chan time.Time, 1)
				var log lockedBuffer
				dial := pipeRoute(t, DefaultClientTimeout, Route{UpstreamReadTimeout: idle}, &log,
					stallingUpstream(strings.Repeat("x", 100), c.length, released))
				conn := dial()
				start := time.Now()
				method, front := strings.CutSuffix(c.method, " (no body)")
				if front {
					fmt.Fprintf(conn, "%s /report HTTP/1.1\r\nHost: proxy.test\r\n\r\n", method)
				} else {
					fmt.Fprintf(conn, "%s /report HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 2\r\n\r\nhi", method)
				}
				got, err := io.ReadAll(conn) // until the proxy closes the connection
				if err != nil {
					t.Fatal(err)
				}
				if el := time.Since(start); el < idle*7/8 || el > idle {
					t.Errorf("the client's connection was closed after %v, want 8.75 s to 10 s (upstream read timeout 10 s)", el)
				}
				// A chunked answer is flushed as it comes: the client has
				// the head and the 100 bytes, and no last chunk. One with
				// a Content-Length is not: the proxy's buffer had it all
				// when the connection was closed, and the client gets
				// nothing.
				resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
				if c.length == 0 && err != nil {
					t.Fatalf("the client got %q (%v), want the head and the 100 bytes sent", got, err)
				}
				if err == nil {
					body, err := io.ReadAll(resp.Body)
					if err == nil {
						t.Errorf("the client read %d bytes and a clean end, want the answer visibly cut", len(body))
					}
					if c.length == 0 && string(body) != strings.Repeat("x", 100) {
						t.Errorf("the client got %q before the cut, want the 100 bytes sent", body)
					}
				}
				select {
				case at := <-released:
					if at.Sub(start) > idle {
						t.Errorf("the upstream's connection was closed after %v, want by the timeout", at.Sub(start))
					}
				case <-time.After(time.Hour):
					t.Fatal("the upstream's connection was kept an hour after the cut, want it closed")
				}
				if got := log.String(); !strings.Contains(got, "the upstream sent no byte of the answer's body for 10s") ||
					!strings.Contains(got, method+" http://upstream.test/report") {
					t.Errorf("the proxy's log: %q, want the cut named, with the request", got)
				}
			})
		})
	}
}

func TestProxyUpstreamReadTimeoutNotOnTheClientsTime(t *testing.T) {
	// The timeout is the wait of one read from the upstream, not the
	// answer's whole time: a stream of server-sent events whose
	// heartbeats come more often than it (every 4 s, with a 10 s
	// timeout) is relayed for two minutes, whole; and an answer that the
	// upstream sends at once but a slow client takes over minutes (the
	// proxy's writes wait 15 s each, which --client-timeout 20 s allows)
	// is relayed whole, the waits on the client not counted.
	const idle = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		dial := pipeRoute(t, 20*time.Second, Route{UpstreamReadTimeout: idle}, io.Discard,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/big" {
					w.Header().Set("Content-Length", fmt.Sprint(256<<10))
					io.WriteString(w, strings.Repeat("y", 256<<10))
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 30 {
					fmt.Fprintf(w, "data: %d\n\n", i)
					http.NewResponseController(w).Flush()
					time.Sleep(4 * time.Second) // virtual: the bubble's clock
				}
			}))
		conn := dial()
		start := time.Now()
		io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v; want 200", resp, err)
		}
		events, err := io.ReadAll(resp.Body)
		if err != nil || strings.Count(string(events), "data: ") != 30 {
			t.Errorf("the client got %d events (%v), want the 30 sent, and a clean end", strings.Count(string(events), "data: "), err)
		}
		if el := time.Since(start); el < 2*time.Minute {
			t.Errorf("the stream took %v, want 2 minutes: the test did not pace the upstream", el)
		}

		start = time.Now()
		io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v; want 200", resp, err)
		}
		n := 0
		buf := make([]byte, 32<<10)
		for {
			time.Sleep(15 * time.Second) // virtual: the bubble's clock
			m, err := io.ReadFull(resp.Body, buf)
			n += m
			if err != nil {
				break
			}
		}
		if n != 256<<10 {
			t.Errorf("the slow client got %d bytes, want %d", n, 256<<10)
		}
		if el := time.Since(start); el < 2*time.Minute {
			t.Errorf("the slow client took %v, want over 2 minutes: the test did not pace it", el)
		}
	})
}

func TestProxyUpstreamReadTimeoutZeroWaits(t *testing.T) {
	// An upstream read timeout of 0 (-1 in Route) is no bound: an
	// upstream that pauses for an hour in the middle of its answer is
	// waited for, and the answer relayed whole.
	synctest.Test(t, func(t *testing.T) {
		dial := pipeRoute(t, 0, Route{UpstreamReadTimeout: -1}, io.Discard,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "6")
				io.WriteString(w, "abc")
				http.NewResponseController(w).Flush()
				time.Sleep(time.Hour) // virtual: the bubble's clock
				io.WriteString(w, "def")
			}))
		conn := dial()
		io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != "abcdef" {
			t.Errorf("got %q, %v; want the whole answer after the hour's pause", body, err)
		}
	})
}

func TestProxyUpstreamReadTimeoutAfreshForTheNextAnswer(t *testing.T) {
	// The read deadline an answer's body moved on a pooled connection
	// does not bound the next exchange on it: the wait for the next
	// answer's header gets a whole timeout of its own. The first answer's
	// body moved the deadline last about 2 s in (to 12 s); the client
	// sends the second request on the connection 5 s after the first
	// answer, and the upstream thinks 9 s (timeout 10 s) before answering
	// it, past the old deadline: it is waited for, and sent the request
	// once.
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		dial := pipeRoute(t, 0, Route{UpstreamReadTimeout: 10 * time.Second}, io.Discard,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen[r.URL.Path]++
				mu.Unlock()
				if r.URL.Path == "/think" {
					time.Sleep(9 * time.Second) // virtual: the bubble's clock
					io.WriteString(w, "thought")
					return
				}
				w.Header().Set("Content-Length", fmt.Sprint(64<<10))
				for range 4 {
					io.WriteString(w, strings.Repeat("z", 16<<10))
					http.NewResponseController(w).Flush()
					time.Sleep(time.Second) // virtual: the body comes in parts, read from the connection
				}
			}))
		conn := dial()
		br := bufio.NewReader(conn)
		for i, c := range []struct{ path, want string }{{"/parts", strings.Repeat("z", 64<<10)}, {"/think", "thought"}} {
			if i > 0 {
				time.Sleep(5 * time.Second) // virtual: the bubble's clock
			}
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: proxy.test\r\n\r\n", c.path)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.path, err)
			}
			body, err := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || err != nil || string(body) != c.want {
				t.Errorf("%s: got %d, %d bytes, %v; want 200 and the whole answer", c.path, resp.StatusCode, len(body), err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["/parts"] != 1 || seen["/think"] != 1 {
			t.Errorf("the upstream saw %v, want each request once", seen)
		}
	})
}
