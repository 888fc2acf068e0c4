package hedge_test

import (
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// serialAndParallel runs op as two sub-benchmarks: in a loop, and on every
// P. i counts the operations of one goroutine from 1, so that each gets
// instants and latencies of its own.
func serialAndParallel(b *testing.B, op func(i int)) {
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		var i int
		for b.Loop() {
			i++
			op(i)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var i int
			for pb.Next() {
				i++
				op(i)
			}
		})
	})
}

// The estimator's cost: AddAt is on every call's path (one atomic add),
// QuantileAt is read by a Hedger 64 times per window.
func BenchmarkEstimatorAdd(b *testing.B) {
	e := hedge.NewEstimator(10 * time.Second)
	serialAndParallel(b, func(i int) {
		e.AddAt(t0.Add(time.Duration(i)*time.Microsecond), time.Duration(i%4096)*time.Microsecond)
	})
}

func BenchmarkEstimatorQuantile(b *testing.B) {
	e := hedge.NewEstimator(10 * time.Second)
	for i := range 100000 {
		e.AddAt(t0.Add(time.Duration(i)*10*time.Microsecond), time.Duration(1+i%4096)*time.Microsecond)
	}
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		e.QuantileAt(now, 0.97)
	}
}

// What a call that is not hedged pays: PlanAt at its start, ObserveAt at
// its end, with the adaptive delay.
func BenchmarkPlanObserve(b *testing.B) {
	h, _ := hedge.New(hedge.Config{})
	serialAndParallel(b, func(i int) {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		d, _ := h.PlanAt(now)
		lat := time.Duration(1+i%100) * 100 * time.Microsecond
		h.ObserveAt(now.Add(lat), lat, d > 0 && lat > d)
	})
}

// What a hedge pays to be asked for: PlanAt for its call and AllowAt, the
// budget granting about a fifth of the asks (the rest refused).
func BenchmarkPlanAllow(b *testing.B) {
	h, _ := hedge.New(hedge.Config{Delay: time.Millisecond, Budget: 0.2, MinPerSecond: hedge.Off, Brownout: hedge.Off})
	serialAndParallel(b, func(i int) {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		h.PlanAt(now)
		_ = h.AllowAt(now)
	})
}
