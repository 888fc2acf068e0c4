package retry_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// TestWaitEndingAtDeadlineNotStarted: a wait that would end exactly at
// the deadline leaves the next attempt no time at all. The loop gives up
// at once (ReasonDeadline, saying so) instead of sleeping into the
// deadline and then sending an attempt whose context has already ended.
// The deadline is the caller's context's, or MaxElapsed's; the wait a
// backoff, a server hint or a throttle's.
func TestWaitEndingAtDeadlineNotStarted(t *testing.T) {
	constant := backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.None}
	for _, tc := range []struct {
		name   string
		ctxTTL time.Duration // 0: no deadline on the context
		p      retry.Policy
		err    error
		calls  int // attempts before the give-up
	}{
		{"backoff ends at the context's deadline", time.Second, retry.Policy{Backoff: constant}, errFlaky, 1},
		{"backoff ends at MaxElapsed", 0, retry.Policy{MaxElapsed: 2 * time.Second, MaxAttempts: 5, Backoff: constant}, errFlaky, 2},
		{"hint ends at the context's deadline", time.Second, retry.Policy{}, retry.After(errFlaky, time.Second), 1},
		{"throttle's wait ends at the deadline", 0, retry.Policy{MaxElapsed: time.Second,
			Env: &retry.Env{Throttle: &fakeThrottle{wait: time.Second}}}, errFlaky, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tc.ctxTTL > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTTL)
					defer cancel()
				}
				start := time.Now()
				var (
					calls   int
					lateCtx bool // an attempt got a context that had already ended
				)
				err := retry.Do(ctx, tc.p, func(ctx context.Context) error {
					calls++
					lateCtx = lateCtx || ctx.Err() != nil
					return tc.err
				})
				e := asError(t, err)
				if e.Reason != retry.ReasonDeadline || calls != tc.calls || lateCtx {
					t.Fatalf("got %v after %d calls (one with an ended context: %v); want a deadline give-up after %d",
						err, calls, lateCtx, tc.calls)
				}
				if e.Wait != time.Second || e.Limit != time.Second {
					t.Errorf("Wait %v Limit %v, want the 1s wait refused with 1s left", e.Wait, e.Limit)
				}
				if want := time.Duration(tc.calls-1) * time.Second; tc.calls > 0 && time.Since(start) != want {
					t.Errorf("gave up after %v, want %v (at once, without the last wait)", time.Since(start), want)
				}
				if !strings.Contains(err.Error(), "waiting 1s would end at the deadline (1s left)") {
					t.Errorf("message %q does not say why", err)
				}
			})
		})
	}
}

// TestHugeHintNeverShortened: a server hint near the largest Duration,
// under a MaxRetryAfter that lets it through (a policy that means "honour
// any hint"), is waited for in full: its jitter must not overflow the
// wait into a negative one, which would retry at once and ignore every
// deadline.
func TestHugeHintNeverShortened(t *testing.T) {
	for _, h := range []time.Duration{math.MaxInt64, math.MaxInt64 / 10 * 9, 250 * 365 * 24 * time.Hour} {
		var waits []time.Duration
		p := retry.Policy{MaxAttempts: 2, MaxRetryAfter: math.MaxInt64, Env: &retry.Env{
			Rand:  func() float64 { return 0.99 },
			Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		}}
		_ = retry.Do(context.Background(), p, func(context.Context) error { return retry.After(errFlaky, h) })
		if len(waits) != 1 || waits[0] < h {
			t.Errorf("hint %v: waited %v, want one wait of at least the hint", h, waits)
		}
	}
}

// TestHintJitterDrawOutOfRange: a random source that breaks Env.Rand's
// contract ([0, 1)), such as a normal distribution, 1 for "the largest
// jitter" or a NaN from a bad computation, is clamped as backoff.Delay
// clamps its draw. A 10 s server hint is then waited for between 10 s
// and 12 s (up to HintJitter on top): a NaN or ±Inf draw made the wait
// −2562047h and the loop retried at once, −1 shortened it to 8 s, earlier
// than the server asked, and 5 made it 20 s. The Stepper's draw is in
// [0, 1) too.
func TestHintJitterDrawOutOfRange(t *testing.T) {
	const hint = 10 * time.Second
	for _, u := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 5, 1} {
		var waits []time.Duration
		var steps []float64
		p := retry.Policy{MaxAttempts: 3, Env: &retry.Env{
			Rand:  func() float64 { return u },
			Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		}, Stepper: func() retry.Stepper { return drawRecorder{&steps} }}
		calls := 0
		_ = retry.Do(context.Background(), p, func(context.Context) error {
			calls++
			if calls == 1 {
				return retry.After(errFlaky, hint)
			}
			return errFlaky
		})
		if len(waits) != 2 || waits[0] < hint || waits[0] > hint+hint/5 {
			t.Errorf("draw %v: waits %v, want the first between %v and %v", u, waits, hint, hint+hint/5)
		}
		for _, s := range steps {
			if !(s >= 0 && s < 1) {
				t.Errorf("draw %v: the Stepper got %v, want a draw in [0, 1)", u, s)
			}
		}
	}
}

// drawRecorder is a Stepper that keeps the draws it is given and waits 1 s.
type drawRecorder struct{ us *[]float64 }

func (r drawRecorder) Step(_ int, _ error, _ retry.Class, u float64) (time.Duration, bool) {
	*r.us = append(*r.us, u)
	return time.Second, true
}

// TestStepperNegativeWait: a Stepper that returns a negative wait (a
// subtraction gone wrong in a user's schedule) retries at once, and says
// so: the wait OnRetry, the observer and Env.Sleep are given is 0, not
// −1s or −2562047h, which a metric of the waits would have recorded.
func TestStepperNegativeWait(t *testing.T) {
	for _, w := range []time.Duration{-time.Second, math.MinInt64} {
		var told, slept []time.Duration
		p := retry.Policy{MaxAttempts: 2, Stepper: func() retry.Stepper { return fixedStep(w) },
			OnRetry: func(x retry.Wait) { told = append(told, x.Delay) },
			Env:     &retry.Env{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}}
		_ = retry.Do(context.Background(), p, func(context.Context) error { return errFlaky })
		if len(told) != 1 || told[0] != 0 || len(slept) != 1 || slept[0] != 0 {
			t.Errorf("Stepper wait %v: OnRetry told %v, slept %v; want one wait of 0", w, told, slept)
		}
	}
}

// fixedStep is a Stepper that always waits its value.
type fixedStep time.Duration

func (f fixedStep) Step(int, error, retry.Class, float64) (time.Duration, bool) {
	return time.Duration(f), true
}

// TestDeadlineGiveUpSaysWhoAskedTheWait: a call given up because its next
// wait would pass the deadline says whose wait it was (Error.Source, and
// the message): the server's hint (30 s, longer than any backoff the
// policy allows, read as a misconfigured schedule when the message did
// not say), the throttle's, or the backoff's.
func TestDeadlineGiveUpSaysWhoAskedTheWait(t *testing.T) {
	constant := backoff.Schedule{Kind: backoff.Constant, Base: 30 * time.Second, Cap: time.Minute, Jitter: backoff.None}
	for _, tc := range []struct {
		name string
		p    retry.Policy
		err  error
		src  event.Source
		says string
	}{
		{"server", retry.Policy{}, retry.After(errFlaky, 30*time.Second), event.ServerHint, "waiting 30s would end after the deadline (5s left), the wait the server asked for"},
		{"throttle", retry.Policy{Env: &retry.Env{Throttle: &fakeThrottle{wait: 30 * time.Second}}}, errFlaky, event.RateLimit, "waiting 30s would end after the deadline (5s left), the wait the throttle asked for"},
		{"backoff", retry.Policy{Backoff: constant}, errFlaky, event.Backoff, "waiting 30s would end after the deadline (5s left): last error"},
	} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := retry.Do(ctx, tc.p, func(context.Context) error { return tc.err })
			e := asError(t, err)
			if e.Reason != retry.ReasonDeadline || e.Source != tc.src || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: Reason %v, Source %v, message %q; want deadline, %v, saying %q", tc.name, e.Reason, e.Source, err, tc.src, tc.says)
			}
		})
	}
}
