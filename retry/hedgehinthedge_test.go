package retry_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// The server's word arrives on the hedge, not on the first attempt: the
// hedge (sent at 50ms) is answered "503, come back in 2 s" or "429" at
// 60ms while the first attempt is still out; the first attempt then fails
// with a reset connection at 100ms. No second hedge goes out at 100ms, the
// retry waits the hint (2 s) or the throttling base (1 s) rather than the
// 10 ms backoff of the last failure, a hint too long for MaxRetryAfter
// ends the call once the round has failed, and the throttle hears the
// hedge's overload answer.
func TestHedgedHintOnHedge(t *testing.T) {
	reset := errors.New("read: connection reset")
	sched := backoff.Schedule{Kind: backoff.Constant, Base: 10 * time.Millisecond, Jitter: backoff.None}
	for _, c := range []struct {
		name      string
		err       error
		wait      time.Duration
		throttled int
	}{
		{"hint", retry.After(errors.New("503"), 2*time.Second), 2 * time.Second, 0},
		{"429", retry.Throttling(errors.New("429")), time.Second, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &events{}
				th := &fakeThrottle{}
				s := &script{lat: []time.Duration{100 * time.Millisecond, 10 * time.Millisecond, time.Millisecond},
					errs: []error{reset, c.err}}
				p := retry.Policy{MaxAttempts: 4, ThrottleBase: time.Second, Backoff: sched,
					Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs, Throttle: th, Rand: func() float64 { return 0 }}}
				s.answers(t, p, 3, 100*time.Millisecond+c.wait+time.Millisecond)
				if h := obs.count(event.Hedge); h != 1 {
					t.Errorf("%d hedges, want 1: none after the server said to wait", h)
				}
				if n := countTrue(th.throttled); n != c.throttled {
					t.Errorf("the throttle heard %d overload answers (%v), want %d", n, th.throttled, c.throttled)
				}
			})
		})
	}
	t.Run("hint too long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &script{lat: []time.Duration{100 * time.Millisecond, 10 * time.Millisecond, time.Millisecond},
				errs: []error{reset, retry.After(errors.New("503"), 2*time.Minute)}}
			p := retry.Policy{MaxAttempts: 4, Backoff: sched, Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
			_, err := retry.HedgeValue(t.Context(), p, s.call, s.discard)
			if !errors.Is(err, retry.ErrHintTooLong) || s.n.Load() != 2 {
				t.Errorf("HedgeValue = %v after %d attempts, want the hint too long after the round's 2", err, s.n.Load())
			}
		})
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
