package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// fullBulkhead returns a bulkhead of one slot, taken until release is
// called; an Acquire waits up to maxWait for it.
func fullBulkhead(t *testing.T, maxWait time.Duration) (b *throttle.Bulkhead, release func()) {
	t.Helper()
	b, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1, MaxWait: maxWait})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, b.Release
}

// hedged and plain run a call the way Do and HedgeValue do, so that both
// drivers' bulkhead waits are checked.
var bulkheadDrivers = []struct {
	name string
	run  func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error
}{
	{"Do", retry.Do},
	{"Hedge", func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error {
		p.Env = p.Env.Clone()
		p.Env.Hedger = fixedHedgerOff{}
		return retry.Hedge(ctx, p, fn)
	}},
}

// fixedHedgerOff is a Hedger that hedges no call: HedgeValue runs its
// own driver, without hedges to muddle the events.
type fixedHedgerOff struct{}

func (fixedHedgerOff) PlanAt(time.Time) (time.Duration, bool)   { return 0, false }
func (fixedHedgerOff) AllowAt(time.Time) error                  { return nil }
func (fixedHedgerOff) ObserveAt(time.Time, time.Duration, bool) {}
func (fixedHedgerOff) MaxHedges() int                           { return 0 }

// TestBulkheadWaitReported: the bulkhead's only slot is taken, and frees
// 200 ms into the call. The observer hears of the wait as of a throttle's
// (RetryScheduled, Source RateLimit), with Reason "bulkhead", the wait's
// start and its length, before the attempt starts 200 ms late; it heard
// nothing, and an attempt started late for no reason it could see.
func TestBulkheadWaitReported(t *testing.T) {
	for _, dr := range bulkheadDrivers {
		t.Run(dr.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bh, release := fullBulkhead(t, time.Second)
				time.AfterFunc(200*time.Millisecond, release)
				rec := &recorder{}
				p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Observer: rec}}
				start := time.Now()
				if err := dr.run(t.Context(), p, func(context.Context) error { return nil }); err != nil {
					t.Fatal(err)
				}
				evs := rec.kinds()
				if len(evs) < 2 {
					t.Fatalf("events %v, want the bulkhead's wait, then the attempt", evs)
				}
				w, s := evs[0], evs[1]
				if w.Kind != event.RetryScheduled || w.Source != event.RateLimit || w.Reason != "bulkhead" ||
					w.Wait != 200*time.Millisecond || w.Attempt != 1 || !w.Time.Equal(start) || w.Component != "retry" {
					t.Errorf("first event %+v, want RetryScheduled, rate_limit, reason bulkhead: attempt 1 waited 200ms from the call's start", w)
				}
				if s.Kind != event.AttemptStart || s.Time.Sub(start) != 200*time.Millisecond {
					t.Errorf("second event %v at +%v, want the attempt's start after the 200ms wait", s.Kind, s.Time.Sub(start))
				}
				if bh.InUse() != 0 {
					t.Errorf("%d bulkhead slots in use after the call, want 0", bh.InUse())
				}
			})
		})
	}
}

// TestBulkheadWaitPastDeadlineReported: the slot never frees; the wait
// ends at the deadline (the caller's, or MaxElapsed), 100 ms in. The
// observer hears that the bulkhead refused the attempt at the deadline
// (ThrottleRejected, reason deadline, the 100 ms waited), as of a
// throttle's wait past the deadline, before the give-up; it heard only the
// give-up. A bulkhead that runs out of MaxWait (50 ms) is reported with
// the wait too, and no bulkhead wait without a slot is reported as a wait.
func TestBulkheadWaitPastDeadlineReported(t *testing.T) {
	for _, dr := range bulkheadDrivers {
		for _, c := range []struct {
			name       string
			timeout    time.Duration
			maxElapsed time.Duration
			maxWait    time.Duration
			reason     string
			waited     time.Duration
		}{
			{"caller deadline", 100 * time.Millisecond, 0, time.Second, retry.ReasonDeadline.Key(), 100 * time.Millisecond},
			{"MaxElapsed", 0, 100 * time.Millisecond, time.Second, retry.ReasonDeadline.Key(), 100 * time.Millisecond},
			{"MaxWait", 0, 0, 50 * time.Millisecond, "", 50 * time.Millisecond},
		} {
			t.Run(dr.name+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					bh, release := fullBulkhead(t, c.maxWait)
					defer release()
					rec := &recorder{}
					p := retry.Policy{MaxElapsed: c.maxElapsed, Env: &retry.Env{Bulkhead: bh, Observer: rec}}
					ctx := t.Context()
					if c.timeout > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, c.timeout)
						defer cancel()
					}
					calls := 0
					err := dr.run(ctx, p, func(context.Context) error { calls++; return nil })
					var re *retry.Error
					if !errors.As(err, &re) || calls != 0 {
						t.Fatalf("got %v after %d calls, want a give-up before any call", err, calls)
					}
					evs := rec.kinds()
					if len(evs) != 2 || evs[0].Kind != event.ThrottleRejected || evs[1].Kind != event.GaveUp {
						t.Fatalf("events %v, want ThrottleRejected then GaveUp", evs)
					}
					if r := evs[0]; r.Reason != c.reason || r.Wait != c.waited || r.Attempt != 1 {
						t.Errorf("rejection %+v, want reason %q, the %v waited, attempt 1", r, c.reason, c.waited)
					}
				})
			})
		}
	}
}

// A bulkhead with no wait (MaxWait 0) refuses a call at once when it is
// full: ThrottleRejected with the bulkhead's error, no wait reported.
func TestBulkheadFullRefusalReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh, release := fullBulkhead(t, 0)
		defer release()
		rec := &recorder{}
		p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Observer: rec}}
		err := retry.Do(t.Context(), p, func(context.Context) error { return nil })
		if !errors.Is(err, retry.ErrRejectedLocally) || !errors.Is(err, throttle.ErrFull) {
			t.Fatalf("Do = %v, want rejected locally by the full bulkhead", err)
		}
		evs := rec.kinds()
		if len(evs) != 2 || evs[0].Kind != event.ThrottleRejected || !errors.Is(evs[0].Err, throttle.ErrFull) || evs[0].Wait != 0 || evs[1].Kind != event.GaveUp {
			t.Fatalf("events %+v, want ThrottleRejected (the bulkhead's error, no wait), then GaveUp", evs)
		}
	})
}

// An observer that panics as it hears of a bulkhead's wait does not keep
// the slot the attempt waited for: it goes back before the panic goes on.
func TestBulkheadWaitObserverPanicReleasesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh, release := fullBulkhead(t, time.Second)
		time.AfterFunc(100*time.Millisecond, release)
		obs := event.Func(func(_ context.Context, e event.Event) {
			if e.Kind == event.RetryScheduled {
				panic("observer")
			}
		})
		p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Observer: obs}}
		calls := 0
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Do returned; want the observer's panic")
				}
			}()
			_ = retry.Do(t.Context(), p, func(context.Context) error { calls++; return nil })
		}()
		if bh.InUse() != 0 || calls != 0 {
			t.Errorf("%d slots in use, %d calls after the observer panicked; want 0, 0", bh.InUse(), calls)
		}
	})
}
