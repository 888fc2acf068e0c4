package idempotency_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestRetryAfterRoundsUpWithoutOverflow: Config.RetryAfter is sent in
// whole seconds, rounded up, for any duration: math.MaxInt64 (a server
// that means "not soon") is 9223372037 s. Rounding up by adding a second
// less 1 ns overflowed there, and the 409 said "Retry-After:
// -9223372035", which no client may read as a wait.
func TestRetryAfterRoundsUpWithoutOverflow(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{math.MaxInt64, "9223372037"},
		{math.MaxInt64 - time.Second + 2, "9223372036"},
		{1500 * time.Millisecond, "2"},
		{time.Second, "1"},
		{-time.Second, "0"},
	} {
		release, started := make(chan struct{}), make(chan struct{})
		m := newMiddleware(t, idempotency.Config{RetryAfter: c.d})
		srv := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
		}))
		done := make(chan struct{})
		go func() { post(srv, "POST", "/x", "k", "body"); close(done) }()
		<-started
		w := post(srv, "POST", "/x", "k", "body")
		close(release)
		<-done
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After") != c.want {
			t.Errorf("RetryAfter %v: %d with Retry-After %q, want 409 with %q", c.d, w.Code, w.Header().Get("Retry-After"), c.want)
		}
	}
}
