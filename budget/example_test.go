package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

// A share-of-traffic budget without a floor: 10 requests that succeeded
// allow 2 retries; failed requests earn none.
func ExampleShare() {
	b, err := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		b.RecordAt(now, true, true)  // ten first attempts that succeeded
		b.RecordAt(now, true, false) // and ten that failed
	}
	for i := 0; i < 3; i++ {
		fmt.Println(b.AllowRetryAt(now, false), b.LevelAt(now))
	}
	// Output:
	// true 1
	// true 0
	// false 0
}

// The AWS SDKs' retry quota (2026 behaviour): 500 tokens, 14 per retry, 5
// after a throttling answer; the retry loop says which through
// AllowRetryClassAt.
func ExampleBucket() {
	b, _ := budget.NewBucket(budget.BucketConfig{})
	now := time.Now()
	b.AllowRetryClassAt(now, false, false) // after a 500: -14
	b.AllowRetryClassAt(now, true, false)  // after a 429: -5
	fmt.Println(b.Level())
	b.RecordAt(now, false, true) // a retry succeeded: +14
	fmt.Println(b.Level())
	// Output:
	// 481
	// 495
}

// gRPC's retry throttling: retries stop once half of the tokens are gone.
func ExampleGRPC() {
	b, _ := budget.NewGRPC(budget.GRPCConfig{MaxTokens: 4, TokenRatio: 0.5})
	now := time.Now()
	for i := 0; i < 3; i++ {
		b.RecordAt(now, true, false) // a failed attempt takes a token
		fmt.Println(b.Level(), b.AllowRetryAt(now, false))
	}
	// Output:
	// 3 true
	// 2 false
	// 1 false
}

// yaoki's default budget against a dependency that answers nothing: the
// first call gets its 3 attempts, later calls their first attempt only;
// nothing refuses a first attempt, so the calls see the dependency come
// back.
func ExampleRecommended() {
	b, _ := budget.NewGRPC(budget.Recommended())
	p := retry.Policy{Env: &retry.Env{Budget: b, Sleep: func(context.Context, time.Duration) error { return nil }}}
	for call := 1; call <= 3; call++ {
		attempts := 0
		err := retry.Do(context.Background(), p, func(context.Context) error {
			attempts++
			return errors.New("connection refused")
		})
		fmt.Printf("call %d: %d attempts, budget exhausted: %v\n", call, attempts, errors.Is(err, retry.ErrBudgetExhausted))
	}
	// Output:
	// call 1: 3 attempts, budget exhausted: false
	// call 2: 1 attempts, budget exhausted: true
	// call 3: 1 attempts, budget exhausted: true
}

// A budget shared by every call to one dependency, through retry.Policy:
// the calls that succeed earn retries for the others; once those are spent,
// a failed call ends at once with the reason "budget exhausted" and its
// last error.
func ExampleShare_retry() {
	b, _ := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor, Ratio: 0.5})
	p := retry.Policy{Env: &retry.Env{Budget: b, Sleep: func(context.Context, time.Duration) error { return nil }}}
	down := errors.New("connection refused")
	for call := 1; call <= 5; call++ {
		attempts := 0
		err := retry.Do(context.Background(), p, func(context.Context) error {
			attempts++
			if call <= 2 {
				return nil // the dependency is up: 2 successes earn 1 retry
			}
			return down
		})
		fmt.Printf("call %d: %d attempts, budget exhausted: %v\n", call, attempts, errors.Is(err, retry.ErrBudgetExhausted))
	}
	// Output:
	// call 1: 1 attempts, budget exhausted: false
	// call 2: 1 attempts, budget exhausted: false
	// call 3: 2 attempts, budget exhausted: true
	// call 4: 1 attempts, budget exhausted: true
	// call 5: 1 attempts, budget exhausted: true
}
