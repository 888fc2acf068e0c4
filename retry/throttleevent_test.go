package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
	"github.com/yaoki-go/yaoki/throttle"
)

// recorder keeps the events an observer receives.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) Observe(_ context.Context, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

func (r *recorder) kinds() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.evs...)
}

// throttled returns a Cubic that the dependency has told it is overloaded:
// at its floor of 0.5 requests/s, the next attempt waits 2 s for a token.
func throttled(t *testing.T) *throttle.Cubic {
	t.Helper()
	th, err := throttle.NewCubic(throttle.CubicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	th.RecordAt(time.Now(), true)
	return th
}

// TestThrottleWaitReported: the throttle makes the first attempt wait 2 s
// for its token. The observer hears of it (RetryScheduled, Source
// RateLimit, the wait and the attempt that waits) before the attempt
// starts 2 s later; an operator otherwise saw an attempt start late and
// nothing that said why.
func TestThrottleWaitReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := retry.Policy{Env: &retry.Env{Throttle: throttled(t), Observer: rec}}
		start := time.Now()
		if err := retry.Do(t.Context(), p, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		evs := rec.kinds()
		if len(evs) < 2 {
			t.Fatalf("events %v, want the throttle's wait, then the attempt", evs)
		}
		w, s := evs[0], evs[1]
		if w.Kind != event.RetryScheduled || w.Source != event.RateLimit || w.Wait != 2*time.Second ||
			w.Attempt != 1 || !w.Time.Equal(start) || w.Component != "retry" {
			t.Errorf("first event %+v, want RetryScheduled from the rate limiter: attempt 1 waits 2s, at the call's start", w)
		}
		if s.Kind != event.AttemptStart || s.Time.Sub(start) != 2*time.Second {
			t.Errorf("second event %v at +%v, want the attempt's start after the 2s wait", s.Kind, s.Time.Sub(start))
		}
	})
}

// TestThrottleWaitPastDeadlineReported: the throttle's 2 s wait would end
// after the caller's 1 s deadline, so the call gives up at once (reason
// deadline). The observer hears that the throttle refused the attempt
// (ThrottleRejected, reason deadline, the wait) before the give-up, which
// alone did not say that the throttle caused it.
func TestThrottleWaitPastDeadlineReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := retry.Policy{Env: &retry.Env{Throttle: throttled(t), Observer: rec}}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		calls := 0
		err := retry.Do(ctx, p, func(context.Context) error { calls++; return nil })
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ReasonDeadline || calls != 0 {
			t.Fatalf("Do = %v after %d calls, want a deadline give-up before any call", err, calls)
		}
		evs := rec.kinds()
		if len(evs) != 2 || evs[0].Kind != event.ThrottleRejected || evs[1].Kind != event.GaveUp {
			t.Fatalf("events %v, want ThrottleRejected then GaveUp", evs)
		}
		if r := evs[0]; r.Reason != retry.ReasonDeadline.Key() || r.Wait != 2*time.Second || r.Attempt != 1 {
			t.Errorf("rejection %+v, want reason %q, the 2s wait, attempt 1", r, retry.ReasonDeadline.Key())
		}
	})
}

// TestRecorderRetriesLeavesThrottleWaitsOut: retrytest.Recorder.Retries
// counts retries; a throttle's wait before the first attempt is none.
func TestRecorderRetriesLeavesThrottleWaitsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &retrytest.Recorder{}
		p := retry.Policy{Env: &retry.Env{Throttle: throttled(t), Observer: rec}}
		if err := retry.Do(t.Context(), p, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if r, all := rec.Retries(), rec.Events(event.RetryScheduled); len(r) != 0 || len(all) != 1 {
			t.Fatalf("Retries %v, RetryScheduled events %v: want no retry and the throttle's one wait", r, all)
		}
	})
}
