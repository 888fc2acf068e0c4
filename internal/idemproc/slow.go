package idemproc

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// beginSent calls sent before each Begin it passes on to its store.
type beginSent struct {
	idempotency.Store
	sent func()
}

func (s *beginSent) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	s.sent()
	return s.Store.Begin(ctx, id, fp, token, now, lease)
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// SlowBegin: the server holds writes (Faults.Stall) while instance A's
// Begin is on its way, and the clocks of A and of instance B move past
// the lease before the server lets it through: Begin's reply comes after
// the lease it asked for, which the store counts from the now Begin was
// sent with. A renews the lease before its handler runs; a duplicate sent
// to B from inside A's handler gets 409, and a later retry replays A's
// response: one run.
func SlowBegin(t *testing.T, f Faults) {
	if f.Stall == nil {
		t.Skip("idemproc: the store's suite gives no Stall")
	}
	var runs atomic.Int64
	key := "slow-begin-" + rand.Text()
	var armed atomic.Bool
	sent := make(chan struct{}, 1)
	dup := make(chan answer, 1)
	var b *instance
	store := &beginSent{Store: f.Open(t, f.Target), sent: func() {
		if armed.Load() {
			sent <- struct{}{}
		}
	}}
	a := newInstance(t, idempotency.Config{Store: store, Lease: FaultLease}, charge(&runs, func(*http.Request) {
		if armed.Load() {
			dup <- b.post(key) // A's handler runs on: a duplicate arrives
		}
	}))
	b = newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: FaultLease}, charge(&runs, nil))
	for _, in := range []*instance{a, b} { // connections and scripts ready
		if w := in.post("warm-" + rand.Text()); w.status != http.StatusCreated {
			t.Fatalf("warm-up: %v", w)
		}
	}
	runs.Store(0)

	held, resume := f.Stall(t)
	armed.Store(true)
	aDone := make(chan answer, 1)
	go func() { aDone <- a.post(key) }()
	<-sent
	waitFor(t, "A's Begin held by the server", held)
	late := FaultLease + time.Second
	a.offset.Store(int64(late))
	b.offset.Store(int64(late))
	resume()

	first := <-aDone
	var fromB answer
	select {
	case fromB = <-dup:
	default:
	}
	if first.status != http.StatusCreated || fromB.status != http.StatusConflict || runs.Load() != 1 {
		t.Fatalf("Begin held by the server while the clocks moved %v (lease %v): A got %v, a duplicate to B during A's handler %v, runs %d; want 201, 409, 1 run",
			late, FaultLease, first, fromB, runs.Load())
	}
	again := b.post(key)
	if again.replayed != "true" || again.body != first.body || runs.Load() != 1 {
		t.Fatalf("retry: %v, runs %d; want the replay of %s", again, runs.Load(), first.body)
	}
	t.Logf("Begin's reply after the lease: A renewed it before its handler ran; the duplicate got 409, the retry A's replay; 1 run")
}
