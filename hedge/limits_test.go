package hedge_test

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// Many calls that ask for a hedge at the same instant are granted no more
// than the budget allows, however their checks interleave.
func TestBudgetConcurrent(t *testing.T) {
	for run := range 50 {
		h := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: 0.05, MinPerSecond: hedge.Off})
		for range 200 {
			h.PlanAt(t0)
		}
		var granted atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Go(func() {
				<-start
				for range 4 {
					if err := h.AllowAt(t0); err == nil {
						granted.Add(1)
					} else if !errors.Is(err, hedge.ErrBudget) {
						t.Errorf("AllowAt: %v", err)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		// 0.05 × 200 = 10.
		if g := granted.Load(); g > 10 {
			t.Fatalf("run %d: %d hedges granted, budget 10", run, g)
		}
		if s := h.StatsAt(t0); s.Hedges > 10 {
			t.Fatalf("run %d: StatsAt counts %d hedges, budget 10", run, s.Hedges)
		}
	}
}

// The adaptive delay follows a rise in latency within the window, and a
// fall within half a window (plus a refresh interval), as documented.
func TestDelayFollowsShift(t *testing.T) {
	h := mustNew(t, hedge.Config{Budget: hedge.Off, Brownout: hedge.Off}) // window 10 s
	now := t0
	run := func(d time.Duration, lat time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(10 * time.Millisecond) { // 100 calls/s
			h.PlanAt(now)
			h.ObserveAt(now, lat, false)
		}
	}
	near := func(got, want time.Duration) bool {
		return math.Abs(float64(got-want)) <= 0.13*float64(want)
	}
	if d, ok := h.PlanAt(now); d != 0 || ok {
		t.Fatalf("no latency known: PlanAt = %v, %v; want 0, false", d, ok)
	}
	run(20*time.Second, 10*time.Millisecond)
	if d := h.DelayAt(now); !near(d, 10*time.Millisecond) {
		t.Fatalf("after 20 s at 10ms: delay %v", d)
	}
	run(10*time.Second, 100*time.Millisecond)
	if d := h.DelayAt(now); !near(d, 100*time.Millisecond) {
		t.Fatalf("after 10 s at 100ms: delay %v", d)
	}
	run(5*time.Second+10*time.Second/64+20*time.Millisecond, 10*time.Millisecond)
	if d := h.DelayAt(now); !near(d, 10*time.Millisecond) {
		t.Fatalf("half a window after the fall: delay %v, want about 10ms", d)
	}
}

// Latencies of 0, below 0 (a clock stepped back) and the longest a
// Duration holds fall in the edge buckets without overflow, and a
// Hedger fed them keeps a delay within the histogram's range.
func TestExtremeLatencies(t *testing.T) {
	e := hedge.NewEstimator(time.Second)
	for _, d := range []time.Duration{math.MinInt64, -time.Second, 0, math.MaxInt64, 1 << 62} {
		e.AddAt(t0, d)
	}
	for _, q := range []float64{0.01, 0.5, 0.99} {
		d, n := e.QuantileAt(t0, q)
		if n != 5 || d < 0 || d > 1<<38 {
			t.Errorf("q%v: %v over %d, want within [0, 2^38ns] over 5", q, d, n)
		}
	}
	h := mustNew(t, hedge.Config{})
	for range hedge.MinSamples {
		h.ObserveAt(t0, math.MaxInt64, false)
	}
	if d := h.DelayAt(t0); d != 1<<38 {
		t.Errorf("every latency huge: delay %v, want %v", d, time.Duration(1<<38))
	}
}

// Observe, Plan, Allow and Quantile from many goroutines at once (run
// with -race).
func TestHedgerConcurrent(t *testing.T) {
	h := mustNew(t, hedge.Config{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := t0.Add(time.Duration(i) * time.Millisecond)
				d, ok := h.PlanAt(now)
				if ok {
					h.AllowAt(now)
				}
				h.ObserveAt(now, time.Duration(g+1)*time.Millisecond, d > 0 && time.Duration(g+1)*time.Millisecond > d)
				h.StatsAt(now)
			}
		})
	}
	wg.Wait()
	if d := h.DelayAt(t0.Add(2 * time.Second)); d <= 0 || d > 9*time.Millisecond {
		t.Errorf("delay %v, want within the latencies seen", d)
	}
}

// A quantile asked outside (0, 1) is clamped: 0 and below (NaN too) give
// the bottom of the lowest latency's bucket, 1 and above the top of the
// highest's. q = 1 gave 275 s (the histogram's top) for latencies of at
// most 100 ms, q = -1 a negative latency, q = -Inf the most negative
// Duration.
func TestQuantileOutOfRange(t *testing.T) {
	e := hedge.NewEstimator(time.Second)
	for i := 1; i <= 100; i++ {
		e.AddAt(t0, time.Duration(i)*time.Millisecond)
	}
	lo, _ := e.QuantileAt(t0, 0)
	if lo <= 0 || lo > time.Millisecond {
		t.Fatalf("q0 = %v, want the bottom of 1ms's bucket", lo)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration // within the bucket's 12.5 %
	}{
		{math.NaN(), lo}, {-1, lo}, {math.Inf(-1), lo},
		{1, 100 * time.Millisecond}, {2, 100 * time.Millisecond}, {math.Inf(1), 100 * time.Millisecond},
	} {
		d, n := e.QuantileAt(t0, c.q)
		if n != 100 || d < c.want || float64(d) > 1.125*float64(c.want) {
			t.Errorf("q%v = %v over %d latencies, want %v (to its bucket's top) over 100", c.q, d, n, c.want)
		}
	}
}
