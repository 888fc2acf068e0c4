package layer_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/layer"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestMalformedAttemptCountStillOneLayer: a caller that sends the attempt
// header says that it retries, whatever number it writes there. A value
// this layer cannot read as a positive number ("0" from a client that
// counts from 0, "1.0", "attempt=2", a digit of another script, a value a
// proxy mangled) must not make the layer retry under a retrying caller:
// the layer's own transport retried it three times, so each attempt of
// the caller cost three at the dependency. A blank field says nothing and
// leaves the layer retrying.
func TestMalformedAttemptCountStillOneLayer(t *testing.T) {
	var hits atomic.Int64
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer dep.Close()
	p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: 3})
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	defer tr.CloseIdleConnections()
	var attempt, retrying atomic.Int64
	svc := httptest.NewServer(layer.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempt.Store(int64(layer.Attempt(r)))
		if layer.FromRetryingCaller(r) {
			retrying.Store(1)
		} else {
			retrying.Store(0)
		}
		req, _ := http.NewRequestWithContext(r.Context(), "GET", dep.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			layer.Fail(w, r, err)
			return
		}
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	})))
	defer svc.Close()
	defer http.DefaultClient.CloseIdleConnections()

	for _, c := range []struct {
		lines   []string
		hits    int64 // requests the dependency gets for one request to the service
		attempt int64
	}{
		{nil, 3, 0},
		{[]string{""}, 3, 0},
		{[]string{" , "}, 3, 0},
		{[]string{"2"}, 1, 2},
		{[]string{"0"}, 1, 1},
		{[]string{"00"}, 1, 1},
		{[]string{"garbage"}, 1, 1},
		{[]string{"1.0"}, 1, 1},
		{[]string{"attempt=2; max=3"}, 1, 1},
		{[]string{"-1"}, 1, 1},
		{[]string{"0x2"}, 1, 1},
		{[]string{"\u0663"}, 1, 1}, // Arabic-Indic three
		{[]string{"1 2"}, 1, 1},
		{[]string{"x, y", "0"}, 1, 1},
		{[]string{"x", "4"}, 1, 4},
	} {
		hits.Store(0)
		req, _ := http.NewRequest("GET", svc.URL, nil)
		for _, l := range c.lines {
			req.Header.Add("Attempt-Count", l)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := hits.Load(); got != c.hits {
			t.Errorf("Attempt-Count %q: the dependency got %d requests, want %d", c.lines, got, c.hits)
		}
		if got, r := attempt.Load(), retrying.Load() == 1; got != c.attempt || r != (c.attempt > 0) {
			t.Errorf("Attempt-Count %q: Attempt %d, FromRetryingCaller %v; want %d, %v", c.lines, got, r, c.attempt, c.attempt > 0)
		}
	}
}
