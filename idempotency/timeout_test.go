package idempotency_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestTimeoutHandlerOrder: http.TimeoutHandler answers 503 once its
// timeout passes and cancels the request's context, while the handler goes
// on (it has passed the point where it could stop: the payment is sent).
// Around the middleware, it leaves the middleware holding the key until
// the handler returns and recording its answer: the client's retry during
// the run gets 409, the next one the replay, and the handler runs once.
// Inside the middleware, its 503 releases the key while the handler goes
// on, and every retry runs the handler again beside it: the order
// docs/idempotency.md tells to avoid.
func TestTimeoutHandlerOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wrap     func(m *idempotency.Middleware, h http.Handler) http.Handler
		retry    int   // the retry's status while the first handler runs
		runs     int64 // the handler's runs in the end
		replayed bool  // a later retry gets the first handler's answer replayed
	}{
		{"outside", func(m *idempotency.Middleware, h http.Handler) http.Handler {
			return http.TimeoutHandler(m.Handler(h), time.Second, "timed out")
		}, http.StatusConflict, 1, true},
		{"inside", func(m *idempotency.Middleware, h http.Handler) http.Handler {
			return m.Handler(http.TimeoutHandler(h, time.Second, "timed out"))
		}, http.StatusServiceUnavailable, 3, false}, // each retry that times out releases the key again
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var runs atomic.Int64
				proceed := make(chan struct{})
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					runs.Add(1)
					<-proceed // the charge is on its way and cannot be called back
					w.WriteHeader(http.StatusCreated)
					io.WriteString(w, "charged")
				})
				srv := tc.wrap(newMiddleware(t, idempotency.Config{}), h)
				first := make(chan int, 1)
				go func() { first <- post(srv, "POST", "/pay", "k", "{}").Code }()
				time.Sleep(2 * time.Second) // virtual: past the timeout
				if code := <-first; code != http.StatusServiceUnavailable {
					t.Fatalf("first: %d, want TimeoutHandler's 503", code)
				}
				// The retry while the first handler still runs; inside, it
				// runs the handler too, which waits on proceed as well.
				retry := make(chan int, 1)
				go func() { retry <- post(srv, "POST", "/pay", "k", "{}").Code }()
				time.Sleep(2 * time.Second) // virtual: the retry's own timeout passes
				if code := <-retry; code != tc.retry {
					t.Errorf("retry while the first handler runs: %d, want %d", code, tc.retry)
				}
				close(proceed)
				synctest.Wait()
				last := post(srv, "POST", "/pay", "k", "{}")
				if got := last.Header().Get("Idempotent-Replayed") == "true" && last.Code == http.StatusCreated && last.Body.String() == "charged"; got != tc.replayed {
					t.Errorf("a later retry: %d %q replayed %q; want the replay: %v", last.Code, last.Body, last.Header().Get("Idempotent-Replayed"), tc.replayed)
				}
				if n := runs.Load(); n != tc.runs {
					t.Errorf("handler runs %d, want %d", n, tc.runs)
				}
			})
		})
	}
}
