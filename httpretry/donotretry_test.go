package httpretry_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// TestDoNotRetryRepeated: a Do-Not-Retry that two layers each added
// reaches the client in two field lines, or merged into one line of
// comma-separated values by a proxy that merges repeated fields (Node.js,
// Envoy): any "true" in it is final. Only the first line was read, whole,
// so "true, true" and an empty first line were retried, multiplying
// what the layers behind had tried.
func TestDoNotRetryRepeated(t *testing.T) {
	for _, lines := range [][]string{{"true, true"}, {"", "true"}, {"false", "true"}, {"x, TRUE"}} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header()["Do-Not-Retry"] = lines
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: fast(retry.Policy{})}
		resp, _, err := do(t, tr, "GET", srv.URL, nil)
		srv.Client().CloseIdleConnections()
		srv.Close()
		if err != nil || resp.StatusCode != 503 || n.Load() != 1 {
			t.Errorf("Do-Not-Retry %q: %d requests, got %v, %v; want the 503 after one", lines, n.Load(), resp, err)
		}
	}
}
