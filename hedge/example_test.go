package hedge_test

import (
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// A Hedger's decisions on stepped instants: once it knows enough
// latencies, it hedges after their 97th percentile, within its budget.
func ExampleHedger() {
	h, err := hedge.New(hedge.Config{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 {
		h.PlanAt(now)
		lat := 4 * time.Millisecond // most first attempts take 4 ms...
		if i%100 == 0 {
			lat = time.Second // ...1 % take a second
		}
		h.ObserveAt(now.Add(lat), lat, false)
		now = now.Add(time.Millisecond)
	}
	now = now.Add(time.Second)
	delay, ok := h.PlanAt(now)
	fmt.Printf("hedge after %.1fms: %v\n", delay.Seconds()*1000, ok)
	fmt.Println("first hedge:", h.AllowAt(now))
	// Output:
	// hedge after 4.2ms: true
	// first hedge: <nil>
}

// The estimator alone: the quantiles of the last 10 s of latencies.
func ExampleEstimator() {
	e := hedge.NewEstimator(10 * time.Second)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 100; i++ {
		e.AddAt(now, time.Duration(i)*time.Millisecond)
	}
	p50, n := e.QuantileAt(now, 0.5)
	p99, _ := e.QuantileAt(now, 0.99)
	fmt.Printf("%d latencies: p50 %.0fms, p99 %.0fms\n", n, p50.Seconds()*1000, p99.Seconds()*1000)
	// Output:
	// 100 latencies: p50 50ms, p99 100ms
}
