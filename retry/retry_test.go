package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

var errFlaky = errors.New("flaky: connection reset")

// half makes every jitter draw 0.5, so waits are predictable.
func half() float64 { return 0.5 }

// failing returns a function that fails n times with err, then succeeds,
// and a counter of its calls.
func failing(n int, err error) (func(context.Context) error, *atomic.Int32) {
	var calls atomic.Int32
	return func(context.Context) error {
		if int(calls.Add(1)) <= n {
			return err
		}
		return nil
	}, &calls
}

func asError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var e *retry.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want a *retry.Error", err, err)
	}
	return e
}

func TestSuccessFirstAttempt(t *testing.T) {
	fn, calls := failing(0, nil)
	if err := retry.Do(context.Background(), retry.Policy{}, fn); err != nil {
		t.Fatalf("Do = %v, want nil", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", calls.Load())
	}
}

func TestDefaultSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(2, errFlaky)
		var waits []time.Duration
		p := retry.Policy{OnRetry: func(w retry.Wait) { waits = append(waits, w.Delay) }, Env: &retry.Env{Rand: half}}
		start := time.Now()
		if err := retry.Do(context.Background(), p, fn); err != nil {
			t.Fatalf("Do = %v, want nil", err)
		}
		// Full jitter with draw 0.5: retry 1 waits 25 ms (of 50), retry 2 50 ms (of 100).
		want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond}
		if fmt.Sprint(waits) != fmt.Sprint(want) {
			t.Errorf("waits = %v, want %v", waits, want)
		}
		if got := time.Since(start); got != 75*time.Millisecond {
			t.Errorf("elapsed = %v, want 75ms (the waits, nothing else)", got)
		}
		if calls.Load() != 3 {
			t.Errorf("calls = %d, want 3", calls.Load())
		}
	})
}

func TestExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(10, io.ErrUnexpectedEOF)
		err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Rand: half}}, fn)
		e := asError(t, err)
		if e.Attempts != 3 || e.Reason != retry.ReasonExhausted || calls.Load() != 3 {
			t.Errorf("got %d attempts (%d calls), reason %v; want 3, attempts exhausted", e.Attempts, calls.Load(), e.Reason)
		}
		if e.Elapsed != 75*time.Millisecond {
			t.Errorf("Elapsed = %v, want 75ms", e.Elapsed)
		}
		for _, target := range []error{io.ErrUnexpectedEOF, retry.ErrExhausted, retry.ErrGaveUp} {
			if !errors.Is(err, target) {
				t.Errorf("errors.Is(err, %v) = false", target)
			}
		}
		if errors.Is(err, retry.ErrDeadline) {
			t.Error("errors.Is(err, ErrDeadline) = true for an exhausted loop")
		}
		want := "retry: gave up after 3 attempts in 75ms: attempts exhausted: last error: unexpected EOF"
		if err.Error() != want {
			t.Errorf("message\n got %q\nwant %q", err.Error(), want)
		}
	})
}

func TestMaxAttempts(t *testing.T) {
	tests := []struct {
		max, want int
	}{{0, 3}, {1, 1}, {5, 5}}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			fn, calls := failing(100, errFlaky)
			err := retry.Do(context.Background(), retry.Policy{MaxAttempts: tt.max}, fn)
			if e := asError(t, err); e.Attempts != tt.want || int(calls.Load()) != tt.want {
				t.Errorf("MaxAttempts %d: %d attempts, %d calls; want %d", tt.max, e.Attempts, calls.Load(), tt.want)
			}
		})
	}
}

func TestUnlimitedAttemptsBoundedByMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(1000, errFlaky)
		// The bound is not on an attempt's instant: at 10 s exactly, the
		// loop's own deadline timer and the end of a wait would fire at the
		// same virtual instant, in either order.
		p := retry.Policy{MaxAttempts: retry.Unlimited, MaxElapsed: 10*time.Second + 500*time.Millisecond,
			Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.None}}
		err := retry.Do(context.Background(), p, fn)
		e := asError(t, err)
		// Attempts at 0, 1, …, 10 s; the wait after the attempt at 10 s would pass the bound.
		if e.Reason != retry.ReasonDeadline || e.Attempts != 11 || calls.Load() != 11 {
			t.Errorf("reason %v after %d attempts (%d calls), want deadline after 11", e.Reason, e.Attempts, calls.Load())
		}
		if !errors.Is(err, retry.ErrDeadline) || !errors.Is(err, errFlaky) {
			t.Errorf("errors.Is fails through %v", err)
		}
	})
}

func TestPermanent(t *testing.T) {
	inner := errors.New("400 bad request")
	fn, calls := failing(5, retry.Permanent(inner))
	err := retry.Do(context.Background(), retry.Policy{}, fn)
	e := asError(t, err)
	if e.Reason != retry.ReasonPermanent || calls.Load() != 1 || e.Attempts != 1 {
		t.Errorf("reason %v after %d calls, want permanent error after 1", e.Reason, calls.Load())
	}
	if e.Last != inner {
		t.Errorf("Last = %#v, want the unmarked error", e.Last)
	}
	if !errors.Is(err, inner) || !errors.Is(err, retry.ErrPermanent) {
		t.Errorf("errors.Is fails through %v", err)
	}
	if retry.Permanent(nil) != nil || retry.Throttling(nil) != nil || retry.After(nil, time.Second) != nil {
		t.Error("marking nil must give nil")
	}
	// A Permanent mark wins over a classifier that says retry.
	fn, calls = failing(5, retry.Permanent(inner))
	_ = retry.Do(context.Background(), retry.Policy{Classify: func(error) retry.Class { return retry.ClassTransient }}, fn)
	if calls.Load() != 1 {
		t.Errorf("classifier overrode Permanent: %d calls", calls.Load())
	}
}

func TestClassifier(t *testing.T) {
	errThrottle := errors.New("429")
	errBad := errors.New("404")
	classify := func(err error) retry.Class {
		switch err {
		case errThrottle:
			return retry.ClassThrottled
		case errBad:
			return retry.ClassPermanent
		}
		return retry.ClassTransient
	}
	tests := []struct {
		name      string
		err       error
		p         retry.Policy
		wantCalls int
		wantWait  time.Duration
	}{
		{"throttled waits from the 1 s base", errThrottle, retry.Policy{Classify: classify, Env: &retry.Env{Rand: half}}, 2, 500 * time.Millisecond},
		{"throttled base configurable", errThrottle, retry.Policy{Classify: classify, ThrottleBase: 4 * time.Second, Env: &retry.Env{Rand: half}}, 2, 2 * time.Second},
		{"final is not retried", errBad, retry.Policy{Classify: classify, Env: &retry.Env{Rand: half}}, 1, 0},
		{"transient waits from 50 ms", errFlaky, retry.Policy{Classify: classify, Env: &retry.Env{Rand: half}}, 2, 25 * time.Millisecond},
		{"default classifier: Throttling mark", retry.Throttling(errFlaky), retry.Policy{Env: &retry.Env{Rand: half}}, 2, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fn, calls := failing(1, tt.err)
				var wait time.Duration
				tt.p.OnRetry = func(w retry.Wait) { wait = w.Delay }
				start := time.Now()
				_ = retry.Do(context.Background(), tt.p, fn)
				if int(calls.Load()) != tt.wantCalls || wait != tt.wantWait || time.Since(start) != tt.wantWait {
					t.Errorf("calls %d, wait %v, elapsed %v; want %d calls, wait %v", calls.Load(), wait, time.Since(start), tt.wantCalls, tt.wantWait)
				}
			})
		})
	}
}

func TestServerHint(t *testing.T) {
	tests := []struct {
		name     string
		hint     time.Duration
		draw     float64
		p        retry.Policy
		wantWait time.Duration
		giveUp   bool
	}{
		{"hint replaces backoff, no jitter on draw 0", 2 * time.Second, 0, retry.Policy{}, 2 * time.Second, false},
		{"up to +20 % jitter", 2 * time.Second, 0.5, retry.Policy{}, 2200 * time.Millisecond, false},
		{"never earlier than asked, never more than +20 %", 10 * time.Second, 0.999999, retry.Policy{}, 11999998 * time.Microsecond, false},
		{"exactly the cap is honoured", 60 * time.Second, 0, retry.Policy{}, 60 * time.Second, false},
		{"above the default cap gives up", 61 * time.Second, 0, retry.Policy{}, 0, true},
		{"above a custom cap gives up", 6 * time.Second, 0, retry.Policy{MaxRetryAfter: 5 * time.Second}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fn, calls := failing(1, retry.After(errFlaky, tt.hint))
				var got retry.Wait
				tt.p.Env = &retry.Env{Rand: func() float64 { return tt.draw }}
				tt.p.OnRetry = func(w retry.Wait) { got = w }
				start := time.Now()
				err := retry.Do(context.Background(), tt.p, fn)
				if tt.giveUp {
					e := asError(t, err)
					if e.Reason != retry.ReasonHintTooLong || e.Wait != tt.hint || calls.Load() != 1 || time.Since(start) != 0 {
						t.Errorf("got %v after %d calls in %v, want an immediate hint-too-long give-up", err, calls.Load(), time.Since(start))
					}
					if !errors.Is(err, retry.ErrHintTooLong) || !strings.Contains(err.Error(), "server asked to wait") {
						t.Errorf("error %q does not say the hint was too long", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Do = %v", err)
				}
				if got.Delay != tt.wantWait || got.Source != event.ServerHint || time.Since(start) != tt.wantWait {
					t.Errorf("wait %v from %v (elapsed %v), want %v from the server", got.Delay, got.Source, time.Since(start), tt.wantWait)
				}
			})
		})
	}
	if d, ok := retry.HintOf(fmt.Errorf("wrapped: %w", retry.After(errFlaky, -time.Second))); !ok || d != 0 {
		t.Errorf("HintOf(After(err, -1s)) = %v, %v; want 0, true", d, ok)
	}
	if _, ok := retry.HintOf(errFlaky); ok {
		t.Error("HintOf(plain error) reported a hint")
	}
}

// A hint of 0 ("Retry-After: 0") is no hint: retried at once, every client
// it reached would come back at the same instant, so the backoff of the
// error's class applies, jitter included, with event.Backoff as its source.
func TestZeroHintWaitsTheBackoff(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration // at draw 0.5
	}{
		{"transient: from 50 ms", retry.After(errFlaky, 0), 25 * time.Millisecond},
		{"throttled: from 1 s", retry.After(retry.Throttling(errFlaky), 0), 500 * time.Millisecond},
		{"a negative hint counts as 0", retry.After(errFlaky, -time.Second), 25 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fn, calls := failing(1, tt.err)
				var got retry.Wait
				p := retry.Policy{Env: &retry.Env{Rand: half}, OnRetry: func(w retry.Wait) { got = w }}
				start := time.Now()
				if err := retry.Do(context.Background(), p, fn); err != nil {
					t.Fatalf("Do = %v", err)
				}
				if calls.Load() != 2 || got.Delay != tt.want || got.Source != event.Backoff || time.Since(start) != tt.want {
					t.Errorf("%d calls, wait %v from %v (elapsed %v); want 2 calls, a wait of %v from the backoff",
						calls.Load(), got.Delay, got.Source, time.Since(start), tt.want)
				}
			})
		})
	}
}

func TestContextDeadlineNotWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fn, calls := failing(5, retry.After(errFlaky, 2*time.Second))
		start := time.Now()
		err := retry.Do(ctx, retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0 }}}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonDeadline || calls.Load() != 1 || time.Since(start) != 0 {
			t.Fatalf("got %v after %d calls in %v; want an immediate deadline give-up", err, calls.Load(), time.Since(start))
		}
		if e.Wait != 2*time.Second || e.Limit != time.Second {
			t.Errorf("Wait %v Limit %v, want 2s and 1s", e.Wait, e.Limit)
		}
		if !strings.Contains(err.Error(), "waiting 2s would end after the deadline (1s left)") {
			t.Errorf("message %q does not say why", err)
		}
	})
}

func TestMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first wait (constant 3 s) fits in 5 s, the second does not.
		fn, calls := failing(5, errFlaky)
		p := retry.Policy{MaxAttempts: 10, MaxElapsed: 5 * time.Second,
			Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 3 * time.Second, Jitter: backoff.None}}
		err := retry.Do(context.Background(), p, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonDeadline || calls.Load() != 2 || e.Elapsed != 3*time.Second {
			t.Errorf("got %v after %d calls; want deadline after 2 calls at 3s", err, calls.Load())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// MaxElapsed also ends an attempt that hangs.
		p := retry.Policy{MaxElapsed: 2 * time.Second}
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		e := asError(t, err)
		if e.Reason != retry.ReasonDeadline || e.Attempts != 1 || e.Elapsed != 2*time.Second {
			t.Errorf("got %v; want deadline after 1 attempt at 2s", err)
		}
	})
}

func TestCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		fn, calls := failing(5, retry.After(errFlaky, 30*time.Second))
		time.AfterFunc(10*time.Millisecond, cancel)
		start := time.Now()
		err := retry.Do(ctx, retry.Policy{}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonCancelled || calls.Load() != 1 || time.Since(start) != 10*time.Millisecond {
			t.Errorf("got %v after %d calls in %v; want cancelled at 10ms", err, calls.Load(), time.Since(start))
		}
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) || !errors.Is(err, retry.ErrCancelled) {
			t.Errorf("errors.Is cannot see context.Canceled, the last error and ErrCancelled in %v", err)
		}
	})
}

func TestCallerCancellationNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var calls int
		err := retry.Do(ctx, retry.Policy{AttemptTimeout: time.Second}, func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		e := asError(t, err)
		if e.Reason != retry.ReasonCancelled || calls != 1 || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v after %d calls; want the caller's deadline, 1 call", err, calls)
		}
	})
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		classified := false
		p := retry.Policy{AttemptTimeout: 100 * time.Millisecond,
			Classify: func(error) retry.Class { classified = true; return retry.ClassPermanent },
			Env: &retry.Env{
				Rand: func() float64 { return 0 },
			},
		}
		start := time.Now()
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			calls++
			if calls < 3 {
				<-ctx.Done() // hang until the attempt's own timeout
				return ctx.Err()
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("Do = %v after %d calls, want success on the 3rd", err, calls)
		}
		if classified {
			t.Error("a timed-out attempt was passed to the classifier, which could refuse it")
		}
		if got := time.Since(start); got != 200*time.Millisecond {
			t.Errorf("elapsed %v, want 2 × 100ms timeouts", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		err := retry.Do(context.Background(), retry.Policy{AttemptTimeout: time.Second, Env: &retry.Env{Rand: half}}, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		e := asError(t, err)
		if e.Reason != retry.ReasonExhausted || !errors.Is(err, retry.ErrAttemptTimeout) || !strings.Contains(err.Error(), "attempt timed out after 1s") {
			t.Errorf("got %v; want exhausted on attempt timeouts", err)
		}
	})
}

// Clone copies an Env (a nil one as the zero Env) without aliasing it.
func TestEnvClone(t *testing.T) {
	var nilEnv *retry.Env
	if c := nilEnv.Clone(); c == nil || c.Budget != nil || c.Observer != nil {
		t.Fatalf("nil Clone = %+v, want a zero Env", c)
	}
	half := func() float64 { return 0.5 }
	e := &retry.Env{Rand: half}
	c := e.Clone()
	c.Rand = nil
	if c == e || e.Rand == nil || e.Rand() != 0.5 {
		t.Fatal("Clone aliased its Env: changing the copy changed the original")
	}
}

// TestInvalidPolicy: an invalid policy is refused before the first
// attempt, whatever else it sets, by Do, DoValue, New and Validate.
func TestInvalidPolicy(t *testing.T) {
	tests := []struct {
		p    retry.Policy
		want string
	}{
		{retry.Policy{MaxAttempts: -2}, "MaxAttempts: -2 out of range"},
		{retry.Policy{MaxElapsed: -1}, "MaxElapsed: -1ns out of range"},
		{retry.Policy{AttemptTimeout: -time.Second}, "AttemptTimeout: -1s out of range"},
		{retry.Policy{ThrottleBase: -1}, "ThrottleBase"},
		{retry.Policy{MaxRetryAfter: -1}, "MaxRetryAfter"},
		{retry.Policy{Backoff: backoff.Schedule{Multiplier: 0.9}}, "Backoff.Multiplier: 0.9 out of range"},
		{retry.Policy{Backoff: backoff.Schedule{Base: -1}}, "Backoff.Base"},
		{retry.Policy{Backoff: backoff.Schedule{Kind: 7}}, "Backoff.Kind"},
		{retry.Policy{Backoff: backoff.Schedule{Jitter: 9}}, "Backoff.Jitter"},
		{retry.Policy{Backoff: backoff.Schedule{Base: -1}, Env: &retry.Env{}}, "Backoff.Base"},
		{retry.Policy{MaxAttempts: -2, MaxElapsed: time.Second}, "MaxAttempts: -2 out of range"},
	}
	for _, tt := range tests {
		called := false
		err := retry.Do(context.Background(), tt.p, func(context.Context) error { called = true; return nil })
		if err == nil || !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Do(%+v) = %v, want an invalid-policy error containing %q", tt.p, err, tt.want)
		}
		if called {
			t.Errorf("Do(%+v) called fn despite the invalid policy", tt.p)
		}
		if _, err := retry.New(tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.p, err, tt.want)
		}
		if err := tt.p.Validate(); !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want an invalid-policy error", tt.p, err)
		}
		called = false
		if _, err := retry.DoValue(context.Background(), tt.p, func(context.Context) (int, error) { called = true; return 1, nil }); !errors.Is(err, retry.ErrInvalidConfig) || called {
			t.Errorf("DoValue(%+v) = %v (called %v), want an invalid-policy error before any call", tt.p, err, called)
		}
	}
}

func TestDoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		v, err := retry.DoValue(context.Background(), retry.Policy{}, func(context.Context) (string, error) {
			n++
			if n < 2 {
				return "partial", errFlaky
			}
			return "done", nil
		})
		if v != "done" || err != nil {
			t.Errorf("DoValue = %q, %v; want done, nil", v, err)
		}
		n = 0
		v, err = retry.DoValue(context.Background(), retry.Policy{}, func(context.Context) (string, error) {
			n++
			return fmt.Sprint("response ", n), errFlaky
		})
		if v != "response 3" || !errors.Is(err, retry.ErrExhausted) {
			t.Errorf("DoValue = %q, %v; want the last value with the give-up error", v, err)
		}
	})
}

func TestRetrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := retry.New(retry.Policy{MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		fn, calls := failing(5, errFlaky)
		if err := r.Do(context.Background(), fn); !errors.Is(err, retry.ErrExhausted) || calls.Load() != 2 {
			t.Errorf("Retrier.Do = %v after %d calls; want exhausted after 2", err, calls.Load())
		}
		v, err := retry.DoValueWith(context.Background(), r, func(context.Context) (int, error) { return 7, nil })
		if v != 7 || err != nil {
			t.Errorf("DoValueWith = %v, %v", v, err)
		}
		if r.Policy().MaxAttempts != 2 {
			t.Error("Policy() does not return the policy")
		}
	})
}

func TestSingleAttempt(t *testing.T) {
	fn, calls := failing(5, errFlaky)
	ctx := retry.SingleAttempt(context.Background())
	if !retry.IsSingleAttempt(ctx) || retry.IsSingleAttempt(context.Background()) {
		t.Fatal("IsSingleAttempt does not report SingleAttempt")
	}
	err := retry.Do(ctx, retry.Policy{}, fn)
	if e := asError(t, err); e.Reason != retry.ReasonOuterLayer || calls.Load() != 1 || !errors.Is(err, retry.ErrOuterLayer) {
		t.Errorf("got %v after %d calls; want one attempt, outer layer", err, calls.Load())
	}
}

func TestSeededRandIsRepeatable(t *testing.T) {
	run := func() []time.Duration {
		var waits []time.Duration
		seed := uint64(42)
		p := retry.Policy{MaxAttempts: 6, Backoff: backoff.Schedule{Jitter: backoff.Decorrelated},
			OnRetry: func(w retry.Wait) { waits = append(waits, w.Delay) },
			Env: &retry.Env{
				Rand: func() float64 {
					seed = seed*6364136223846793005 + 1442695040888963407
					return float64(seed>>11) / (1 << 53)
				},
			},
		}
		synctest.Test(t, func(t *testing.T) {
			fn, _ := failing(10, errFlaky)
			_ = retry.Do(context.Background(), p, fn)
		})
		return waits
	}
	a, b := run(), run()
	if len(a) != 5 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("two runs with the same seed waited %v and %v", a, b)
	}
	for i := 1; i < len(a); i++ { // decorrelated: each wait in [base, 3·previous)
		if a[i] < 50*time.Millisecond || a[i] >= 3*max(a[i-1], 50*time.Millisecond) {
			t.Errorf("wait %d = %v outside [50ms, 3×%v)", i, a[i], a[i-1])
		}
	}
}

func TestNoAllocationOnSuccess(t *testing.T) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	r, _ := retry.New(retry.Policy{})
	if n := testing.AllocsPerRun(100, func() { _ = retry.Do(ctx, retry.Policy{}, fn) }); n != 0 {
		t.Errorf("Do allocates %v times on success, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.Do(ctx, fn) }); n != 0 {
		t.Errorf("Retrier.Do allocates %v times on success, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		_, _ = retry.DoValue(ctx, retry.Policy{}, func(context.Context) (int, error) { return 1, nil })
	}); n != 0 {
		t.Errorf("DoValue allocates %v times on success, want 0", n)
	}
}

func TestNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, calls := failing(2, errFlaky)
		p, waits := retrytest.NoWait(retry.Policy{Env: &retry.Env{Rand: half}})
		start := time.Now()
		if err := retry.Do(context.Background(), p, fn); err != nil || calls.Load() != 3 {
			t.Fatalf("Do = %v after %d calls", err, calls.Load())
		}
		if got := waits.All(); fmt.Sprint(got) != "[25ms 50ms]" {
			t.Errorf("waits = %v, want [25ms 50ms]", got)
		}
		// It asked for 75ms of waits and took none of them: on the
		// bubble's clock, which moves only when every goroutine waits,
		// no time passed.
		if d := time.Since(start); d != 0 {
			t.Errorf("NoWait still waited %v", d)
		}
	})
}

// guards ---------------------------------------------------------------

type fakeBudget struct {
	mu      sync.Mutex
	allow   bool
	asked   int
	records []string
}

func (b *fakeBudget) AllowRetryAt(now time.Time, timeout bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked++
	return b.allow
}

func (b *fakeBudget) RecordAt(now time.Time, first, success bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records = append(b.records, fmt.Sprintf("first=%v success=%v", first, success))
}

type openError struct{ wait time.Duration }

func (e openError) Error() string             { return "breaker open" }
func (e openError) RetryAfter() time.Duration { return e.wait }

type fakeBreaker struct {
	refuseFrom int // refuse the attempt with this number (0: never)
	n          int
	done       []string
}

func (b *fakeBreaker) AllowAt(now time.Time, retry bool) (uint64, error) {
	b.n++
	if b.refuseFrom != 0 && b.n >= b.refuseFrom {
		return 0, openError{wait: 7 * time.Second}
	}
	return uint64(100 + b.n), nil
}

func (b *fakeBreaker) DoneAt(now time.Time, ticket uint64, elapsed time.Duration, err error) {
	b.done = append(b.done, fmt.Sprintf("ticket=%d err=%v", ticket, err))
}

type fakeThrottle struct {
	wait      time.Duration
	reject    error
	throttled []bool
}

func (t *fakeThrottle) AdmitAt(now time.Time) (time.Duration, error) { return t.wait, t.reject }
func (t *fakeThrottle) RecordAt(now time.Time, throttled bool) {
	t.throttled = append(t.throttled, throttled)
}

type fakeBulkhead struct{ in, max, acquired int }

func (b *fakeBulkhead) Acquire(ctx context.Context) error {
	if b.in == b.max {
		return errors.New("bulkhead full")
	}
	b.in++
	b.acquired++
	return nil
}
func (b *fakeBulkhead) Release() { b.in-- }

func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBudget{allow: false}
		fn, calls := failing(5, errFlaky)
		err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Budget: b}}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonBudgetExhausted || calls.Load() != 1 || !errors.Is(err, errFlaky) || !errors.Is(err, retry.ErrBudgetExhausted) {
			t.Errorf("got %v after %d calls; want budget exhausted with the last error after 1", err, calls.Load())
		}
		if fmt.Sprint(b.records) != "[first=true success=false]" || b.asked != 1 {
			t.Errorf("budget saw %v, asked %d", b.records, b.asked)
		}
		b = &fakeBudget{allow: true}
		fn, _ = failing(1, errFlaky)
		if err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Budget: b}}, fn); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(b.records) != "[first=true success=false first=false success=true]" {
			t.Errorf("budget saw %v", b.records)
		}
	})
}

func TestBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &fakeBreaker{refuseFrom: 2}
		fn, calls := failing(5, errFlaky)
		err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Breaker: b}}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonBreakerOpen || e.Attempts != 1 || calls.Load() != 1 || e.Wait != 7*time.Second {
			t.Errorf("got %+v after %d calls; want breaker open after 1 attempt, next probe in 7s", e, calls.Load())
		}
		if !errors.Is(err, errFlaky) || !errors.Is(err, retry.ErrBreakerOpen) || !strings.Contains(err.Error(), "next probe in 7s") {
			t.Errorf("error %v does not carry the last error and the probe time", err)
		}
		if fmt.Sprint(b.done) != "[ticket=101 err=flaky: connection reset]" {
			t.Errorf("breaker saw %v", b.done)
		}
	})
}

func TestBreakerSeesPanic(t *testing.T) {
	b := &fakeBreaker{}
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want the panic re-raised", r)
		}
		if len(b.done) != 1 || !strings.Contains(b.done[0], "panicked: boom") {
			t.Errorf("breaker saw %v, want the panic as a failure", b.done)
		}
	}()
	_ = retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Breaker: b}}, func(context.Context) error { panic("boom") })
}

func TestThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := &fakeThrottle{wait: 300 * time.Millisecond}
		fn, _ := failing(1, retry.Throttling(errFlaky))
		start := time.Now()
		if err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Throttle: th, Rand: func() float64 { return 0 }}}, fn); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 600*time.Millisecond {
			t.Errorf("elapsed %v, want 2 × 300ms of rate-limit waits", got)
		}
		if fmt.Sprint(th.throttled) != "[true false]" {
			t.Errorf("throttle saw %v, want [true false]", th.throttled)
		}
		th = &fakeThrottle{reject: errors.New("throttle: rejected locally (p=0.8)")}
		fn, calls := failing(0, nil)
		err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Throttle: th}}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonRejectedLocally || calls.Load() != 0 || e.Attempts != 0 || !errors.Is(err, th.reject) {
			t.Errorf("got %v after %d calls; want rejected locally before any attempt", err, calls.Load())
		}
	})
}

func TestBulkhead(t *testing.T) {
	bh := &fakeBulkhead{max: 1}
	fn, _ := failing(1, errFlaky)
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Bulkhead: bh}})
	if err := retry.Do(context.Background(), p, fn); err != nil {
		t.Fatal(err)
	}
	if bh.acquired != 2 || bh.in != 0 {
		t.Errorf("acquired %d, in use %d; want 2 and 0", bh.acquired, bh.in)
	}
	bh.in = 1 // full
	err := retry.Do(context.Background(), p, fn)
	if e := asError(t, err); e.Reason != retry.ReasonRejectedLocally {
		t.Errorf("got %v; want rejected locally", err)
	}
}

func TestObserverEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &retrytest.Recorder{}
		fn, _ := failing(5, retry.After(errFlaky, time.Second))
		_ = retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Observer: rec, Rand: func() float64 { return 0 }}}, fn)
		var kinds []string
		for _, e := range rec.Events() {
			kinds = append(kinds, e.Kind.String())
		}
		want := "attempt_start attempt_end retry_scheduled attempt_start attempt_end retry_scheduled attempt_start attempt_end gave_up"
		if strings.Join(kinds, " ") != want {
			t.Errorf("events\n got %s\nwant %s", strings.Join(kinds, " "), want)
		}
		r := rec.Retries()
		if len(r) != 2 || r[0].Wait != time.Second || r[0].Source != event.ServerHint || r[1].Attempt != 2 {
			t.Errorf("retry events = %+v", r)
		}
		a := rec.Attempts()
		if len(a) != 3 || a[0].Outcome != event.Failure || a[2].Attempt != 3 {
			t.Errorf("attempt events = %+v", a)
		}
		g := rec.Events(event.GaveUp)
		if len(g) != 1 || g[0].Reason != "attempts_exhausted" || g[0].Attempt != 3 || g[0].Duration != 2*time.Second {
			t.Errorf("gave-up event = %+v", g)
		}
	})
}

// A policy that Validate accepts is run, even where the loop's quick
// checks are stricter than Validate (a huge but finite Multiplier).
func TestValidEdgePolicyIsRun(t *testing.T) {
	p := retry.Policy{MaxAttempts: 2, Backoff: backoff.Schedule{Multiplier: 1e301}}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate = %v, want nil", err)
	}
	p, _ = retrytest.NoWait(p)
	fn, calls := failing(5, errFlaky)
	if err := retry.Do(context.Background(), p, fn); !errors.Is(err, retry.ErrExhausted) || calls.Load() != 2 {
		t.Fatalf("Do = %v after %d calls, want exhausted after 2", err, calls.Load())
	}
}

// A ReasonDeadline give-up says which deadline and what it stopped: MaxElapsed
// running out during an attempt, or a throttle's wait that would pass the
// context's deadline.
func TestDeadlineGiveUpSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err := retry.Do(context.Background(), retry.Policy{MaxElapsed: 2 * time.Second}, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		e := asError(t, err)
		if e.Reason != retry.ReasonDeadline || e.Limit != 2*time.Second || e.Wait != 0 {
			t.Fatalf("got %+v, want Deadline with Limit = MaxElapsed (2s) and no wait", e)
		}
		want := "retry: gave up after 1 attempt in 2s: deadline: MaxElapsed 2s passed (context deadline exceeded): last error: context deadline exceeded"
		if err.Error() != want {
			t.Errorf("message\n got %q\nwant %q", err.Error(), want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		th := &fakeThrottle{wait: 2 * time.Second}
		fn, calls := failing(0, nil)
		err := retry.Do(ctx, retry.Policy{Env: &retry.Env{Throttle: th}}, fn)
		e := asError(t, err)
		if e.Reason != retry.ReasonDeadline || e.Wait != 2*time.Second || e.Limit != time.Second || calls.Load() != 0 {
			t.Fatalf("got %+v after %d calls, want Deadline, Wait 2s (the throttle's), Limit 1s, no call", e, calls.Load())
		}
		if !strings.Contains(err.Error(), "deadline: waiting 2s would end after the deadline (1s left)") {
			t.Errorf("message %q does not say why", err)
		}
	})
}

// cancellingThrottle admits every attempt after wait and records the turns
// handed back with CancelAt.
type cancellingThrottle struct {
	fakeThrottle
	cancelled int
}

func (t *cancellingThrottle) CancelAt(time.Time) { t.cancelled++ }

// An attempt the throttle admitted but the loop did not send hands its
// turn back: a rate limiter that reserved it must not lose it.
func TestThrottleTurnHandedBackWhenNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The wait would pass the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		th := &cancellingThrottle{fakeThrottle: fakeThrottle{wait: 2 * time.Second}}
		fn, _ := failing(0, nil)
		if err := retry.Do(ctx, retry.Policy{Env: &retry.Env{Throttle: th}}, fn); !errors.Is(err, retry.ErrDeadline) || th.cancelled != 1 {
			t.Errorf("deadline: err %v, %d turns handed back; want ErrDeadline, 1", err, th.cancelled)
		}
		// The context ends during the wait.
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		th = &cancellingThrottle{fakeThrottle: fakeThrottle{wait: 2 * time.Second}}
		if err := retry.Do(ctx, retry.Policy{Env: &retry.Env{Throttle: th}}, fn); !errors.Is(err, retry.ErrCancelled) || th.cancelled != 1 {
			t.Errorf("cancelled: err %v, %d turns handed back; want ErrCancelled, 1", err, th.cancelled)
		}
		// The breaker refuses the admitted attempt.
		th = &cancellingThrottle{}
		err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Throttle: th, Breaker: &fakeBreaker{refuseFrom: 1}}}, fn)
		if !errors.Is(err, retry.ErrBreakerOpen) || th.cancelled != 1 {
			t.Errorf("breaker: err %v, %d turns handed back; want ErrBreakerOpen, 1", err, th.cancelled)
		}
		// Sent attempts keep their turn.
		th = &cancellingThrottle{fakeThrottle: fakeThrottle{wait: time.Millisecond}}
		fn, _ = failing(1, errFlaky)
		if err := retry.Do(context.Background(), retry.Policy{Env: &retry.Env{Throttle: th}}, fn); err != nil || th.cancelled != 0 {
			t.Errorf("sent: err %v, %d turns handed back; want nil, 0", err, th.cancelled)
		}
	})
}
