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
