package backoff

import (
	"math"
	"testing"
	"time"
)

// A Schedule that Validate refuses (a negative Base or Cap, a Multiplier
// of 1 or NaN) still gives delays in range to a caller that did not
// validate it, and its Bounds say what Delay gives: Bounds reported
// negative delays (Min -1ns, a Mean of minus an hour at retry 70 for a
// decorrelated schedule with Base -1ns) that Delay never returns.
func TestBoundsOfInvalidSchedule(t *testing.T) {
	for _, s := range []Schedule{
		{Jitter: Decorrelated, Base: -1},
		{Jitter: Decorrelated, Cap: -1},
		{Jitter: Decorrelated, Base: -time.Hour, Cap: time.Second},
		{Jitter: Full, Cap: -1},
		{Jitter: Equal, Base: -5, Cap: 10},
		{Jitter: None, Kind: Linear, Base: -time.Second},
		{Jitter: None, Multiplier: 1, Base: time.Second},
		{Jitter: Full, Multiplier: math.NaN(), Base: time.Second},
	} {
		for _, n := range []int{1, 2, 70, math.MaxInt} {
			b := s.Bounds(n)
			if b.Min < 0 || b.Min > b.Mean || b.Mean > b.Max {
				t.Errorf("%+v: Bounds(%d) = %+v, want 0 ≤ Min ≤ Mean ≤ Max", s, n, b)
			}
			if p := s.Plan(n % 100); n%100 > 0 && p[len(p)-1] != s.Bounds(n%100) {
				t.Errorf("%+v: Plan(%d) ends with %+v, want Bounds(%d) = %+v", s, n%100, p[len(p)-1], n%100, s.Bounds(n%100))
			}
			for _, u := range []float64{0, 0.5, 1 - 0x1p-53} {
				prev := b.Max
				if d := s.Delay(n, prev, u); d < b.Min || d > b.Max {
					t.Errorf("%+v: Delay(%d, %v, %v) = %v, outside its Bounds %+v", s, n, prev, u, d, b)
				}
			}
		}
	}
}
