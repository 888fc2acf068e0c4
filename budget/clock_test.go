package budget

import (
	"sync"
	"testing"
	"time"
)

// TestShareClockStepsBack: the clock steps back (an NTP correction) by more
// than two windows while the budget is in use (within two windows, the
// clock revisits instants whose counts are still in their buckets). The retries granted after the
// step are counted: against a dead dependency the budget grants the floor of
// one window, as it did before the step, not every retry asked for until
// the clock catches up with the instants counted before it.
func TestShareClockStepsBack(t *testing.T) {
	for _, back := range []time.Duration{25 * time.Second, time.Hour} {
		s, err := NewShare(ShareConfig{MinPerSecond: 1}) // floor: 10 per 10 s window
		if err != nil {
			t.Fatal(err)
		}
		// Before the step: a healthy dependency, a success and a retry asked
		// for every 10 ms over a whole window, so that every bucket holds
		// counts.
		for i := range 1000 {
			now := at(time.Duration(i) * 10 * time.Millisecond)
			s.RecordAt(now, true, true)
			s.AllowRetryAt(now, false)
		}
		// After it: a dead dependency, one retry asked for every 10 ms.
		granted := 0
		start := at(10*time.Second - back)
		for i := range 1000 {
			if s.AllowRetryAt(start.Add(time.Duration(i)*10*time.Millisecond), false) {
				granted++
			}
		}
		if granted > 11 {
			t.Errorf("clock stepped back %v: %d retries granted over one window of 1000 asked, want the floor's 10", back, granted)
		}
		if l := s.LevelAt(start.Add(10 * time.Second)); l > 10 {
			t.Errorf("clock stepped back %v: level %v after the window, want at most the floor 10", back, l)
		}
	}
}

// TestBudgetsClockFaults: the token budgets ignore now; instants far apart,
// out of order, zero or far in the future change nothing.
func TestBudgetsClockFaults(t *testing.T) {
	g, _ := NewGRPC(Recommended())
	b, _ := NewBucket(BucketConfig{})
	s, _ := NewShare(ShareConfig{})
	for _, now := range []time.Time{{}, t0, t0.Add(-48 * time.Hour), t0.Add(1000 * 24 * time.Hour), time.Unix(1<<40, 0), t0.Add(-time.Nanosecond)} {
		g.RecordAt(now, true, false)
		g.AllowRetryAt(now, false)
		b.AllowRetryAt(now, false)
		b.RecordAt(now, false, true)
		s.RecordAt(now, true, true)
		s.AllowRetryAt(now, false)
		_ = s.LevelAt(now)
	}
	if l := b.Level(); l != 500 {
		t.Errorf("Bucket level %v, want 500 (each retry's cost given back)", l)
	}
}

// TestTokensConcurrentExact: under many goroutines, no token is created or
// lost: every retry a Bucket grants and gets back leaves it full, a GRPC
// bucket loses exactly one token per failure and gains exactly its ratio per
// success, and a Share grants exactly its allowance, as its level says.
func TestTokensConcurrentExact(t *testing.T) {
	const goroutines, each = 16, 2000
	run := func(f func(i int)) {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					f(g*each + i)
				}
			})
		}
		wg.Wait()
	}
	b, _ := NewBucket(BucketConfig{Capacity: 1e9, RetryCost: 7})
	run(func(int) {
		if b.AllowRetryAt(t0, false) {
			b.RecordAt(t0, false, true)
		}
	})
	if l := b.Level(); l != 1e9 {
		t.Errorf("Bucket: level %v after every granted retry succeeded, want 1e9", l)
	}
	small, _ := NewBucket(BucketConfig{Capacity: 700, RetryCost: 7})
	var granted sync.Map
	run(func(i int) {
		if small.AllowRetryAt(t0, false) {
			granted.Store(i, true)
		}
	})
	n := 0
	granted.Range(func(any, any) bool { n++; return true })
	if n != 100 || small.Level() != 0 {
		t.Errorf("Bucket of 700, retries of 7: %d granted, level %v; want 100 and 0", n, small.Level())
	}

	g, _ := NewGRPC(GRPCConfig{MaxTokens: 1000, TokenRatio: 0.001})
	run(func(i int) {
		if i < 500 {
			g.RecordAt(t0, true, false)
		}
	})
	run(func(i int) { g.RecordAt(t0, true, true) }) // 32000 × 0.001 = 32
	if l := g.Level(); l != 532 {
		t.Errorf("GRPC: level %v after 500 failures and 32000 successes of 0.001 from 1000, want 532", l)
	}

	s, _ := NewShare(ShareConfig{MinPerSecond: NoFloor})
	for range 1000 {
		s.RecordAt(t0, true, true) // allowance 200
	}
	var grantedShare sync.Map
	run(func(i int) {
		if s.AllowRetryAt(t0, false) {
			grantedShare.Store(i, true)
		}
	})
	n = 0
	grantedShare.Range(func(any, any) bool { n++; return true })
	if n < 200 || n > 200+goroutines {
		t.Errorf("Share with an allowance of 200: %d granted, want 200 (+ at most one per goroutine, documented)", n)
	}
	if l := s.LevelAt(t0); l != 0 {
		t.Errorf("Share: level %v after its allowance was spent, want 0", l)
	}
}
