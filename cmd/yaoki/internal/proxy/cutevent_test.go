package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// recorder is an event.Observer that keeps the events of component
// "proxy".
type recorder struct {
	mu  sync.Mutex
	got []event.Event
}

func (r *recorder) Observe(_ context.Context, e event.Event) {
	if e.Component != "proxy" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

func (r *recorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.got...)
}

func TestProxyCutAnswerReported(t *testing.T) {
	// The fault: an answer cut after its header went to the client (the
	// upstream stalled past the read timeout, or its connection was lost
	// mid-body). Only stderr said so: the attempt had succeeded, so the
	// metrics and the logs of the events counted a success. Now the
	// route's observer hears a GaveUp of component "proxy" for it, with
	// the reason (upstream_read_timeout, upstream_cut), the method, the
	// upstream's host and the status relayed; a whole answer, and one
	// whose client went away, are not reported. On the pool's own path
	// (GET) and on its fallback http.Transport (POST without key).
	const idle = 10 * time.Second
	for _, c := range []struct {
		name, method, path, reason string
	}{
		{"stalls, the pool's own path", "GET", "/stall", "upstream_read_timeout"},
		{"stalls, the fallback transport", "POST", "/stall", "upstream_read_timeout"},
		{"connection lost, the pool's own path", "GET", "/lost", "upstream_cut"},
		{"connection lost, the fallback transport", "POST", "/lost", "upstream_cut"},
		{"whole", "GET", "/whole", ""},
		{"client gone", "GET", "/client", ""},
		// Without a body: the front end.
		{"stalls, the front end", "GET", "/stall?front", "upstream_read_timeout"},
		{"connection lost, the front end", "GET", "/lost?front", "upstream_cut"},
		{"whole, the front end", "GET", "/whole?front", ""},
		{"client gone, the front end", "GET", "/client?front", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &recorder{}
				clientGone := make(chan struct{})
				dial := pipeServer(t, &Server{Observer: obs, stderr: io.Discard}, Route{UpstreamReadTimeout: idle},
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						io.Copy(io.Discard, r.Body)
						// More than the proxy's 4 KiB buffer for its client:
						// the client has the head before the cut.
						w.Header().Set("Content-Length", "16384")
						io.WriteString(w, strings.Repeat("x", 8192))
						http.NewResponseController(w).Flush()
						switch r.URL.Path {
						case "/stall":
							<-r.Context().Done()
						case "/lost":
							c, _, _ := http.NewResponseController(w).Hijack()
							c.Close()
						case "/whole":
							io.WriteString(w, strings.Repeat("x", 8192))
						case "/client":
							<-clientGone
							<-r.Context().Done()
						}
					}))
				conn := dial()
				if strings.HasSuffix(c.path, "?front") {
					fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: proxy.test\r\n\r\n", c.method, c.path)
				} else {
					fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 2\r\n\r\nhi", c.method, c.path)
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(c.path, "/client") {
					part := make([]byte, 4096)
					io.ReadFull(resp.Body, part)
					conn.Close()
					close(clientGone)
				} else {
					io.ReadAll(resp.Body)
				}
				synctest.Wait()
				got := obs.events()
				if c.reason == "" {
					if len(got) != 0 {
						t.Errorf("events %+v, want none", got)
					}
					return
				}
				if len(got) != 1 {
					t.Fatalf("events %+v, want one GaveUp", got)
				}
				e := got[0]
				if e.Kind != event.GaveUp || e.Reason != c.reason || e.Method != c.method || e.Host != "upstream.test" || e.Status != 200 || e.Err == nil {
					t.Errorf("event %+v, want GaveUp %s of %s to upstream.test, status 200, with its error", e, c.reason, c.method)
				}
			})
		})
	}
}
