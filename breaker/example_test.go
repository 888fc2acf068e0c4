package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/retry"
)

// The guard types implement retry's interface without importing retry.
var _ retry.Breaker = (*breaker.Breaker)(nil)

// A breaker that trips after 3 failures in a row, driven on stepped
// instants: open for 10 s, then one probe closes it.
func Example() {
	b, err := breaker.New(breaker.Config{
		Name:                "inventory",
		ConsecutiveFailures: 3,
		OpenTimeout:         10 * time.Second,
		OpenJitter:          breaker.Disabled,
		OnStateChange: func(name string, from, to breaker.State) {
			fmt.Printf("%s: %v → %v\n", name, from, to)
		},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := errors.New("connection refused")
	for i := 0; i < 3; i++ {
		t, _ := b.AllowAt(now, false)
		b.DoneAt(now, t, 5*time.Millisecond, down)
	}
	_, err = b.AllowAt(now.Add(4*time.Second), false)
	fmt.Println(err)
	fmt.Println(errors.Is(err, breaker.ErrOpen))

	probe, err := b.AllowAt(now.Add(10*time.Second), false)
	fmt.Println("probe allowed:", err == nil)
	b.DoneAt(now.Add(10*time.Second), probe, 5*time.Millisecond, nil)
	// Output:
	// inventory: closed → open
	// breaker: "inventory" open after 1 trip: call refused, next probe in 6s (tripped by: connection refused)
	// true
	// inventory: open → half_open
	// probe allowed: true
	// inventory: half_open → closed
}

// Execute wraps a closure; the two-step Allow/Done serves code that is not
// one (a RoundTripper, a callback API).
func ExampleBreaker_Execute() {
	b, _ := breaker.New(breaker.Config{ConsecutiveFailures: 5, OpenTimeout: time.Hour})
	err := b.Execute(context.Background(), func(ctx context.Context) error {
		return nil // call the dependency here
	})
	fmt.Println(err)

	p, err := b.Allow()
	if err == nil {
		p.Done(nil) // the call's error
	}
	fmt.Println(b.State())
	// Output:
	// <nil>
	// closed
}

// Through retry: an open breaker ends the loop at once with the reason
// "breaker open" and the time until the next probe.
func ExampleBreaker_retry() {
	b, _ := breaker.New(breaker.Config{ConsecutiveFailures: 2, OpenTimeout: time.Minute, OpenJitter: breaker.Disabled})
	p := retry.Policy{MaxAttempts: 5, Env: &retry.Env{Breaker: b, Sleep: func(context.Context, time.Duration) error { return nil }}}
	attempts := 0
	err := retry.Do(context.Background(), p, func(context.Context) error {
		attempts++
		return errors.New("503 service unavailable")
	})
	var e *retry.Error
	errors.As(err, &e)
	fmt.Println(attempts, e.Reason, errors.Is(err, breaker.ErrOpen), e.Wait > 59*time.Second)
	// Output:
	// 2 breaker open true true
}
