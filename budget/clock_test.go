package budget

import (
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
