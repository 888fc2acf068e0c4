package policy_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retrytest"
)

// httpretry retries a 409 with Retry-After to a keyed request (the key's
// first request still runs); under a policy document, only when one of
// its retriers names it, as for any status.
func TestKeyedConflictUnderDocument(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusConflict)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		doc      string
		attempts int32
	}{
		{`{"Retry": [{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 2}]}`, 1},
		{`{"Retry": [{"ErrorEquals": ["HTTP.409"], "MaxAttempts": 2}]}`, 3},
		{`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]}`, 3},
	} {
		n.Store(0)
		doc, err := policy.Parse([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := retrytest.NoWait(doc.Policy(policy.Options{}))
		tr := &httpretry.Transport{Base: &http.Transport{}, Policy: p}
		req, _ := http.NewRequest("POST", srv.URL, nil)
		req.Header.Set("Idempotency-Key", `"k"`)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != http.StatusConflict || n.Load() != tc.attempts {
			t.Errorf("%s: %d after %d attempts; want 409 after %d", tc.doc, resp.StatusCode, n.Load(), tc.attempts)
		}
	}
}
