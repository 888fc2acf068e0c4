package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

func ExampleDo() {
	calls := 0
	callPartner := func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("connection reset by peer")
		}
		return nil
	}
	p := retry.Policy{
		OnRetry: func(w retry.Wait) {
			fmt.Printf("attempt %d failed (%v); waiting %v (%s)\n", w.Attempt, w.Err, w.Delay, w.Source)
		},
		Env: &retry.Env{
			Rand: func() float64 { return 0.5 }, // a fixed draw, for a repeatable example
		},
	}
	err := retry.Do(context.Background(), p, callPartner)
	fmt.Println("err:", err, "calls:", calls)
	// Output:
	// attempt 1 failed (connection reset by peer); waiting 25ms (backoff)
	// attempt 2 failed (connection reset by peer); waiting 50ms (backoff)
	// err: <nil> calls: 3
}

func ExampleDo_gaveUp() {
	err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		// The server asked for more than MaxRetryAfter (60 s): no wait at all.
		return retry.After(errors.New("429 too many requests"), 2*time.Minute)
	})
	var e *retry.Error
	if errors.As(err, &e) {
		fmt.Println(e.Attempts, "attempt,", e.Reason, "- asked to wait", e.Wait)
	}
	fmt.Println(errors.Is(err, retry.ErrHintTooLong))
	// Output:
	// 1 attempt, hint too long - asked to wait 2m0s
	// true
}

func ExampleDoValue() {
	n := 0
	v, err := retry.DoValue(context.Background(), retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0 }}},
		func(ctx context.Context) (string, error) {
			n++
			if n == 1 {
				return "", errors.New("503 service unavailable")
			}
			return "balance: 42", nil
		})
	fmt.Println(v, err)
	// Output: balance: 42 <nil>
}

func ExamplePermanent() {
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		calls++
		return retry.Permanent(errors.New("404 not found"))
	})
	var e *retry.Error
	errors.As(err, &e)
	fmt.Printf("%d call; %v: %v\n", calls, e.Reason, e.Last)
	// Output: 1 call; permanent error: 404 not found
}

// One Env per dependency, shared by every policy that calls it: here a
// retry budget that earns 20 % of the successes, without a floor, so that
// the counts are easy to follow. Sleep skips the waits, as a test would.
func ExampleEnv() {
	share, _ := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor})
	inventory := &retry.Env{
		Budget: share,
		Sleep:  func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}
	reads := retry.Policy{Env: inventory}
	writes := retry.Policy{MaxAttempts: 2, Env: inventory}
	ctx := context.Background()

	for range 10 { // 10 successes earn 2 retries
		_ = retry.Do(ctx, reads, func(context.Context) error { return nil })
	}
	down := func(context.Context) error { return errors.New("503 service unavailable") }
	var e *retry.Error
	errors.As(retry.Do(ctx, writes, down), &e) // takes 1 retry
	fmt.Printf("writes: %d attempts, %v\n", e.Attempts, e.Reason)
	errors.As(retry.Do(ctx, reads, down), &e) // takes the last, then is refused
	fmt.Printf("reads: %d attempts, %v\n", e.Attempts, e.Reason)
	fmt.Printf("retries left: %.0f\n", share.Level())
	// Output:
	// writes: 2 attempts, attempts exhausted
	// reads: 2 attempts, budget exhausted
	// retries left: 0
}
