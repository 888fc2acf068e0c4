package httpretry_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestLongHintGivesUp: a server on loopback answers the first request
// with a well-formed hint longer than Policy.MaxRetryAfter, however long
// (over a year, past what a time.Duration holds, past what an int64
// holds), then 200. The transport does not retry: it returns the server's
// answer at once, as it does for a hint of two minutes, and reports the
// give-up as hint_too_long. A malformed hint is no hint: the request is
// retried after the backoff.
func TestLongHintGivesUp(t *testing.T) {
	cases := []struct {
		name, header, value string
		status              int
		retried             bool
	}{
		{"Retry-After two minutes", "Retry-After", "120", 503, false},
		{"Retry-After a year", "Retry-After", "31536000", 503, false},
		{"Retry-After a year and a second", "Retry-After", "31536001", 503, false},
		{"Retry-After 40000000 s", "Retry-After", "40000000", 429, false},
		{"Retry-After 10^9 s", "Retry-After", "1000000000", 503, false},
		{"Retry-After past time.Duration", "Retry-After", "9223372037", 503, false},
		{"Retry-After past int64", "Retry-After", "99999999999999999999999999", 503, false},
		{"Retry-After leading zeros, then huge", "Retry-After", "000099999999999999999999", 503, false},
		{"Retry-After in year 9999", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", 503, false},
		{"Retry-After RFC 850 in 2070", "Retry-After", "Thursday, 01-Jan-70 00:00:00 GMT", 503, false},
		{"RateLimit t huge", "RateLimit", `"default";r=0;t=999999999999999`, 429, false},
		{"RateLimit draft 07 reset huge", "RateLimit", `limit=1, remaining=0, reset=999999999999999`, 429, false},
		{"RateLimit-Reset 999999999 s", "RateLimit-Reset", "999999999", 503, false},
		{"X-RateLimit-Reset Unix ms far ahead", "X-RateLimit-Reset", "9999999999999999", 429, false},
		{"X-RateLimit-Reset past int64", "X-RateLimit-Reset", "99999999999999999999999.5", 429, false},
		// Malformed: ignored, the backoff applies.
		{"Retry-After fraction", "Retry-After", "40000000.5", 503, true},
		{"Retry-After signed", "Retry-After", "+40000000", 503, true},
		{"Retry-After exponent", "Retry-After", "4e7", 503, true},
		{"Retry-After negative", "Retry-After", "-99999999999999999999", 503, true},
		{"RateLimit t over 15 digits", "RateLimit", `"default";r=0;t=9999999999999999`, 429, true},
		{"X-RateLimit-Reset negative", "X-RateLimit-Reset", "-9999999999999999", 429, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set(c.header, c.value)
					w.WriteHeader(c.status)
					w.Write([]byte("come back later"))
				}
			}))
			defer srv.Close()
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			rec := &retrytest.Recorder{}
			tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{MaxAttempts: 3}), Observer: rec}
			resp, body, err := do(t, tr, "GET", srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.retried {
				if resp.StatusCode != 200 || n.Load() != 2 {
					t.Fatalf("%s: %s: got %d after %d requests; want 200 after 2 (a malformed hint is ignored)", c.header, c.value, resp.StatusCode, n.Load())
				}
				return
			}
			if resp.StatusCode != c.status || body != "come back later" || resp.Header.Get(c.header) != c.value || n.Load() != 1 {
				t.Fatalf("%s: %s: got %d %q after %d requests; want the server's %d with its body and header, after 1",
					c.header, c.value, resp.StatusCode, body, n.Load(), c.status)
			}
			g := rec.Events(event.GaveUp)
			if len(g) != 1 || g[0].Reason != "hint_too_long" || g[0].Status != c.status {
				t.Fatalf("give-up events %+v; want one, hint_too_long, status %d", g, c.status)
			}
			if d, ok := httpretry.Hint(resp, now); !ok || d <= retry.DefaultMaxRetryAfter {
				t.Errorf("Hint of the answer: %v, %v; want more than MaxRetryAfter (%v)", d, ok, retry.DefaultMaxRetryAfter)
			}
		})
	}
}
