package retry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

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
