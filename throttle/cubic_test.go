package throttle

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// send records n successful responses spread evenly over d from start.
func send(c *Cubic, start time.Time, d time.Duration, n int) time.Time {
	for i := 0; i < n; i++ {
		c.RecordAt(start.Add(d*time.Duration(i)/time.Duration(n)), false)
	}
	return start.Add(d)
}

func TestCubicIdleUntilThrottled(t *testing.T) {
	c, _ := NewCubic(CubicConfig{})
	now := send(c, t0, 5*time.Second, 50)
	for i := 0; i < 100; i++ {
		if w, err := c.AdmitAt(now); w != 0 || err != nil {
			t.Fatalf("before any throttling: wait %v, %v; want none", w, err)
		}
	}
	if _, limiting := c.RateAt(now); limiting {
		t.Fatal("limiting before any throttling")
	}
}

func TestCubicDropsAndRecovers(t *testing.T) {
	c, _ := NewCubic(CubicConfig{})
	now := send(c, t0, 5*time.Second, 50) // 10 requests/s measured
	c.RecordAt(now, true)                 // throttled
	rate, limiting := c.RateAt(now)
	if !limiting {
		t.Fatal("not limiting after a throttling answer")
	}
	// The measured rate is smoothed towards 10/s (the AWS SDKs' moving
	// average); the new rate is 70 % of it.
	if rate < 6 || rate > 7.01 {
		t.Fatalf("rate after throttling %.3f, want about 0.7 × 10", rate)
	}
	wmax := rate / 0.7
	// Right after the drop the bucket holds at most one second of the new
	// rate (its capacity); once that burst is spent, requests wait 1/rate
	// more each, reserved one after the other.
	burst := 0
	var w1 time.Duration
	for {
		w, err := c.AdmitAt(now)
		if err != nil {
			t.Fatal(err)
		}
		if w > 0 {
			w1 = w
			break
		}
		burst++
	}
	if burst != int(rate) {
		t.Fatalf("burst of %d requests without waiting, want %d (the capacity, %.2f)", burst, int(rate), rate)
	}
	w2, err := c.AdmitAt(now)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(float64(time.Second) / rate); w1 > d || absDur(w2-w1-d) > time.Millisecond {
		t.Fatalf("waits %v, %v; want the second 1/rate = %v after the first", w1, w2, d)
	}
	// Along the cubic: at t = K the rate is back at Wmax.
	k := math.Cbrt(wmax * (1 - 0.7) / 0.4)
	then := now.Add(time.Duration(k * float64(time.Second)))
	send(c, now, then.Sub(now), int(then.Sub(now).Seconds()*10)) // keep sending 10/s
	c.RecordAt(then, false)
	rate, _ = c.RateAt(then)
	if math.Abs(rate-wmax) > 0.5 {
		t.Fatalf("rate at t = K (%.2fs): %.3f, want about Wmax %.3f", k, rate, wmax)
	}
	// Much later it probes beyond Wmax, but never above twice the measured
	// send rate.
	later := send(c, then, 10*time.Second, 100)
	c.RecordAt(later, false)
	rate, _ = c.RateAt(later)
	if rate <= wmax || rate > 2*10.5 {
		t.Fatalf("rate 10 s later %.3f, want above Wmax %.2f and at most twice the measured rate", rate, wmax)
	}
}

func TestCubicMaxWait(t *testing.T) {
	c, _ := NewCubic(CubicConfig{MaxWait: 3 * time.Second})
	c.RecordAt(t0, true) // throttled before any rate was measured: the floor, 0.5/s
	rate, _ := c.RateAt(t0)
	if rate != 0.5 {
		t.Fatalf("rate %v, want the 0.5/s floor", rate)
	}
	var waits []time.Duration
	for {
		w, err := c.AdmitAt(t0)
		if err != nil {
			var re *RateError
			if !errors.Is(err, ErrRateLimited) || !errors.As(err, &re) || re.Wait != 4*time.Second || re.RetryAfter() != 4*time.Second {
				t.Fatalf("refusal %v", err)
			}
			break
		}
		waits = append(waits, w)
	}
	want := []time.Duration{2 * time.Second}
	if len(waits) != 1 || waits[0] != want[0] {
		// 0.5/s: the first waits 2 s, the second would wait 4 s > 3 s.
		t.Fatalf("waits %v, want %v", waits, want)
	}
	// The refused request took nothing: 2 s later the next one waits 2 s.
	if w, err := c.AdmitAt(t0.Add(2 * time.Second)); err != nil || w != 2*time.Second {
		t.Fatalf("got %v, %v; want 2s", w, err)
	}
}

func TestCubicConcurrent(t *testing.T) {
	c, _ := NewCubic(CubicConfig{})
	hammer(8, 1000, func(i int) bool {
		now := at(time.Duration(i) * 10 * time.Millisecond)
		c.AdmitAt(now)
		c.RecordAt(now, i%50 == 0)
		if r, _ := c.RateAt(now); !(r >= DefaultMinRate) || math.IsInf(r, 0) {
			t.Errorf("rate %v, want a finite rate ≥ MinRate", r)
			return false
		}
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled || c.tokens > c.capacity || c.capacity < 1 {
		t.Fatalf("enabled %v, tokens %v, capacity %v: want limiting, tokens ≤ capacity, capacity ≥ 1", c.enabled, c.tokens, c.capacity)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// A turn handed back with CancelAt goes to the next caller: its wait is the
// one the cancelled request had.
func TestCubicCancelAtHandsTheTurnBack(t *testing.T) {
	c, _ := NewCubic(CubicConfig{})
	c.RecordAt(t0, true) // the 0.5/s floor: one request every 2 s
	w1, err := c.AdmitAt(t0)
	if err != nil || w1 != 2*time.Second {
		t.Fatalf("first: %v, %v; want 2s", w1, err)
	}
	c.CancelAt(t0)
	if w, err := c.AdmitAt(t0); err != nil || w != w1 {
		t.Fatalf("after CancelAt: %v, %v; want the cancelled turn's %v", w, err, w1)
	}
	// Handing back never fills the bucket beyond its capacity, and a
	// limiter that is not limiting ignores it.
	for range 10 {
		c.CancelAt(t0)
	}
	c.mu.Lock()
	tokens, capacity := c.tokens, c.capacity
	c.mu.Unlock()
	if tokens > capacity {
		t.Fatalf("tokens %v above capacity %v", tokens, capacity)
	}
	idle, _ := NewCubic(CubicConfig{})
	idle.CancelAt(t0)
	if idle.tokens != 0 {
		t.Fatalf("idle limiter: tokens %v after CancelAt, want 0", idle.tokens)
	}
	var none *Cubic
	none.CancelAt(t0)
}

// TestCubicWaitPastDuration: MinRate is tiny (accepted: anything above 0),
// so the wait for the next token, 1/MinRate seconds, is longer than a
// time.Duration holds. The request is refused with a *RateError whose Wait
// is the longest Duration; the float-to-Duration conversion overflowed to a
// negative wait, which passed the MaxWait check, so every request was
// admitted at once with a negative wait while the limiter was limiting.
func TestCubicWaitPastDuration(t *testing.T) {
	for _, minRate := range []float64{1e-12, 1e-300} {
		c, err := NewCubic(CubicConfig{MinRate: minRate})
		if err != nil {
			t.Fatal(err)
		}
		c.RecordAt(t0, true) // throttled before any rate was measured: the rate is MinRate
		for i := range 3 {
			w, err := c.AdmitAt(t0)
			var re *RateError
			if !errors.As(err, &re) || w != 0 {
				t.Fatalf("MinRate %v, request %d: got wait %v, %v; want a *RateError (the token is 1/MinRate s away)", minRate, i, w, err)
			}
			if re.Wait != math.MaxInt64 {
				t.Errorf("MinRate %v: RateError.Wait %v, want the longest Duration", minRate, re.Wait)
			}
		}
	}
}

// limitingCubic returns a Cubic that has met a throttling answer while
// 1000 requests/s were measured, so that it limits at about 700 requests/s.
func limitingCubic(tb testing.TB) (*Cubic, time.Time) {
	tb.Helper()
	c, err := NewCubic(CubicConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	now := send(c, t0, 10*time.Second, 10_000)
	c.RecordAt(now, true)
	if _, limiting := c.RateAt(now); !limiting {
		tb.Fatal("not limiting after a throttling answer")
	}
	return c, now
}

func BenchmarkCubicAdmit(b *testing.B) {
	c, now := limitingCubic(b)
	b.ReportAllocs()
	for i := range b.N {
		at := now.Add(time.Duration(i) * 2 * time.Millisecond) // 500 requests/s: under the rate
		if _, err := c.AdmitAt(at); err == nil {
			c.RecordAt(at, false)
		}
	}
}

// TestHotPathsAllocateNothing: admitting through Adaptive and Cubic (while
// it limits) and taking and freeing a Bulkhead slot allocate nothing, as
// their doc comments say.
func TestHotPathsAllocateNothing(t *testing.T) {
	a, err := NewAdaptive(AdaptiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c, now := limitingCubic(t)
	bh, err := NewBulkhead(BulkheadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for name, f := range map[string]func(){
		"Adaptive": func() {
			if _, err := a.AdmitAt(t0); err == nil {
				a.RecordAt(t0, false)
			}
		},
		"Cubic": func() {
			i++
			at := now.Add(time.Duration(i) * 2 * time.Millisecond)
			if _, err := c.AdmitAt(at); err == nil {
				c.RecordAt(at, false)
			}
		},
		"Bulkhead": func() {
			if bh.Acquire(context.Background()) == nil {
				bh.Release()
			}
		},
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per admitted call, want 0", name, n)
		}
	}
}

// TestCubicWaitAtMaxWait: the wait for the next token is MaxWait and half a
// nanosecond, which is MaxWait as a Duration. The request is admitted with
// a wait of MaxWait; it was refused with "waiting 1ms would exceed MaxWait
// 1ms" when the comparison was made before the wait became a Duration.
func TestCubicWaitAtMaxWait(t *testing.T) {
	c, err := NewCubic(CubicConfig{MinRate: 1e9 / (1e6 + 0.5), MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.RecordAt(t0, true) // throttled before any rate was measured: the rate is MinRate
	if w, err := c.AdmitAt(t0); err != nil || w != time.Millisecond {
		t.Fatalf("got wait %v, %v; want admitted with a wait of MaxWait (1ms)", w, err)
	}
}
