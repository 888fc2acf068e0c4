package retry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// countingStepper waits 10 ms·n before retry n and allows two retries.
type countingStepper struct{ n int }

func (s *countingStepper) Step(attempt int, err error, class retry.Class, u float64) (time.Duration, bool) {
	s.n++
	return time.Duration(s.n) * 10 * time.Millisecond, s.n <= 2
}

func TestStepperDecidesWaitsPerCall(t *testing.T) {
	made := 0
	p, waits := retrytest.NoWait(retry.Policy{MaxAttempts: 10, Stepper: func() retry.Stepper {
		made++
		return &countingStepper{}
	}})
	boom := errors.New("boom")
	// Success on the first attempt: no Stepper is made.
	if err := retry.Do(context.Background(), p, func(context.Context) error { return nil }); err != nil || made != 0 {
		t.Fatalf("success: err %v, %d steppers made; want nil, 0", err, made)
	}
	for call := 1; call <= 2; call++ {
		script := retrytest.Script(boom, boom, boom, boom)
		err := retry.Do(context.Background(), p, script.Func())
		if script.Calls() != 3 || !errors.Is(err, retry.ErrExhausted) {
			t.Fatalf("call %d: %d attempts, err %v; want 3 attempts (the stepper allows 2 retries), exhausted", call, script.Calls(), err)
		}
		if made != call {
			t.Fatalf("call %d: %d steppers made, want one per call", call, made)
		}
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}
	if got := waits.All(); !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	// A server hint replaces the stepper's wait, and the stepper still counts.
	script := retrytest.Script(retry.After(boom, time.Second), boom, boom)
	p, waits = retrytest.NoWait(p)
	p.Env.Rand = func() float64 { return 0 } // NoWait gave p an Env of its own
	err := retry.Do(context.Background(), p, script.Func())
	if got := waits.All(); !errors.Is(err, retry.ErrExhausted) || !slices.Equal(got, []time.Duration{time.Second, 20 * time.Millisecond}) {
		t.Fatalf("hint: waits %v, err %v; want [1s 20ms], exhausted", got, err)
	}
}

// pickyStepper retries only the errors it lists, twice in all, 10 ms
// apart; Matches says which errors those are.
type pickyStepper struct {
	retries []error
	steps   int
}

func (s *pickyStepper) Matches(err error) bool {
	for _, r := range s.retries {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

func (s *pickyStepper) Step(attempt int, err error, class retry.Class, u float64) (time.Duration, bool) {
	s.steps++
	return 10 * time.Millisecond, s.steps <= 2
}

// A Stepper with a Matches method ends the call as permanent at an error it
// does not match, before the attempt limit and the outer layer are
// considered and without asking Step; the errors it matches end as
// exhausted when Step says so.
func TestStepperMatches(t *testing.T) {
	boom, other := errors.New("boom"), errors.New("other")
	var st *pickyStepper
	policy := func(max int) (retry.Policy, *retrytest.Recorder) {
		rec := &retrytest.Recorder{}
		p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: max, Env: &retry.Env{Observer: rec},
			Stepper: func() retry.Stepper { st = &pickyStepper{retries: []error{boom}}; return st }})
		return p, rec
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		max    int
		script []error
		calls  int
		reason retry.Reason
		steps  int
	}{
		{"unmatched", context.Background(), 10, []error{other}, 1, retry.ReasonPermanent, 0},
		{"unmatched after a retry", context.Background(), 10, []error{boom, other}, 2, retry.ReasonPermanent, 1},
		{"unmatched on the last attempt", context.Background(), 2, []error{boom, other}, 2, retry.ReasonPermanent, 1},
		{"unmatched under an outer layer", retry.SingleAttempt(context.Background()), 10, []error{other}, 1, retry.ReasonPermanent, 0},
		{"matched, Step ends it", context.Background(), 10, []error{boom, boom, boom, boom}, 3, retry.ReasonExhausted, 3},
		{"matched, the limit ends it", context.Background(), 2, []error{boom, boom}, 2, retry.ReasonExhausted, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := policy(tc.max)
			st = nil
			script := retrytest.Script(tc.script...)
			err := retry.Do(tc.ctx, p, script.Func())
			e := asError(t, err)
			last := tc.script[len(tc.script)-1]
			if script.Calls() != tc.calls || e.Reason != tc.reason || !errors.Is(err, last) {
				t.Fatalf("%d calls, err %v; want %d calls, %v, with %v underneath", script.Calls(), err, tc.calls, tc.reason, last)
			}
			if !strings.Contains(err.Error(), ": "+tc.reason.String()+": last error: "+last.Error()) {
				t.Errorf("message %q; want it to say %v", err, tc.reason)
			}
			if st == nil || st.steps != tc.steps {
				t.Errorf("stepper %+v; want Step asked %d times", st, tc.steps)
			}
			gaveUp := rec.Events(event.GaveUp)
			if len(gaveUp) != 1 || gaveUp[0].Reason != tc.reason.Key() {
				t.Errorf("GaveUp events %+v; want one with reason %q", gaveUp, tc.reason.Key())
			}
			want := event.Failure
			if tc.reason == retry.ReasonPermanent {
				want = event.Rejected
			}
			if a := rec.Attempts(); len(a) != tc.calls || a[len(a)-1].Outcome != want {
				t.Errorf("AttemptEnd events %+v; want %d, the last %v", a, tc.calls, want)
			}
		})
	}
	// An attempt that ran past AttemptTimeout is not shown to the
	// classifier, but a Stepper that does not match it ends the call as
	// permanent, the timeout underneath.
	synctest.Test(t, func(t *testing.T) {
		classified := false
		p := retry.Policy{MaxAttempts: 5, AttemptTimeout: time.Second,
			Classify: func(error) retry.Class { classified = true; return retry.ClassTransient },
			Stepper:  func() retry.Stepper { return &pickyStepper{retries: []error{boom}} }}
		calls := 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			if calls++; calls == 1 {
				return boom
			}
			<-ctx.Done()
			return ctx.Err()
		})
		e := asError(t, err)
		if calls != 2 || e.Reason != retry.ReasonPermanent || !errors.Is(err, retry.ErrAttemptTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d calls, err %v; want 2 calls, permanent, the attempt's timeout underneath", calls, err)
		}
		if !classified {
			t.Error("boom was not classified")
		}
	})
}
