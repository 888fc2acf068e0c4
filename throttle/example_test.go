package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// The guard types implement retry's interfaces without importing retry.
var (
	_ retry.Throttle = (*throttle.Adaptive)(nil)
	_ retry.Throttle = (*throttle.Cubic)(nil)
	// Cubic reserves a token per admitted request: it takes back the
	// tokens of requests that were not sent.
	_ retry.ThrottleCanceller = (*throttle.Cubic)(nil)
	_ retry.Bulkhead          = (*throttle.Bulkhead)(nil)
)

// Adaptive throttling: after a backend accepted 3 of 10 requests, the
// client rejects locally with probability (10 − 2·3)/(10 + 1).
func ExampleAdaptive() {
	draw := 0.2 // a fixed "random" draw, for a repeatable example
	a, _ := throttle.NewAdaptive(throttle.AdaptiveConfig{Rand: func() float64 { return draw }})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		a.RecordAt(now, i >= 3) // 429 for all but the first three
	}
	fmt.Printf("p = %.3f\n", a.ProbabilityAt(now))
	_, err := a.AdmitAt(now)
	fmt.Println(errors.Is(err, throttle.ErrThrottled), err)
	// Output:
	// p = 0.364
	// true throttle: rejected locally with probability 0.36: the dependency accepted 3 of the last 11 requests
}

// After 5 minutes in which a dependency answered every request with 429, a
// client of 10 requests/s comes back within a minute with the defaults
// (rejection probability at most 0.99, a local rejection counted as a
// tenth of a request); with the book's formula unchanged it keeps
// rejecting many of its calls for minutes.
func ExampleAdaptiveConfig() {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	back := start.Add(5 * time.Minute) // the dependency recovers
	for _, c := range []struct {
		name string
		cfg  throttle.AdaptiveConfig
	}{
		{"defaults", throttle.AdaptiveConfig{}},
		{"the book", throttle.AdaptiveConfig{MaxProbability: 1, RejectionWeight: 1}},
	} {
		c.cfg.Rand = rand.New(rand.NewPCG(0, 7)).Float64 // repeatable draws: seed 0 of docs/overload.md's table
		a, _ := throttle.NewAdaptive(c.cfg)
		now := start
		for ; now.Before(back) || a.ProbabilityAt(now) >= 0.1; now = now.Add(100 * time.Millisecond) {
			if _, err := a.AdmitAt(now); err == nil {
				a.RecordAt(now, now.Before(back)) // 429 until back, then accepted
			}
		}
		fmt.Printf("%s: below 0.1 %v after the dependency recovered\n", c.name, now.Sub(back).Round(10*time.Second))
	}
	// Output:
	// defaults: below 0.1 40s after the dependency recovered
	// the book: below 0.1 7m10s after the dependency recovered
}

// The AWS SDKs' adaptive mode: nothing is limited until the first 429; then
// the rate drops to 70 % of what was being sent and requests are told how
// long to wait.
func ExampleCubic() {
	c, _ := throttle.NewCubic(throttle.CubicConfig{})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ { // 20 requests/s for 5 s, all fine
		now = now.Add(50 * time.Millisecond)
		c.RecordAt(now, false)
	}
	c.RecordAt(now, true) // 429
	rate, limiting := c.RateAt(now)
	fmt.Printf("limiting %v at %.1f requests/s\n", limiting, rate)
	var waits []time.Duration
	for i := 0; i < 16; i++ {
		w, _ := c.AdmitAt(now)
		waits = append(waits, w.Round(time.Millisecond))
	}
	fmt.Println(waits[13:])
	// Output:
	// limiting true at 14.0 requests/s
	// [0s 71ms 143ms]
}

// A bulkhead of two slots: the third concurrent call is refused at once.
func ExampleBulkhead() {
	b, _ := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 2})
	ctx := context.Background()
	fmt.Println(b.Acquire(ctx), b.Acquire(ctx))
	fmt.Println(b.Acquire(ctx))
	b.Release()
	b.Release()
	fmt.Println(b.InUse())
	// Output:
	// <nil> <nil>
	// throttle: bulkhead full: 2 calls in flight, the limit
	// 0
}
