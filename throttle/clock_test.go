package throttle

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// TestAdaptiveClockStepsBack: the clock steps back (an NTP correction) by
// more than two windows while the dependency throttles everything. The
// outcomes after the step are counted, so the throttle keeps shedding
// instead of admitting everything until the clock catches up.
func TestAdaptiveClockStepsBack(t *testing.T) {
	for _, back := range []time.Duration{5 * time.Minute, 5 * time.Hour} {
		a, err := NewAdaptive(AdaptiveConfig{Rand: fixed(0.5)})
		if err != nil {
			t.Fatal(err)
		}
		// A healthy dependency over one window: every bucket holds counts.
		for i := range 1200 {
			a.RecordAt(at(time.Duration(i)*100*time.Millisecond), false)
		}
		// After the step, the dependency throttles everything for a
		// window's time.
		start := at(2*time.Minute - back)
		sent := 0
		for i := range 1200 {
			now := start.Add(time.Duration(i) * 100 * time.Millisecond)
			if _, err := a.AdmitAt(now); err == nil {
				sent++
				a.RecordAt(now, true)
			}
		}
		if p := a.ProbabilityAt(start.Add(2 * time.Minute)); p < 0.9 || sent > 10 {
			t.Errorf("clock stepped back %v, every answer throttled: %d of 1200 sent, rejection probability %.3f, want a few and ≥ 0.9", back, sent, p)
		}
	}
}

// TestCubicClockStepsBack: the clock steps back by an hour while the limiter
// limits. Tokens keep refilling at the current rate and the rate grows back
// after successes, instead of every request being refused until the clock
// reaches the instants seen before the step.
func TestCubicClockStepsBack(t *testing.T) {
	c, err := NewCubic(CubicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := send(c, t0, 10*time.Second, 1000) // 100 requests/s
	c.RecordAt(now, true)                    // throttled: limiting from here
	rate, limiting := c.RateAt(now)
	if !limiting || rate < 50 {
		t.Fatalf("after the throttle: rate %v, limiting %v; want ~70/s and limiting", rate, limiting)
	}
	now = now.Add(-time.Hour)
	admitted := 0
	for i := range 600 { // 60 s of calls, 10 per second, all answered at once
		at := now.Add(time.Duration(i) * 100 * time.Millisecond)
		if w, err := c.AdmitAt(at); err == nil && w == 0 {
			admitted++
			c.RecordAt(at, false)
		}
	}
	if admitted < 590 {
		t.Errorf("clock stepped back 1h, 10 requests/s well under the rate: %d of 600 admitted without waiting", admitted)
	}
}

// TestCubicClockFaults: zero, out-of-order and far-future instants neither
// panic nor leave a rate that is not a positive number.
func TestCubicClockFaults(t *testing.T) {
	c, _ := NewCubic(CubicConfig{})
	for i, now := range []time.Time{{}, t0, t0.Add(-time.Millisecond), t0.Add(1000 * 24 * time.Hour), t0, {}, time.Unix(1<<40, 0)} {
		c.RecordAt(now, i%2 == 0)
		_, _ = c.AdmitAt(now)
		c.CancelAt(now)
		if r, _ := c.RateAt(now); !(r > 0) || r != r {
			t.Fatalf("after instant %d (%v): rate %v", i, now, r)
		}
	}
	a, _ := NewAdaptive(AdaptiveConfig{})
	for _, now := range []time.Time{{}, t0, time.Unix(1<<40, 0), t0.Add(-time.Hour)} {
		a.RecordAt(now, true)
		_, _ = a.AdmitAt(now)
		if p := a.ProbabilityAt(now); p < 0 || p > 1 {
			t.Fatalf("probability %v at %v", p, now)
		}
	}
}

// TestBulkheadCancelledWhileWaiting: a caller whose context ends while it
// waits for a slot gets the context's error and holds no slot; the slot
// freed later goes to the next caller.
func TestBulkheadCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBulkhead(BulkheadConfig{Limit: 1, MaxWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			if err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire while full, context ending after 1 s: %v", err)
			}
			cancel()
		}
		if n := b.InUse(); n != 1 {
			t.Fatalf("in use %d after 100 abandoned waits, want 1", n)
		}
		b.Release()
		if err := b.Acquire(t.Context()); err != nil {
			t.Fatalf("after the release: %v", err)
		}
		b.Release()
		defer func() {
			if recover() == nil {
				t.Error("Release without Acquire: no panic (documented)")
			}
		}()
		b.Release()
	})
}

// TestAdaptiveKExtremes: with K = 1 a dependency that accepts everything is
// never shed, with K = 100 one that accepts 1 % is not either.
func TestAdaptiveKExtremes(t *testing.T) {
	for _, c := range []struct {
		k      float64
		accept int // of 100
	}{{1, 100}, {100, 1}} {
		a, _ := NewAdaptive(AdaptiveConfig{K: c.k, Rand: fixed(0)})
		for i := range 100000 {
			a.RecordAt(t0, i%100 >= c.accept)
		}
		if p := a.ProbabilityAt(t0); p != 0 {
			t.Errorf("K %v, %d %% accepted: probability %v, want 0", c.k, c.accept, p)
		}
	}
}

// TestCubicRandomClockFaults drives Cubics through random sequences of
// admits, cancellations and outcomes at instants that repeat, step by a
// nanosecond to a year, step back by a second or an hour, or fall to the
// zero time. Whatever the clock does, the rate stays a finite number of at
// least MinRate, a wait handed out is between 0 and MaxWait, and a refusal
// names a wait beyond MaxWait: a refusal said "waiting 1ms would exceed
// MaxWait 1ms" when the wait was a fraction of a nanosecond over it.
func TestCubicRandomClockFaults(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	for ci, cfg := range []CubicConfig{{}, {MinRate: 1e-9}, {Scale: 10, Beta: 0.01}, {Smooth: 1, MaxWait: time.Millisecond}, {MinRate: 1e6}} {
		minRate := cmp.Or(cfg.MinRate, DefaultMinRate)
		maxWait := cmp.Or(cfg.MaxWait, DefaultCubicMaxWait)
		for seq := range 100 {
			c, err := NewCubic(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := t0
			for i := range 300 {
				now = faultyClock(src, now)
				if src.IntN(3) > 0 {
					c.RecordAt(now, src.IntN(4) == 0)
				} else {
					w, err := c.AdmitAt(now)
					var re *RateError
					switch {
					case err == nil && (w < 0 || w > maxWait):
						t.Fatalf("config %d, sequence %d, step %d: wait %v, want 0 to MaxWait %v", ci, seq, i, w, maxWait)
					case err != nil && (!errors.As(err, &re) || re.Wait <= maxWait):
						t.Fatalf("config %d, sequence %d, step %d: %v, want a *RateError with a wait beyond MaxWait", ci, seq, i, err)
					case err == nil && src.IntN(4) == 0:
						c.CancelAt(now)
					}
				}
				if r, _ := c.RateAt(now); math.IsNaN(r) || math.IsInf(r, 0) || r < minRate {
					t.Fatalf("config %d, sequence %d, step %d (now %v): rate %v, want finite and at least %v", ci, seq, i, now, r, minRate)
				}
			}
		}
	}
}

// TestAdaptiveRandomClockFaults drives Adaptives through random admits and
// outcomes at instants that repeat, step by a nanosecond to a year, step
// back, or fall to the zero time: the probability stays in [0, 1) and at
// most MaxProbability, Adaptive
// never asks to wait, and a rejection carries the probability it was drawn
// against.
func TestAdaptiveRandomClockFaults(t *testing.T) {
	src := rand.New(rand.NewPCG(4, 4))
	for _, cfg := range []AdaptiveConfig{{}, {K: 1, Window: time.Second}, {K: 100, Window: time.Hour},
		{MaxProbability: 1, RejectionWeight: 1}, {MaxProbability: 0.5, RejectionWeight: 0.01}} {
		cfg.Rand = src.Float64
		bound := cmp.Or(cfg.MaxProbability, DefaultMaxProbability)
		for seq := range 50 {
			a, err := NewAdaptive(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := t0
			for i := range 500 {
				now = faultyClock(src, now)
				w, err := a.AdmitAt(now)
				var re *RejectedError
				switch {
				case w != 0:
					t.Fatalf("sequence %d, step %d: asked to wait %v", seq, i, w)
				case err == nil:
					a.RecordAt(now, src.IntN(3) > 0) // mostly throttled, so that it sheds
				case !errors.As(err, &re) || !(re.Probability > 0 && re.Probability < 1 && re.Probability <= bound) || re.Requests == 0:
					t.Fatalf("sequence %d, step %d: %v", seq, i, err)
				}
				if p := a.ProbabilityAt(now); !(p >= 0 && p < 1 && p <= bound) {
					t.Fatalf("sequence %d, step %d (now %v): probability %v", seq, i, now, p)
				}
			}
		}
	}
}

// faultyClock returns the instant after now of a clock that repeats, steps
// by a nanosecond to a year, steps back by a second to an hour, or falls to
// the zero time (1 time in 20) or back to t0.
func faultyClock(src *rand.Rand, now time.Time) time.Time {
	steps := [...]time.Duration{0, time.Nanosecond, time.Millisecond, 100 * time.Millisecond, time.Second,
		10 * time.Second, -time.Second, -5 * time.Minute, -time.Hour, 3 * time.Hour, 365 * 24 * time.Hour}
	switch k := src.IntN(20); {
	case k == 0:
		return time.Time{}
	case k == 1:
		return t0
	}
	return now.Add(steps[src.IntN(len(steps))])
}
