package idempotency_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// The faults of this file hit the in-memory store through faultyStore, a
// real MemoryStore behind a switch that makes calls fail as a cut link
// would (the redis and postgres modules inject the same faults against
// real servers), or come from the clock (a jump past the lease) and the
// client (a request cancelled). Each test counts the handler's runs and
// checks every answer. They run under testing/synctest: the waits are on
// the bubble's clock.

var errLinkCut = errors.New("link cut (injected)")

// faultyStore fails the calls it is told to, without reaching the store.
type faultyStore struct {
	*idempotency.MemoryStore
	down          atomic.Bool  // every call fails
	failCompletes atomic.Int64 // so many Completes fail
	hangCompletes atomic.Int64 // so many Completes get no reply: they end with their context
	loseCompletes atomic.Int64 // so many Completes are made, and their replies lost
	hangBegins    atomic.Int64 // so many Begins are made, and their replies never come
	completes     atomic.Int64 // Completes tried
}

func newFaultyStore() *faultyStore {
	s, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	return &faultyStore{MemoryStore: s}
}

func (s *faultyStore) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	if s.down.Load() {
		return idempotency.Record{}, false, errLinkCut
	}
	rec, claimed, err := s.MemoryStore.Begin(ctx, id, fp, token, now, lease)
	if s.hangBegins.Add(-1) >= 0 {
		<-ctx.Done() // the reply never comes
		return idempotency.Record{}, false, ctx.Err()
	}
	return rec, claimed, err
}

func (s *faultyStore) Extend(ctx context.Context, id idempotency.ID, token string, now time.Time, lease time.Duration) error {
	if s.down.Load() {
		return errLinkCut
	}
	return s.MemoryStore.Extend(ctx, id, token, now, lease)
}

func (s *faultyStore) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	s.completes.Add(1)
	if s.hangCompletes.Add(-1) >= 0 {
		<-ctx.Done() // the reply never comes
		return ctx.Err()
	}
	if s.down.Load() || s.failCompletes.Add(-1) >= 0 {
		return errLinkCut
	}
	err := s.MemoryStore.Complete(ctx, id, token, resp, now, ttl)
	if s.loseCompletes.Add(-1) >= 0 {
		return errLinkCut
	}
	return err
}

func (s *faultyStore) Get(ctx context.Context, id idempotency.ID, now time.Time) (idempotency.Record, bool, error) {
	if s.down.Load() {
		return idempotency.Record{}, false, errLinkCut
	}
	return s.MemoryStore.Get(ctx, id, now)
}

func (s *faultyStore) Release(ctx context.Context, id idempotency.ID, token string) error {
	if s.down.Load() {
		return errLinkCut
	}
	return s.MemoryStore.Release(ctx, id, token)
}

// TestFaultCompleteFailsThenSucceeds: the first Completes fail (a link cut
// as the handler returns); the middleware tries again with backoff, holding
// the lease, and the response is stored: a retry replays it, even after the
// lease would have passed.
func TestFaultCompleteFailsThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		store.failCompletes.Store(3)
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: 3 * time.Second})
		first := post(m.Handler(h), "POST", "/x", "k", "{}")
		if first.Code != http.StatusCreated {
			t.Fatalf("first: %d", first.Code)
		}
		time.Sleep(time.Minute) // far past the lease
		again := post(m.Handler(h), "POST", "/x", "k", "{}")
		if h.runs.Load() != 1 || again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() {
			t.Fatalf("retry: %d replayed %q %s, runs %d; want the replay of %s and 1 run",
				again.Code, again.Header().Get("Idempotent-Replayed"), again.Body, h.runs.Load(), first.Body)
		}
		if n := store.completes.Load(); n != 4 {
			t.Fatalf("%d Completes tried, want 4 (3 failed, 1 stored)", n)
		}
	})
}

// TestFaultStoreAwayLongerThanStoreTimeout: the store stays away after the
// handler returned for longer than StoreTimeout (5 s), the lease (3 s) and
// CompleteGrace past it. The client gets its 201 after StoreTimeout;
// Complete is tried on in the background until CompleteGrace past the
// lease, then given up: the record stays in progress, and a retry runs
// the handler again, the documented limit of a store that does not come
// back.
func TestFaultStoreAwayLongerThanStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newFaultyStore()
		h := &charges{}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { store.down.Store(true) }) // as the first handler returns
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease, StoreTimeout: 5 * time.Second})
		start := time.Now()
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusCreated {
			t.Fatalf("first: %d", w.Code)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("the client waited %v for Complete, want StoreTimeout (5 s)", d)
		}
		if err := m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != lease+idempotency.CompleteGrace {
			t.Fatalf("Complete was tried for %v, want until CompleteGrace past the lease (%v)", d, lease+idempotency.CompleteGrace)
		}
		store.down.Store(false)
		again := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "" || h.runs.Load() != 2 {
			t.Fatalf("retry after CompleteGrace: %d replayed %q, runs %d; want a second run", again.Code, again.Header().Get("Idempotent-Replayed"), h.runs.Load())
		}
	})
}

// TestFaultStoreBackAfterLease: the store goes away as the handler
// returns and comes back 10 s later, after the lease (3 s) has passed,
// before any retry claimed the key. The middleware tries Complete on past
// the lease (a store takes a late Complete from the token that still holds
// the key), so the retry gets the replay instead of running the handler
// again.
func TestFaultStoreBackAfterLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newFaultyStore()
		h := &charges{}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { store.down.Store(true) }) // as the handler returns
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease, StoreTimeout: time.Second})
		first := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if first.Code != http.StatusCreated {
			t.Fatalf("first: %d", first.Code)
		}
		time.Sleep(10 * time.Second) // virtual: the store is back after the lease
		store.down.Store(false)
		if err := m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		again := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("retry after the store came back (10 s) past the lease (3 s): %d %s replayed %q, runs %d; want the replay of %s and 1 run",
				again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), h.runs.Load(), first.Body)
		}
	})
}

// TestFaultStoreBackAfterAnotherClaimed: instance A's store goes away as
// its handler returns; after A's lease, instance B (whose link is fine)
// claims the key and runs the request. When A's store comes back, A's late
// Complete is refused (the token fences it off) and overwrites nothing: a
// third request replays B's response. Two runs: A's client got its answer
// without a record, the window a store that stays away past the lease
// leaves.
func TestFaultStoreBackAfterAnotherClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		shared := newFaultyStore()
		a := &faultyStore{MemoryStore: shared.MemoryStore} // A's link to the shared store
		h := &charges{}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { a.down.Store(true) }) // as A's handler returns
		})
		ma := newMiddleware(t, idempotency.Config{Store: a, Lease: lease, StoreTimeout: time.Second})
		mb := newMiddleware(t, idempotency.Config{Store: shared, Lease: lease})
		fromA := post(ma.Handler(cut), "POST", "/x", "k", "{}")
		time.Sleep(lease) // virtual: A's lease has passed
		fromB := post(mb.Handler(h), "POST", "/x", "k", "{}")
		if fromB.Code != http.StatusCreated || fromB.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("B after A's lease: %d replayed %q, want its own run", fromB.Code, fromB.Header().Get("Idempotent-Replayed"))
		}
		completes := a.completes.Load()
		a.down.Store(false)
		if err := ma.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a.completes.Load() != completes+1 {
			t.Fatalf("A tried Complete %d times once its store was back, want 1 (refused: B holds the key)", a.completes.Load()-completes)
		}
		third := post(ma.Handler(h), "POST", "/x", "k", "{}")
		if fromA.Code != http.StatusCreated || third.Header().Get("Idempotent-Replayed") != "true" || third.Body.String() != fromB.Body.String() || h.runs.Load() != 2 {
			t.Fatalf("A %d %s, B %s, third %d %s replayed %q, runs %d; want B's response replayed (A's late Complete refused)",
				fromA.Code, fromA.Body, fromB.Body, third.Code, third.Body, third.Header().Get("Idempotent-Replayed"), h.runs.Load())
		}
	})
}

// TestFaultStoreBackWithinLease: the store goes away as the handler
// returns, for longer than StoreTimeout (1 s) but not as long as the lease
// (6 s). The client gets its 201 after StoreTimeout, as when the store
// does not come back; the middleware goes on storing the response, and
// renewing the lease, while the lease holds, so that the retry after the
// store's return replays it instead of running the handler again.
func TestFaultStoreBackWithinLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		h := &charges{}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() {
				store.down.Store(true) // as the handler returns
				go func() {
					time.Sleep(3 * time.Second) // virtual time: the store is back 3 s after the cut
					store.down.Store(false)
				}()
			})
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: 6 * time.Second, StoreTimeout: time.Second})
		start := time.Now()
		first := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if d := time.Since(start); first.Code != http.StatusCreated || d != time.Second {
			t.Fatalf("first: %d after %v, want 201 after StoreTimeout (1 s)", first.Code, d)
		}
		time.Sleep(time.Minute) // far past the lease
		again := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("retry after the store came back (3 s) within the lease (6 s): %d %s replayed %q, runs %d; want the replay of %s and 1 run",
				again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), h.runs.Load(), first.Body)
		}
	})
}

// TestFaultReleaseFails: the handler answers 503 (not kept: the key is to
// be released) and the store is cut off as it returns, so the Release
// fails. The key is not held for good: the lease is no longer renewed, the
// client's retries get 409 until it passes, then run the handler.
func TestFaultReleaseFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newFaultyStore()
		h := &charges{status: http.StatusServiceUnavailable}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { store.down.Store(true) }) // as the first handler returns
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease})
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("first: %d, want the handler's 503", w.Code)
		}
		store.down.Store(false)
		time.Sleep(lease - time.Millisecond)
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" {
			t.Fatalf("retry within the lease after a failed Release: %d (Retry-After %q), want 409 with Retry-After", w.Code, w.Header().Get("Retry-After"))
		}
		time.Sleep(time.Millisecond)
		h.status = http.StatusCreated
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusCreated || h.runs.Load() != 2 {
			t.Fatalf("retry after the lease: %d, runs %d; want the handler to run again", w.Code, h.runs.Load())
		}
	})
}

// TestFaultLeaseEndsWhileStoreAway: the store cannot be reached while the
// handler runs, for longer than the lease. The handler's context is
// cancelled when the lease ends (not later: another instance may claim the
// key from then on), with a cause that says why.
func TestFaultLeaseEndsWhileStoreAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newFaultyStore()
		var cancelledAfter time.Duration
		var cause error
		var runs atomic.Int64
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) > 1 {
				w.WriteHeader(http.StatusCreated)
				return
			}
			start := time.Now()
			store.down.Store(true)
			select {
			case <-r.Context().Done():
				cancelledAfter, cause = time.Since(start), context.Cause(r.Context())
			case <-time.After(time.Hour):
				w.WriteHeader(http.StatusCreated) // the duplicate may be running by now
			}
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease})
		post(m.Handler(h), "POST", "/x", "k", "{}")
		if cancelledAfter != lease {
			t.Fatalf("handler's context cancelled after %v (0: never), want at the lease's end (%v)", cancelledAfter, lease)
		}
		var lost *idempotency.LeaseLostError
		if !errors.Is(cause, idempotency.ErrLeaseLost) || !errors.As(cause, &lost) || lost.Key != "k" || !errors.Is(cause, errLinkCut) {
			t.Fatalf("cause %v, want a *LeaseLostError for key k matching ErrLeaseLost and the store's error", cause)
		}
		store.down.Store(false)
		if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusCreated || runs.Load() != 2 {
			t.Fatalf("next request: %d, runs %d; want it to run (the first wrote nothing)", w.Code, runs.Load())
		}
	})
}

// TestFaultClockJumpFencesStaleHolder: the clock jumps past the lease while
// the first handler runs; a second request claims the key and completes.
// The first handler's context is cancelled at its next renewal, and when it
// finishes anyway its Complete is refused: the stored response stays the
// second's.
func TestFaultClockJumpFencesStaleHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		var mu sync.Mutex
		var offset time.Duration
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(offset) }
		var runs atomic.Int64
		release := make(chan struct{})
		var firstCause error
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				<-r.Context().Done() // a handler that notices, then writes anyway
				firstCause = context.Cause(r.Context())
				<-release
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, "first")
				return
			}
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "second")
		})
		m := newMiddleware(t, idempotency.Config{Lease: lease, Now: now})
		firstDone := make(chan *httptest.ResponseRecorder)
		go func() { firstDone <- post(m.Handler(h), "POST", "/x", "k", "{}") }()
		synctest.Wait()
		mu.Lock()
		offset = lease // the clock jumps
		mu.Unlock()
		if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Body.String() != "second" || w.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("second request after the jump: %d %s, want its own run", w.Code, w.Body)
		}
		time.Sleep(lease / 3) // the first holder's next renewal
		synctest.Wait()
		if !errors.Is(firstCause, idempotency.ErrLeaseLost) {
			t.Fatalf("the stale holder's handler context: cause %v, want a lost lease", firstCause)
		}
		close(release)
		if w := <-firstDone; w.Body.String() != "first" {
			t.Fatalf("first: %s", w.Body)
		}
		w := post(m.Handler(h), "POST", "/x", "k", "{}")
		if w.Body.String() != "second" || w.Header().Get("Idempotent-Replayed") != "true" || runs.Load() != 2 {
			t.Fatalf("third request: %s replayed %q, runs %d; want the second's response replayed (the stale holder fenced off)", w.Body, w.Header().Get("Idempotent-Replayed"), runs.Load())
		}
	})
}

// TestFaultClientGivesUp: the client cancels; the handler returns on its
// context without writing anything. The key is released, so the client's
// retry runs the handler (it is not answered "200, empty" as if done).
func TestFaultClientGivesUp(t *testing.T) {
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "done")
	})
	m := newMiddleware(t, idempotency.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, "POST", "/x", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", "k")
	cancel()
	m.Handler(h).ServeHTTP(httptest.NewRecorder(), r)
	w := post(m.Handler(h), "POST", "/x", "k", "{}")
	if w.Code != http.StatusCreated || w.Body.String() != "done" || w.Header().Get("Idempotent-Replayed") != "" || runs.Load() != 2 {
		t.Fatalf("retry after a cancelled request: %d %q replayed %q, runs %d; want the handler to run again",
			w.Code, w.Body, w.Header().Get("Idempotent-Replayed"), runs.Load())
	}
}

// TestFaultShutdownWaitsForComplete: the store goes away as the handler
// returns, for longer than StoreTimeout (1 s); the client has its 201 and
// the server shuts down (a deploy). Wait holds the shutdown until the
// Complete tried on in the background gets through, the store back 3 s
// later within the lease (6 s), so that the record is there for the retry
// instead of in progress, with the handler run again once the lease has
// passed. A Wait whose context ends first says how many responses are not
// stored yet.
func TestFaultShutdownWaitsForComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		h := &charges{}
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			store.down.Store(true) // as the handler returns
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: 6 * time.Second, StoreTimeout: time.Second})
		if err := m.Wait(t.Context()); err != nil {
			t.Fatalf("Wait with nothing in the background: %v", err)
		}
		if first := post(m.Handler(cut), "POST", "/x", "k1", "{}"); first.Code != http.StatusCreated {
			t.Fatalf("first: %d", first.Code)
		}

		// The context ends before the store is back.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := m.Wait(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 not stored yet") {
			t.Fatalf("Wait cut short: %v; want context.DeadlineExceeded saying 1 not stored yet", err)
		}

		go func() {
			time.Sleep(time.Second) // virtual: the store is back 3 s after the cut
			store.down.Store(false)
		}()
		start := time.Now()
		if err := m.Wait(t.Context()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("Wait returned after %v, before the store was back", d)
		}
		rec, ok, err := store.Get(context.Background(), idempotency.ID{Key: "k1"}, time.Now())
		if err != nil || !ok || rec.State != idempotency.Completed {
			t.Fatalf("the record when Wait returned: %v %v %+v; want it completed", ok, err, rec.State)
		}
	})
}

// TestFaultRetryBeforeLateComplete: the store goes away as the handler
// returns and comes back after the lease (3 s); the client's retry reaches
// the same instance at that moment, before the next try of the Complete
// that the middleware tries on in the background. The retry must not claim
// the key (its lease has passed) and run the handler beside a response the
// instance is about to store: it gets 409 while the instance tries, and
// the replay once the record is stored. A retry with another request under
// the key gets 422.
func TestFaultRetryBeforeLateComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newFaultyStore()
		h := &charges{}
		var once sync.Once
		cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			once.Do(func() { store.down.Store(true) }) // as the handler returns
		})
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: lease, StoreTimeout: time.Second})
		first := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if first.Code != http.StatusCreated {
			t.Fatalf("first: %d", first.Code)
		}
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict || h.runs.Load() != 1 {
			t.Fatalf("retry while the store is away and the instance tries Complete: %d, runs %d; want 409", w.Code, h.runs.Load())
		}
		time.Sleep(10 * time.Second) // virtual: past the lease
		store.down.Store(false)
		if w := post(m.Handler(cut), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || h.runs.Load() != 1 {
			t.Fatalf("retry as the store is back past the lease, before the next try of Complete: %d %s, runs %d; want 409 with Retry-After, 1 run", w.Code, w.Body, h.runs.Load())
		}
		if w := post(m.Handler(cut), "POST", "/x", "k", `{"other":1}`); w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("another request under the key meanwhile: %d, want 422", w.Code)
		}
		if err := m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		again := post(m.Handler(cut), "POST", "/x", "k", "{}")
		if again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("retry once the late Complete got through: %d %s replayed %q, runs %d; want the replay of %s, 1 run",
				again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), h.runs.Load(), first.Body)
		}
	})
}

// TestFaultCompleteReplyNeverComes: the first two Completes get no reply
// (their connection dead without a reset): the client gets its 201 after
// StoreTimeout (1 s), and each try in the background is bounded by
// StoreTimeout too, so that the next one, on another connection, stores
// the response well within the lease (6 s) instead of the first waiting
// until CompleteGrace past it.
func TestFaultCompleteReplyNeverComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		store.hangCompletes.Store(2)
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: 6 * time.Second, StoreTimeout: time.Second})
		start := time.Now()
		first := post(m.Handler(h), "POST", "/x", "k", "{}")
		if d := time.Since(start); first.Code != http.StatusCreated || d != time.Second {
			t.Fatalf("first: %d after %v, want 201 after StoreTimeout (1 s)", first.Code, d)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		err := m.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the background Complete, its first try without a reply: %v; want it stored by the next try", err)
		}
		// The wait between tries: 10 ms at most after the first failure.
		if d := time.Since(start); d < 2*time.Second || d > 2*time.Second+10*time.Millisecond || store.completes.Load() != 3 {
			t.Fatalf("stored after %v and %d tries, want after 2 s (two tries of StoreTimeout without a reply) at the third", d, store.completes.Load())
		}
		again := post(m.Handler(h), "POST", "/x", "k", "{}")
		if again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("retry: %d %s replayed %q, runs %d; want the replay, 1 run", again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), h.runs.Load())
		}
	})
}

// TestFaultRetryWhileCompleteRepliesLost: the record is completed, but the
// replies of Complete keep being lost (as when Redis's WAIT for replicas
// fails after the write): the client has its 201 after StoreTimeout and
// the instance tries on in the background. A retry that reaches the
// instance meanwhile gets the replay of the completed record, not a 409
// for as long as the instance tries.
func TestFaultRetryWhileCompleteRepliesLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		store.loseCompletes.Store(1 << 30)
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Store: store, Lease: 3 * time.Second, StoreTimeout: time.Second})
		first := post(m.Handler(h), "POST", "/x", "k", "{}")
		if first.Code != http.StatusCreated {
			t.Fatalf("first: %d", first.Code)
		}
		again := post(m.Handler(h), "POST", "/x", "k", "{}")
		if again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() || h.runs.Load() != 1 {
			t.Fatalf("retry while the instance tries on: %d %s replayed %q, runs %d; want the replay of the completed record, 1 run",
				again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), h.runs.Load())
		}
		store.loseCompletes.Store(0)
		if err := m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// renewAfterComplete holds the first renewal until the record it renews is
// completed, as when a renewal sent just before the handler returned
// reaches the store after Complete: the store refuses it (the record is no
// longer in progress).
type renewAfterComplete struct {
	*idempotency.MemoryStore
	completed chan struct{} // closed by the first Complete
	logged    chan struct{} // closed by the log's first line after it
	once      sync.Once
}

func (s *renewAfterComplete) Extend(ctx context.Context, id idempotency.ID, token string, now time.Time, lease time.Duration) error {
	<-s.completed
	return s.MemoryStore.Extend(ctx, id, token, now, lease)
}

func (s *renewAfterComplete) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	err := s.MemoryStore.Complete(ctx, id, token, resp, now, ttl)
	s.once.Do(func() { close(s.completed) })
	select { // the refused renewal's outcome, if it logs one, before Complete returns
	case <-s.logged:
	case <-time.After(time.Second):
	}
	return err
}

type signalWriter struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
	b    strings.Builder
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

// TestFaultRenewalAfterComplete: a renewal reaches the store after the
// handler's Complete, which the store refuses since the record is
// completed. That is not a lost lease: nothing is logged, and the
// handler's context is not cancelled with a *LeaseLostError.
func TestFaultRenewalAfterComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		mem, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
		logs := &signalWriter{ch: make(chan struct{})}
		store := &renewAfterComplete{MemoryStore: mem, completed: make(chan struct{}), logged: logs.ch}
		var ctx context.Context
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx = r.Context()
			time.Sleep(lease / 2) // past the first renewal, sent at lease/3
			w.WriteHeader(http.StatusCreated)
		})
		m := newMiddleware(t, idempotency.Config{Store: storeOnly{store}, Lease: lease, ErrorLog: log.New(logs, "", 0)})
		if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusCreated {
			t.Fatalf("first: %d", w.Code)
		}
		synctest.Wait()
		logs.mu.Lock()
		got := logs.b.String()
		logs.mu.Unlock()
		if got != "" || errors.Is(context.Cause(ctx), idempotency.ErrLeaseLost) {
			t.Fatalf("a renewal refused after the record was completed: logged %q, handler's context cause %v; want nothing logged, no lost lease", got, context.Cause(ctx))
		}
	})
}

// storeOnly hides the concrete type of a store, so that the middleware
// treats it as a store that may fail (with its timeouts and retries).
type storeOnly struct{ idempotency.Store }

// TestFaultBeginReplyNeverComes: Begin claims the key but its reply never
// comes (its connection dead without a reset). The request gets 503 after
// StoreTimeout (2 s), with nothing executed and its claim released, rather
// than hanging until its client gives up while the claim makes every retry
// 409; the retry runs the handler.
func TestFaultBeginReplyNeverComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFaultyStore()
		store.hangBegins.Store(1)
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Store: store, StoreTimeout: 2 * time.Second})
		start := time.Now()
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- post(m.Handler(h), "POST", "/x", "k", "{}") }()
		var first *httptest.ResponseRecorder
		select {
		case first = <-done:
		case <-time.After(time.Minute):
			t.Fatal("the request still waits for Begin's reply after a minute")
		}
		if d := time.Since(start); first.Code != http.StatusServiceUnavailable || d != 2*time.Second || problem(t, first).Reason != idempotency.ReasonStoreUnavailable {
			t.Fatalf("first: %d after %v, want 503 store_unavailable after StoreTimeout (2 s)", first.Code, d)
		}
		again := post(m.Handler(h), "POST", "/x", "k", "{}")
		if again.Code != http.StatusCreated || h.runs.Load() != 1 {
			t.Fatalf("retry: %d, runs %d; want 201 from one run (the claim released)", again.Code, h.runs.Load())
		}
	})
}
