package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// The faults of this file are slow replies: the store did its work at
// once, but its answer reached the middleware late (a store under load, a
// pool with no free connection, a lock wait). A store counts a lease from
// the now that Begin was sent with; the wait for the reply has used part of
// it, or all of it, before the handler starts.

// slowBegin delays the reply of the first Begin by delay, on the bubble's
// clock; the record is written at once.
type slowBegin struct {
	*idempotency.MemoryStore
	delay time.Duration
	n     atomic.Int64
}

func (s *slowBegin) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	rec, claimed, err := s.MemoryStore.Begin(ctx, id, fp, token, now, lease)
	if s.n.Add(1) == 1 {
		time.Sleep(s.delay)
	}
	return rec, claimed, err
}

// TestFaultSlowBeginReply: Begin's reply comes after most of the lease
// (0.9 of it), or after all of it (1.5), and the handler then runs past
// what is left. A duplicate that arrives after the lease counted from
// Begin's now must still get 409: the middleware renews at once a lease
// that is due for renewal when the handler starts, instead of a third of
// a lease later (by when the store had let the key go).
func TestFaultSlowBeginReply(t *testing.T) {
	const lease = 3 * time.Second
	for _, delay := range []time.Duration{lease * 9 / 10, lease * 3 / 2} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
				store := &slowBegin{MemoryStore: ms, delay: delay}
				m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease})
				start := time.Now()
				var runs atomic.Int64
				var dup *httptest.ResponseRecorder
				var h http.Handler
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if runs.Add(1) == 1 {
						time.Sleep(time.Until(start.Add(lease + lease/10))) // past the lease from Begin's now
						dup = post(m.Handler(h), "POST", "/x", "k", "{}")
						if err := context.Cause(r.Context()); err != nil {
							t.Errorf("first handler's context ended: %v", err)
						}
					}
					w.WriteHeader(http.StatusCreated)
				})
				first := post(m.Handler(h), "POST", "/x", "k", "{}")
				if first.Code != http.StatusCreated || dup == nil || dup.Code != http.StatusConflict || runs.Load() != 1 {
					code := 0
					if dup != nil {
						code = dup.Code
					}
					t.Fatalf("Begin's reply after %v (lease %v): first %d, a duplicate during its handler %d, runs %d; want 201, 409, 1 run",
						delay, lease, first.Code, code, runs.Load())
				}
			})
		})
	}
}

// TestFaultBeginReplyAfterAnotherClaimed: Begin's reply comes after the
// lease, by when another request has claimed the key (the store saw the
// first claim expire) and completed it. The first request must not run
// its handler on a claim it lost: it is refused with 503 (nothing
// executed), and its client's retry gets the other request's response.
func TestFaultBeginReplyAfterAnotherClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		ms, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
		store := &slowBegin{MemoryStore: ms, delay: 2 * lease}
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease})
		firstDone := make(chan *httptest.ResponseRecorder)
		go func() { firstDone <- post(m.Handler(h), "POST", "/x", "k", "{}") }()
		time.Sleep(lease + time.Second)
		other := post(m.Handler(h), "POST", "/x", "k", "{}")
		if other.Code != http.StatusCreated || h.runs.Load() != 1 {
			t.Fatalf("the other request after the first's lease: %d, runs %d; want its own run", other.Code, h.runs.Load())
		}
		first := <-firstDone
		if first.Code != http.StatusServiceUnavailable || h.runs.Load() != 1 {
			t.Fatalf("the first request, whose Begin's reply came after another claimed the key: %d %s, runs %d; want 503 and no run",
				first.Code, first.Body, h.runs.Load())
		}
		if p := problem(t, first); p.Reason != idempotency.ReasonStoreUnavailable {
			t.Fatalf("reason %q, want %q", p.Reason, idempotency.ReasonStoreUnavailable)
		}
		retry := post(m.Handler(h), "POST", "/x", "k", "{}")
		if retry.Header().Get("Idempotent-Replayed") != "true" || retry.Body.String() != other.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("the first client's retry: %d %s replayed %q, runs %d; want the other's response replayed",
				retry.Code, retry.Body, retry.Header().Get("Idempotent-Replayed"), h.runs.Load())
		}
	})
}
