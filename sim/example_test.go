package sim_test

import (
	"fmt"

	"github.com/yaoki-go/yaoki/sim"
)

// Against a server that fails every attempt, three immediate retries
// quadruple the load, while the 2022 post's retry breaker adds nothing.
func Example() {
	sweep := sim.OutageSweep{FailureRates: []float64{0, 1}, Runs: 1}
	points, err := sweep.Run(sim.OutageAnchors())
	if err != nil {
		panic(err)
	}
	for _, p := range points {
		fmt.Printf("%-12s p=%.0f success %5.1f%%  attempts per call %.2f\n",
			p.Policy, p.FailureRate, 100*p.Success.Mean, p.Amplification.Mean)
	}
	// Output:
	// no retries   p=0 success 100.0%  attempts per call 1.00
	// no retries   p=1 success   0.0%  attempts per call 1.00
	// 3 retries    p=0 success 100.0%  attempts per call 1.00
	// 3 retries    p=1 success   0.0%  attempts per call 4.00
	// token bucket p=0 success 100.0%  attempts per call 1.00
	// token bucket p=1 success   0.0%  attempts per call 1.14
	// breaker      p=0 success 100.0%  attempts per call 1.00
	// breaker      p=1 success   0.0%  attempts per call 1.00
}

// A limiter of 100 calls per 1 s window answers the calls it refuses 429
// with "Retry-After: 0". Retried at once, a refused call meets the window
// that refused it; yaoki's backoff (from 1 s for a 429) moves it to a
// later one. Each cell: the share of calls that succeeded, and the
// attempts per call; 10 runs of 20 s per point (the table of
// docs/simulator.md).
func ExampleRateLimitSweep() {
	policies := append(sim.RateLimitPolicies(), sim.Retries(2))
	loads := []float64{0.9, 1, 1.1, 1.25, 1.5, 2}
	sweep := sim.RateLimitSweep{Loads: loads, Runs: 10, Seed: 2026, Workers: 2}
	points, err := sweep.Run(policies)
	if err != nil {
		panic(err)
	}
	for li, load := range loads {
		fmt.Printf("| %.2f |", load)
		for pi := range policies {
			p := points[pi*len(loads)+li]
			fmt.Printf(" %.1f %%, %.2f |", 100*p.Success.Mean, p.Amplification.Mean)
		}
		fmt.Println()
	}
	// Output:
	// | 0.90 | 100.0 %, 1.01 | 99.7 %, 1.01 | 99.4 %, 1.00 | 99.7 %, 1.01 |
	// | 1.00 | 98.6 %, 1.09 | 97.0 %, 1.06 | 96.3 %, 1.00 | 97.3 %, 1.08 |
	// | 1.10 | 90.7 %, 1.09 | 89.9 %, 1.07 | 89.8 %, 1.00 | 90.3 %, 1.24 |
	// | 1.25 | 79.5 %, 1.03 | 79.4 %, 1.02 | 79.4 %, 1.00 | 79.6 %, 1.46 |
	// | 1.50 | 66.7 %, 1.02 | 66.7 %, 1.01 | 66.7 %, 1.00 | 66.9 %, 1.72 |
	// | 2.00 | 50.4 %, 1.01 | 50.4 %, 1.01 | 50.4 %, 1.00 | 50.6 %, 2.05 |
}
