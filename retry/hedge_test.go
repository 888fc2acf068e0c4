package retry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

var _ retry.Hedger = (*hedge.Hedger)(nil)

// events records the kinds of the events it observes, in order.
type events struct {
	mu    sync.Mutex
	kinds []event.Kind
	all   []event.Event
}

func (r *events) Observe(_ context.Context, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds = append(r.kinds, e.Kind)
	r.all = append(r.all, e)
}

func (r *events) count(k event.Kind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.kinds {
		if x == k {
			n++
		}
	}
	return n
}

func (r *events) of(k event.Kind) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, e := range r.all {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// script is an attempt function whose n-th attempt (from 1) takes
// lat[n-1] and then returns errs[n-1] (nil past the end), or the
// context's error if it is cancelled first. It records which attempts
// were cancelled and the values discarded.
type script struct {
	lat       []time.Duration
	errs      []error
	n         atomic.Int32
	mu        sync.Mutex
	cancelled []int
	discarded []int
}

func (s *script) call(ctx context.Context) (int, error) {
	n := int(s.n.Add(1))
	select {
	case <-time.After(s.lat[min(n, len(s.lat))-1]):
	case <-ctx.Done():
		s.mu.Lock()
		s.cancelled = append(s.cancelled, n)
		s.mu.Unlock()
		return n, ctx.Err()
	}
	if n <= len(s.errs) && s.errs[n-1] != nil {
		return n, s.errs[n-1]
	}
	return n, nil
}

func (s *script) discard(v int) {
	s.mu.Lock()
	s.discarded = append(s.discarded, v)
	s.mu.Unlock()
}

// answers runs HedgeValue with p (in a synctest bubble) and stops the test
// unless attempt want's answer comes back, after d of virtual time.
func (s *script) answers(t *testing.T, p retry.Policy, want int, d time.Duration) {
	t.Helper()
	start := time.Now()
	v, err := retry.HedgeValue(context.Background(), p, s.call, s.discard)
	if err != nil || v != want {
		t.Fatalf("HedgeValue = %v, %v; want attempt %d's answer", v, err, want)
	}
	if took := time.Since(start); took != d {
		t.Errorf("answered after %v, want %v", took, d)
	}
}

func fixedHedger(t testing.TB, delay time.Duration, maxHedges int) *hedge.Hedger {
	t.Helper()
	h, err := hedge.New(hedge.Config{Delay: delay, MaxHedges: maxHedges, Budget: hedge.Off, Brownout: hedge.Off})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A first attempt slower than the delay is hedged; the hedge's answer
// wins, the first attempt is cancelled and its value discarded, and the
// events say so.
func TestHedgeWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		s := &script{lat: []time.Duration{time.Second, 10 * time.Millisecond}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
		// The hedge is sent at 50ms and answers 10ms later.
		s.answers(t, p, 2, 60*time.Millisecond)
		synctest.Wait() // the cancelled first attempt returns
		if !slices.Equal(s.cancelled, []int{1}) || !slices.Equal(s.discarded, []int{1}) {
			t.Errorf("cancelled %v, discarded %v; want the first attempt both", s.cancelled, s.discarded)
		}
		if obs.count(event.Hedge) != 1 || obs.count(event.HedgeWon) != 1 || obs.count(event.GaveUp) != 0 {
			t.Errorf("events %v, want one hedge, one hedge won, no give-up", obs.kinds)
		}
		if w := obs.of(event.Hedge)[0]; w.Attempt != 2 || w.Wait != 50*time.Millisecond {
			t.Errorf("hedge event %+v, want attempt 2 after 50ms", w)
		}
		ends := obs.of(event.AttemptEnd)
		if len(ends) != 2 || ends[0].Outcome != event.Success || ends[1].Outcome != event.Cancelled {
			t.Errorf("attempt ends %+v, want the hedge's success then the first attempt cancelled", ends)
		}
	})
}

// A first attempt that answers before the delay is not hedged.
func TestHedgeNotNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		s := &script{lat: []time.Duration{20 * time.Millisecond}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
		s.answers(t, p, 1, 20*time.Millisecond)
		time.Sleep(time.Second) // virtual time: the synctest bubble advances its clock
		if s.n.Load() != 1 || obs.count(event.Hedge) != 0 || len(s.discarded) != 0 {
			t.Errorf("%d attempts, %d hedges, discarded %v; want 1 attempt, none", s.n.Load(), obs.count(event.Hedge), s.discarded)
		}
	})
}

// Hedges are sent one delay apart, up to MaxHedges; the first to answer
// wins, wherever it is in the order.
func TestHedgeMaxHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{time.Second, time.Second, 30 * time.Millisecond, time.Millisecond}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
		// Hedges are sent at 50ms and 100ms; the second answers 30ms later.
		s.answers(t, p, 3, 130*time.Millisecond)
		synctest.Wait()
		if s.n.Load() != 3 {
			t.Errorf("%d attempts, want 3 (2 hedges at most)", s.n.Load())
		}
		slices.Sort(s.discarded)
		if !slices.Equal(s.discarded, []int{1, 2}) {
			t.Errorf("discarded %v, want the two losers", s.discarded)
		}
	})
}

// An attempt that fails while a hedge is in flight does not end the call:
// the hedge's answer does. When every attempt of a round fails, the loop
// retries after its backoff, and the failed value of the round is
// discarded once the retry is sent.
func TestHedgeFailuresAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		s := &script{lat: []time.Duration{80 * time.Millisecond, 10 * time.Millisecond}, errs: []error{boom}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		if v, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil || v != 2 {
			t.Fatalf("first attempt fails after the hedge is sent: HedgeValue = %v, %v; want the hedge's answer", v, err)
		}

		s = &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}, errs: []error{boom, boom}}
		obs := &events{}
		p = retry.Policy{MaxAttempts: 3, Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Observer: obs}}
		v, err := retry.HedgeValue(context.Background(), p, s.call, s.discard)
		if err != nil || v != 3 {
			t.Fatalf("both attempts of the first round fail: HedgeValue = %v, %v; want the retry's answer", v, err)
		}
		if obs.count(event.RetryScheduled) != 1 || obs.count(event.Hedge) != 1 {
			t.Errorf("events %v, want one hedge and one retry", obs.kinds)
		}
		var ended []int
		for _, e := range obs.of(event.AttemptEnd) {
			ended = append(ended, e.Attempt)
		}
		if !slices.Equal(ended, []int{1, 2, 3}) {
			t.Errorf("attempts ended %v, want 1, 2 (the round's two) and 3 (the retry)", ended)
		}
		synctest.Wait()
		slices.Sort(s.discarded)
		if !slices.Equal(s.discarded, []int{1, 2}) {
			t.Errorf("discarded %v, want both failed attempts of the first round", s.discarded)
		}

		// The attempt limit counts hedges: with 2 attempts, the round's
		// two failures end the call, with the last value.
		s = &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond}, errs: []error{boom, boom}}
		p = retry.Policy{MaxAttempts: 2, Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
		v, err = retry.HedgeValue(context.Background(), p, s.call, s.discard)
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ReasonExhausted || re.Attempts != 2 || v != 2 || !errors.Is(err, boom) {
			t.Fatalf("HedgeValue = %v, %v; want attempts exhausted after 2, with the value of the hedge, which failed last", v, err)
		}
		if !slices.Equal(s.discarded, []int{1}) {
			t.Errorf("discarded %v, want the first attempt's value (it failed first)", s.discarded)
		}
	})
}

// A final error ends the call at once, cancelling the hedges in flight.
func TestHedgeFinalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := retry.Permanent(errors.New("bad request"))
		s := &script{lat: []time.Duration{70 * time.Millisecond, time.Second}, errs: []error{bad}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		start := time.Now()
		_, err := retry.HedgeValue(context.Background(), p, s.call, s.discard)
		if !errors.Is(err, retry.ErrPermanent) || time.Since(start) != 70*time.Millisecond {
			t.Fatalf("HedgeValue = %v after %v, want the permanent error after 70ms", err, time.Since(start))
		}
		synctest.Wait()
		if !slices.Equal(s.cancelled, []int{2}) {
			t.Errorf("cancelled %v, want the hedge", s.cancelled)
		}
	})
}

// Hedges go through the guards: an open breaker refuses a hedge without
// ending the call, and the hedge budget refuses past its share.
func TestHedgeGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		p := retry.Policy{Env: &retry.Env{Breaker: fakeOpenForRetries{}, Hedger: fixedHedger(t, 50*time.Millisecond, 1), Observer: obs}}
		s := &script{lat: []time.Duration{200 * time.Millisecond}}
		if v, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil || v != 1 {
			t.Fatalf("HedgeValue = %v, %v; want the first attempt's answer", v, err)
		}
		refused := obs.of(event.HedgeRefused)
		if len(refused) != 1 || refused[0].Reason != "breaker_open" || s.n.Load() != 1 {
			t.Errorf("refusals %+v, %d attempts; want one hedge refused by the breaker, 1 attempt", refused, s.n.Load())
		}

		h, err := hedge.New(hedge.Config{Delay: 50 * time.Millisecond, Budget: 0.1, MinPerSecond: hedge.Off})
		if err != nil {
			t.Fatal(err)
		}
		obs = &events{}
		p = retry.Policy{Env: &retry.Env{Hedger: h, Observer: obs}}
		for range 20 {
			s := &script{lat: []time.Duration{100 * time.Millisecond, 10 * time.Millisecond}}
			if _, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil {
				t.Fatal(err)
			}
		}
		if n := obs.count(event.Hedge); n != 2 {
			t.Errorf("%d hedges for 20 slow calls with a 10 %% budget, want 2", n)
		}
		if r := obs.of(event.HedgeRefused); len(r) == 0 || r[0].Reason != "hedge_budget_exhausted" {
			t.Errorf("refusals %+v, want hedge_budget_exhausted", r)
		}
	})
}

// fakeOpenForRetries is a breaker that lets first attempts through and
// refuses every later one.
type fakeOpenForRetries struct{}

func (fakeOpenForRetries) AllowAt(_ time.Time, retry bool) (uint64, error) {
	if retry {
		return 0, breaker.ErrOpen
	}
	return 0, nil
}
func (fakeOpenForRetries) DoneAt(time.Time, uint64, time.Duration, error) {}

// The caller's cancellation ends a hedged call with every attempt in
// flight cancelled.
func TestHedgeCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{time.Hour}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
		defer cancel()
		_, err := retry.HedgeValue(ctx, p, s.call, s.discard)
		if !errors.Is(err, retry.ErrCancelled) {
			t.Fatalf("HedgeValue = %v, want cancelled", err)
		}
		synctest.Wait()
		if n := s.n.Load(); n != 3 || len(s.cancelled) != 3 || len(s.discarded) != 2 {
			t.Errorf("%d attempts, cancelled %v, discarded %v; want 3, all cancelled, the 2 not returned discarded", n, s.cancelled, s.discarded)
		}
	})
}

// Without a Hedger, HedgeValue is DoValue.
func TestHedgeWithoutHedger(t *testing.T) {
	s := &script{lat: []time.Duration{time.Millisecond}}
	if v, err := retry.HedgeValue(context.Background(), retry.Policy{}, s.call, s.discard); v != 1 || err != nil {
		t.Fatalf("HedgeValue = %v, %v", v, err)
	}
	if err := retry.Hedge(context.Background(), retry.Policy{MaxAttempts: -2}, func(context.Context) error { return nil }); !errors.Is(err, retry.ErrInvalidConfig) {
		t.Fatalf("invalid policy: %v", err)
	}
}

// refusingHedger hedges every call after delay and refuses every hedge
// with err.
type refusingHedger struct {
	delay time.Duration
	err   error
}

func (h refusingHedger) PlanAt(time.Time) (time.Duration, bool) { return h.delay, true }
func (h refusingHedger) AllowAt(time.Time) error                { return h.err }
func (refusingHedger) ObserveAt(time.Time, time.Duration, bool) {}
func (refusingHedger) MaxHedges() int                           { return 1 }

// TestHedgeRefusedReasonBounded: a refused hedge's reason comes from the
// Hedger's error, and reasons are metric attributes: a text that is a
// short lowercase phrase makes one (hedge_paused), any other (digits, an
// ID, capitals, a long sentence) gives hedge_refused. Each tenant number
// or request ID made a new reason, and a new series.
func TestHedgeRefusedReasonBounded(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"hedge: paused, for maintenance", "hedge_paused"},
		{"hedge: budget exhausted", "hedge_budget_exhausted"},
		{"hedge: tenant 42 over quota", "hedge_refused"},
		{"Quota exceeded for user Bob", "hedge_refused"},
		{"hedge: " + strings.Repeat("a", 33), "hedge_refused"},
		{"hedge: ", "hedge_refused"},
	} {
		synctest.Test(t, func(t *testing.T) {
			obs := &events{}
			s := &script{lat: []time.Duration{100 * time.Millisecond}}
			p := retry.Policy{Env: &retry.Env{Hedger: refusingHedger{50 * time.Millisecond, errors.New(c.msg)}, Observer: obs}}
			s.answers(t, p, 1, 100*time.Millisecond)
			if r := obs.of(event.HedgeRefused); len(r) != 1 || r[0].Reason != c.want || r[0].Err == nil || r[0].Err.Error() != c.msg {
				t.Errorf("Hedger refused with %q: events %+v, want one HedgeRefused, reason %s, with the error", c.msg, r, c.want)
			}
		})
	}
}
