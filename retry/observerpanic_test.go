package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// TestObserverPanicReleasesGuards: an Observer that panics (a bug in the
// caller's logging) makes Do panic with its value, but what the attempt
// held is handed back first: the bulkhead's slot and the breaker's
// half-open probe slot. Without that, one panicking event leaks a slot for
// ever (the bulkhead shrinks) or holds the breaker half-open, refusing
// every call, until its OpenTimeout. The events reported while an attempt
// holds them panic in turn: its start, its end, a breaker's refusal, a
// throttle's refusal.
func TestObserverPanicReleasesGuards(t *testing.T) {
	for _, c := range []struct {
		kind   event.Kind
		open   bool  // the breaker refuses (still open); otherwise it is past its open period: half-open
		reject error // the throttle refuses
	}{
		{kind: event.AttemptStart},
		{kind: event.AttemptEnd},
		{kind: event.BreakerRejected, open: true},
		{kind: event.ThrottleRejected, reject: errors.New("throttle: rejected locally")},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			br, err := breaker.New(breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Minute, OpenJitter: breaker.Disabled})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			tk, _ := br.AllowAt(now, false)
			br.DoneAt(now, tk, 0, errFlaky) // open for a minute
			th := &fakeThrottle{reject: c.reject}
			env := &retry.Env{Bulkhead: bh, Breaker: pastOpen{br, !c.open}, Throttle: th}
			env.Observer = event.Func(func(_ context.Context, e event.Event) {
				if e.Kind == c.kind {
					panic("observer: " + c.kind.String())
				}
			})
			p := retry.Policy{Env: env}
			func() {
				defer func() {
					if v := recover(); v != "observer: "+c.kind.String() {
						t.Fatalf("Do recovered %v, want the observer's panic", v)
					}
				}()
				_ = retry.Do(context.Background(), p, func(context.Context) error { return nil })
			}()
			if n := bh.InUse(); n != 0 {
				t.Errorf("bulkhead slots in use after the panic: %d, want 0", n)
			}
			if c.open || c.reject != nil {
				return // no breaker ticket was taken
			}
			// The breaker's one half-open probe slot is free (or the probe
			// succeeded): the next call passes.
			env.Observer = event.Func(func(context.Context, event.Event) {})
			if err := retry.Do(context.Background(), p, func(context.Context) error { return nil }); err != nil {
				t.Errorf("the next call: %v, want success", err)
			}
		})
	}
}

// pastOpen is a breaker seen after its open period when half is set (its
// instants are shifted past it), so that its next AllowAt takes the
// half-open probe slot.
type pastOpen struct {
	b    *breaker.Breaker
	half bool
}

func (p pastOpen) shift(now time.Time) time.Time {
	if p.half {
		return now.Add(2 * time.Minute)
	}
	return now
}

func (p pastOpen) AllowAt(now time.Time, retry bool) (uint64, error) {
	return p.b.AllowAt(p.shift(now), retry)
}

func (p pastOpen) DoneAt(now time.Time, tk uint64, d time.Duration, err error) {
	p.b.DoneAt(p.shift(now), tk, d, err)
}

// TestBreakerHookPanicReleasesGuards: the breaker's own hooks run inside
// its AllowAt (its Observer, often the caller's, sees the move to
// half-open and each refusal; OnStateChange sees the move). If one
// panics, Do panics with its value, but the bulkhead slot the attempt
// held is handed back, and the half-open probe slot the breaker had just
// given is freed: the next call is let through as the probe instead of
// being refused until OpenTimeout deems the lost probe lost.
func TestBreakerHookPanicReleasesGuards(t *testing.T) {
	for _, c := range []struct {
		name  string
		probe bool // the panic comes as the breaker moves to half-open
		hook  func(b *breaker.Config)
	}{
		{"observer, half-open", true, func(b *breaker.Config) {
			b.Observer = event.Func(func(_ context.Context, e event.Event) {
				if e.Kind == event.BreakerStateChange && e.To == "half_open" {
					panic("hook")
				}
			})
		}},
		{"OnStateChange, half-open", true, func(b *breaker.Config) {
			b.OnStateChange = func(_ string, _, to breaker.State) {
				if to == breaker.HalfOpen {
					panic("hook")
				}
			}
		}},
		{"observer, refusal", false, func(b *breaker.Config) {
			b.Observer = event.Func(func(_ context.Context, e event.Event) {
				if e.Kind == event.BreakerRejected {
					panic("hook")
				}
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			cfg := breaker.Config{ConsecutiveFailures: 1, OpenTimeout: time.Minute, OpenJitter: breaker.Disabled}
			c.hook(&cfg)
			br, err := breaker.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			tk, _ := br.AllowAt(now, false)
			br.DoneAt(now, tk, 0, errFlaky) // open for a minute
			p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Breaker: pastOpen{br, c.probe}}}
			func() {
				defer func() {
					if v := recover(); v != "hook" {
						t.Fatalf("Do recovered %v, want the hook's panic", v)
					}
				}()
				_ = retry.Do(context.Background(), p, func(context.Context) error { return nil })
			}()
			if n := bh.InUse(); n != 0 {
				t.Errorf("bulkhead slots in use after the panic: %d, want 0", n)
			}
			if !c.probe {
				return
			}
			if _, err := br.AllowAt(now.Add(2*time.Minute), false); err != nil {
				t.Errorf("the next probe: %v, want it let through (the panicked one's slot freed)", err)
			}
		})
	}
}

// TestHedgedObserverPanicReleasesAttemptsInFlight: in a hedged call, the
// Observer panics as a hedge is sent, while the first attempt is still in
// flight. HedgeValue panics with its value; the first attempt is cancelled
// and, when it returns, hands back its bulkhead slot, as every attempt a
// hedged call leaves behind does. It kept it for ever.
func TestHedgedObserverPanicReleasesAttemptsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		env := &retry.Env{Bulkhead: bh, Hedger: fixedHedger(t, 50*time.Millisecond, 1),
			Observer: event.Func(func(_ context.Context, e event.Event) {
				if e.Kind == event.Hedge {
					panic("observer: hedge")
				}
			})}
		s := &script{lat: []time.Duration{time.Hour}}
		func() {
			defer func() {
				if v := recover(); v != "observer: hedge" {
					t.Fatalf("HedgeValue recovered %v, want the observer's panic", v)
				}
			}()
			_, _ = retry.HedgeValue(context.Background(), retry.Policy{Env: env}, s.call, s.discard)
		}()
		synctest.Wait() // the first attempt, cancelled, returns and is reported
		if n := bh.InUse(); n != 0 {
			t.Errorf("bulkhead slots in use once the attempts returned: %d, want 0", n)
		}
	})
}

// panicBreaker allows first attempts and panics when asked for a later
// one (a hedge), as a breaker whose hook panics in AllowAt does.
type panicBreaker struct{}

func (panicBreaker) AllowAt(now time.Time, retry bool) (uint64, error) {
	if retry {
		panic("breaker: hedge")
	}
	return 0, nil
}
func (panicBreaker) DoneAt(time.Time, uint64, time.Duration, error) {}

// turns is a throttle that keeps turns: it counts those it gave and those
// handed back (ThrottleCanceller) or answered.
type turns struct {
	mu                          sync.Mutex
	admitted, cancelled, record int
}

func (t *turns) AdmitAt(time.Time) (time.Duration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.admitted++
	return 0, nil
}
func (t *turns) CancelAt(time.Time) { t.mu.Lock(); t.cancelled++; t.mu.Unlock() }
func (t *turns) RecordAt(time.Time, bool) {
	t.mu.Lock()
	t.record++
	t.mu.Unlock()
}

// TestHedgeGuardPanicReleasesGuards: the breaker panics (its hook does) when
// asked for a hedge, once the hedge holds a bulkhead slot and a throttle's
// turn. HedgeValue panics with its value, but the hedge, which is never
// sent, hands both back first, as an attempt whose guard panics in Before
// does; and the first attempt, cancelled, hands back its own when it
// returns. The hedge's slot was held for ever (the bulkhead shrank by one
// at each such panic) and its turn lost.
func TestHedgeGuardPanicReleasesGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		th := &turns{}
		env := &retry.Env{Bulkhead: bh, Throttle: th, Breaker: panicBreaker{}, Hedger: fixedHedger(t, 50*time.Millisecond, 1)}
		s := &script{lat: []time.Duration{time.Hour}}
		func() {
			defer func() {
				if v := recover(); v != "breaker: hedge" {
					t.Fatalf("HedgeValue recovered %v, want the breaker's panic", v)
				}
			}()
			_, _ = retry.HedgeValue(context.Background(), retry.Policy{Env: env}, s.call, s.discard)
		}()
		synctest.Wait() // the first attempt, cancelled, returns and is reported
		if n := bh.InUse(); n != 0 {
			t.Errorf("bulkhead slots in use once the attempts returned: %d, want 0", n)
		}
		// Two turns given: the first attempt's (sent, so not handed back: it
		// was cancelled, the throttle is not told) and the hedge's.
		if th.admitted != 2 || th.cancelled != 1 {
			t.Errorf("throttle: %d turns given, %d handed back; want 2 and 1 (the hedge's)", th.admitted, th.cancelled)
		}
	})
}

// TestPanicEndsAttemptForEveryGuard: fn panics under a policy whose Env has
// an observer, a throttle and a budget but neither breaker nor bulkhead. Do
// panics with fn's value once the attempt's end has been reported as the
// hedging driver reports it: the observer sees the attempt start and end
// (a counter of attempts in flight comes back to 0), and the throttle and
// the budget hear of its failure. They heard nothing, and the attempt
// never ended, unless a breaker or a bulkhead was in the Env.
func TestPanicEndsAttemptForEveryGuard(t *testing.T) {
	obs := &events{}
	th, bu := &fakeThrottle{}, &fakeBudget{allow: true}
	p := retry.Policy{Env: &retry.Env{Observer: obs, Throttle: th, Budget: bu}}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("Do recovered %v, want fn's panic", v)
			}
		}()
		_ = retry.Do(context.Background(), p, func(context.Context) error { panic("boom") })
	}()
	ends := obs.of(event.AttemptEnd)
	if obs.count(event.AttemptStart) != 1 || len(ends) != 1 || ends[0].Outcome != event.Failure {
		t.Errorf("events: %d attempt starts, ends %+v; want one start and one end, a failure", obs.count(event.AttemptStart), ends)
	}
	if len(th.throttled) != 1 || len(bu.records) != 1 {
		t.Errorf("throttle told %v, budget told %v; want each told of one failure", th.throttled, bu.records)
	}
}
