package proxy

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestProxyClientGoneDuringRetryWait(t *testing.T) {
	// The fault: the client goes away while the proxy waits to retry (a
	// 503 with Retry-After: 5, or the backoff after a 500). The wait ends
	// at once and no retry follows: the upstream, which asked for room,
	// gets no attempt for a client that is gone.
	for _, ra := range []string{"5", ""} {
		synctest.Test(t, func(t *testing.T) {
			var got atomic.Int32
			dial := pipeRoute(t, 0, Route{}, io.Discard, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				if ra != "" {
					w.Header().Set("Retry-After", ra)
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusInternalServerError)
			}))
			conn := dial()
			io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
			synctest.Wait() // the first answer came; the proxy waits to retry
			if n := got.Load(); n != 1 {
				t.Fatalf("Retry-After %q: the upstream got %d requests before the client left, want 1", ra, n)
			}
			conn.Close()
			time.Sleep(time.Minute) // virtual: far past any wait
			if n := got.Load(); n != 1 {
				t.Errorf("Retry-After %q: the upstream got %d requests, want 1: no retry for a client gone during the wait", ra, n)
			}
		})
	}
}
