package hedge_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// exact returns the q-quantile of xs (sorted in place) by rank.
func exact(xs []time.Duration, q float64) time.Duration {
	slices.Sort(xs)
	return xs[int(q*float64(len(xs)))]
}

// The estimate is within a few per cent of the exact quantile on the
// shapes latencies take: a heavy tail, a narrow body, a bimodal mix. A
// bucket is at most 12.5 % wide; interpolating inside it keeps the error
// under 8 % (the worst cases are the last latencies of a bounded shape,
// where the bucket is not evenly filled).
func TestQuantileAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []struct {
		name string
		draw func() time.Duration
	}{
		{"exponential 5ms", func() time.Duration { return time.Duration(r.ExpFloat64() * 5e6) }},
		{"lognormal median 20ms", func() time.Duration { return time.Duration(2e7 * math.Exp(0.8*r.NormFloat64())) }},
		{"uniform 100µs-200µs", func() time.Duration { return time.Duration(1e5 + r.Float64()*1e5) }},
		{"99% 2ms, 1% 1s", func() time.Duration {
			if r.Float64() < 0.01 {
				return time.Second + time.Duration(r.Float64()*1e8)
			}
			return time.Duration(1e6 + r.ExpFloat64()*1e6)
		}},
	}
	for _, s := range shapes {
		e := hedge.NewEstimator(10 * time.Second)
		xs := make([]time.Duration, 20000)
		for i := range xs {
			xs[i] = s.draw()
			e.AddAt(t0.Add(time.Duration(i)*100*time.Microsecond), xs[i])
		}
		now := t0.Add(2 * time.Second)
		for _, q := range []float64{0.5, 0.9, 0.95, 0.97, 0.99, 0.999} {
			got, n := e.QuantileAt(now, q)
			want := exact(xs, q)
			if n != len(xs) {
				t.Fatalf("%s: %d latencies counted, want %d", s.name, n, len(xs))
			}
			if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.08 {
				t.Errorf("%s: q%.3f = %v, exact %v (off by %.1f%%, want ≤ 8%%)", s.name, q, got, want, 100*rel)
			}
		}
	}
}

// The estimate follows the latencies of the last window: on stepped
// instants, a shift from 10 ms to 100 ms latencies shows once the old ones
// have slid out, and an empty window says so.
func TestQuantileWindow(t *testing.T) {
	e := hedge.NewEstimator(4 * time.Second) // slides in steps of 1 s
	if d, n := e.QuantileAt(t0, 0.5); d != 0 || n != 0 {
		t.Fatalf("empty estimator: got %v over %d, want 0 over 0", d, n)
	}
	for i := range 100 {
		e.AddAt(t0.Add(time.Duration(i)*10*time.Millisecond), 10*time.Millisecond) // during [0 s, 1 s)
	}
	for i := range 300 {
		e.AddAt(t0.Add(2*time.Second+time.Duration(i)*time.Millisecond), 100*time.Millisecond) // [2 s, 2.3 s)
	}
	steps := []struct {
		at    time.Duration
		n     int
		slow  bool // the median is the 100 ms latencies
		about time.Duration
	}{
		{at: 2500 * time.Millisecond, n: 400, slow: true},
		{at: 3999 * time.Millisecond, n: 400, slow: true}, // the first second is still in the window
		{at: 4 * time.Second, n: 300, slow: true},         // it slid out
		{at: 5999 * time.Millisecond, n: 300, slow: true}, // the third second is in
		{at: 6 * time.Second, n: 0},                       // all gone
	}
	for _, s := range steps {
		d, n := e.QuantileAt(t0.Add(s.at), 0.5)
		if n != s.n {
			t.Errorf("at %v: %d latencies in the window, want %d", s.at, n, s.n)
		}
		if s.slow && (d < 90*time.Millisecond || d > 110*time.Millisecond) {
			t.Errorf("at %v: median %v, want about 100ms", s.at, d)
		}
	}
	d, _ := e.QuantileAt(t0.Add(1500*time.Millisecond), 0.1)
	if d < 9*time.Millisecond || d > 11*time.Millisecond {
		t.Errorf("at 1.5s: q0.1 %v, want about 10ms", d)
	}
}

// Latencies beyond the histogram's range are counted in its edge buckets.
func TestQuantileEdges(t *testing.T) {
	e := hedge.NewEstimator(time.Second)
	e.AddAt(t0, 0)
	e.AddAt(t0, 500*time.Second)
	if d, n := e.QuantileAt(t0, 0.9); n != 2 || d != 1<<38 {
		t.Errorf("q0.9 of {0, 500s}: got %v over %d, want %v over 2", d, n, time.Duration(1<<38))
	}
	if d, _ := e.QuantileAt(t0, 0.4); d >= time.Microsecond*2 {
		t.Errorf("q0.4 of {0, 500s}: got %v, want below 2µs", d)
	}
}
