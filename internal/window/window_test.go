package window

import (
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCounterSlides(t *testing.T) {
	c := NewCounter(10*time.Second, 10) // 1 s buckets
	steps := []struct {
		at   time.Duration
		add  uint64
		want uint64 // sum after the add
	}{
		{0, 1, 1},
		{500 * time.Millisecond, 2, 3}, // same bucket
		{time.Second, 4, 7},            // next bucket
		{9 * time.Second, 8, 15},       // last bucket of the first window
		{10 * time.Second, 0, 12},      // bucket 0 (1+2) left the window
		{11 * time.Second, 0, 8},       // bucket 1 left too
		{19*time.Second + 999, 0, 0},   // everything left
		{25 * time.Second, 16, 16},     // fresh buckets after a gap
		{25*time.Second + time.Nanosecond, 1, 17},
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.add > 0 {
			c.Add(now, s.add)
		}
		if got := c.Sum(now); got != s.want {
			t.Fatalf("step %d at +%v: sum %d, want %d", i, s.at, got, s.want)
		}
	}
}

func TestCounterIgnoresEventsOlderThanWindow(t *testing.T) {
	c := NewCounter(time.Second, 4)
	c.Add(t0.Add(9*time.Second), 4)
	c.Add(t0.Add(10*time.Second), 1)
	// An event 10 s older, in the bucket of +10 s (4 buckets of 250 ms): it
	// is outside the window, and empties that bucket (one bucket's count
	// lost, the price of following a clock that steps back).
	c.Add(t0, 5)
	if got := c.Sum(t0.Add(10 * time.Second)); got != 0 {
		t.Fatalf("sum %d, want 0 (the old event is outside the window, the bucket it emptied too)", got)
	}
	// An event slightly in the past but inside the window is kept.
	c.Add(t0.Add(9800*time.Millisecond), 2)
	if got := c.Sum(t0.Add(10 * time.Second)); got != 2 {
		t.Fatalf("sum %d, want 2", got)
	}
}

// TestRingDropsLateEvents: a ring made with NewRing (epochs that only go
// up) drops an event whose bucket holds a later epoch.
func TestRingDropsLateEvents(t *testing.T) {
	r := NewRing(4)
	r.Add(40, 1)
	r.Add(36, 5) // the same bucket, a whole window late
	if got := r.Sum(40); got != 1 {
		t.Fatalf("sum %d, want 1 (the late event dropped)", got)
	}
}

// TestCounterClockStepsBack: after the clock steps back by more than the
// window, events are counted from the stepped clock; the counts made
// before the step come back only if the clock reaches their instants
// again.
func TestCounterClockStepsBack(t *testing.T) {
	for _, back := range []time.Duration{3 * time.Second, time.Hour, 400 * 24 * time.Hour} {
		c := NewCounter(time.Second, 4)
		for i := range 4 {
			c.Add(t0.Add(time.Duration(i)*250*time.Millisecond), 10)
		}
		now := t0.Add(-back)
		for i := range 4 {
			c.Add(now.Add(time.Duration(i)*250*time.Millisecond), 1)
		}
		if got := c.Sum(now.Add(750 * time.Millisecond)); got != 4 {
			t.Errorf("stepped back %v: sum %d over the window after the step, want the 4 events counted since", back, got)
		}
	}
}

func TestClockBeforeEpochFloors(t *testing.T) {
	c := NewClock(time.Second)
	if e := c.Epoch(time.Unix(-1, 500)); e != -1 {
		t.Fatalf("epoch of -0.99 s: %d, want -1", e)
	}
	if e := c.Epoch(time.Unix(0, 0)); e != 0 {
		t.Fatalf("epoch of 0: %d, want 0", e)
	}
	if e := c.Epoch(time.Unix(0, 999_999_999)); e != 0 {
		t.Fatalf("epoch of 0.999 s: %d, want 0 (cached)", e)
	}
	if e := c.Epoch(time.Unix(1, 0)); e != 1 {
		t.Fatalf("epoch of 1 s: %d, want 1", e)
	}
}

func TestRingReset(t *testing.T) {
	r := NewRing(5)
	for e := int64(100); e < 110; e++ {
		r.Add(e, 1)
	}
	if got := r.Sum(109); got != 5 {
		t.Fatalf("Sum(109) = %d, want 5 (epochs 105…109)", got)
	}
	r.Reset()
	if got := r.Sum(109); got != 0 {
		t.Fatalf("after Reset: %d, want 0", got)
	}
}

// SumLast counts the newest k epochs only, and the whole ring for k ≥ Len.
func TestRingSumLast(t *testing.T) {
	r := NewRing(4)
	for e := int64(10); e < 14; e++ {
		r.Add(e, uint64(e-9)) // epochs 10…13 hold 1…4
	}
	for _, c := range []struct {
		e    int64
		k    int
		want uint64
	}{
		{13, 1, 4}, {13, 2, 7}, {13, 4, 10}, {13, 9, 10}, {13, 0, 0},
		{14, 2, 4}, // epoch 14 is empty, 13 holds 4
		{16, 4, 4}, // only 13 is still within 13…16
		{17, 2, 0}, // 16 and 17 are empty
	} {
		if got := r.SumLast(c.e, c.k); got != c.want {
			t.Errorf("SumLast(%d, %d) = %d, want %d", c.e, c.k, got, c.want)
		}
	}
}

func TestCounterConcurrent(t *testing.T) {
	c := NewCounter(time.Minute, 6)
	const g, n = 16, 1000
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				c.Add(t0.Add(time.Duration(j)*time.Millisecond), 1) // spans 1 s: within one window
			}
		}()
	}
	wg.Wait()
	if got := c.Sum(t0.Add(time.Second)); got != g*n {
		t.Fatalf("sum %d, want %d", got, g*n)
	}
}

func BenchmarkCounterAdd(b *testing.B) {
	b.ReportAllocs()
	c := NewCounter(10*time.Second, 10)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(t0, 1)
		}
	})
}

func BenchmarkCounterSum(b *testing.B) {
	b.ReportAllocs()
	c := NewCounter(10*time.Second, 10)
	c.Add(t0, 1)
	for b.Loop() {
		c.Sum(t0)
	}
}

// Epochs before 0 (instants before 1970, or any negative bucket number)
// map onto the ring like the others: consecutive epochs take consecutive
// buckets, so two epochs of one window never share a bucket.
func TestRingNegativeEpochs(t *testing.T) {
	r := NewRing(10)
	for e := int64(-7); e <= 2; e++ { // ten consecutive epochs across 0
		r.Add(e, 1)
	}
	if got := r.Sum(2); got != 10 {
		t.Fatalf("Sum(2) over epochs -7…2 = %d, want 10", got)
	}
	c := NewCounter(10*time.Second, 10)
	c.Add(time.Unix(-1, 0), 1)
	c.Add(time.Unix(5, 0), 1)
	if got := c.Sum(time.Unix(5, 0)); got != 2 {
		t.Fatalf("events at -1 s and +5 s, sum at +5 s = %d, want 2", got)
	}
}

// Sub takes back what Add counted in the same epoch, and nothing once the
// bucket holds another epoch.
func TestRingSub(t *testing.T) {
	r := NewClockRing(2)
	r.Add(5, 3)
	r.Sub(5, 1)
	if got := r.Sum(5); got != 2 {
		t.Fatalf("3 added, 1 taken back: Sum %d, want 2", got)
	}
	r.Sub(5, 5)
	if got := r.Sum(5); got != 2 {
		t.Fatalf("taking back more than counted: Sum %d, want 2 unchanged", got)
	}
	r.Add(7, 4) // epoch 7 takes epoch 5's bucket
	r.Sub(5, 1)
	if got := r.Sum(7); got != 4 {
		t.Fatalf("taking back from an epoch gone: Sum %d, want 4", got)
	}
}

// TestBucketSaturates: a bucket that has counted nearly 2^32 events (a
// breaker with a 24 h window, 2.4 h buckets, at 500 000 calls/s) stops at
// its cap instead of carrying into the epoch bits: the carry made the
// bucket read as the next epoch's, its count left the sum (4 billion calls
// forgotten at once), and the next event reset it to 1.
func TestBucketSaturates(t *testing.T) {
	c := NewCounter(24*time.Hour, 10)
	c.Add(t0, countMask-1)
	for range 3 {
		c.Add(t0, 1)
	}
	if got := c.Sum(t0); got != countCap {
		t.Fatalf("sum %d after 2^32 + 1 events in one bucket, want the cap %d", got, uint64(countCap))
	}
	c.Add(t0.Add(3*time.Hour), 5) // the next bucket counts as before
	if got := c.Sum(t0.Add(3 * time.Hour)); got != countCap+5 {
		t.Fatalf("sum %d, want the cap + 5", got)
	}
	r := NewRing(2)
	r.Add(7, countMask) // more than the cap at once
	r.Add(7, 1)
	if got := r.Sum(7); got != countCap {
		t.Fatalf("ring sum %d, want the cap %d", got, uint64(countCap))
	}
}

// TestBucketSaturatesConcurrently: goroutines adding to a bucket at its
// cap never carry into the epoch bits.
func TestBucketSaturatesConcurrently(t *testing.T) {
	r := NewClockRing(4)
	r.Add(3, countMask-100)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				r.Add(3, 1)
			}
		})
	}
	wg.Wait()
	if got := r.Sum(3); got != countCap {
		t.Fatalf("sum %d, want the cap %d", got, uint64(countCap))
	}
}

// TestLargeAddsCount: an Add of more than the fast path takes is counted
// whole.
func TestLargeAddsCount(t *testing.T) {
	r := NewClockRing(2)
	r.Add(1, 1)
	r.Add(1, 1000)
	r.Add(1, maxAdd+1)
	if got, want := r.Sum(1), uint64(1+1000+maxAdd+1); got != want {
		t.Fatalf("sum %d, want %d", got, want)
	}
}
