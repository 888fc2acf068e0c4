package hedge_test

import (
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// Fault: the wall clock steps back by an hour (an NTP correction). The
// latencies observed on the stepped clock are counted from then on, as
// the budget's and the brownout's counters count them, instead of being
// dropped until the clock catches up with the instants counted before the
// step (an hour without an estimate, so without adaptive hedging).
func TestEstimatorClockSteppedBack(t *testing.T) {
	e := hedge.NewEstimator(4 * time.Second) // slides in steps of 1 s
	for i := range 400 {
		e.AddAt(t0.Add(time.Duration(i)*10*time.Millisecond), 50*time.Millisecond) // [0 s, 4 s)
	}
	back := t0.Add(-time.Hour)
	for i := range 100 {
		e.AddAt(back.Add(time.Duration(i)*40*time.Millisecond), 50*time.Millisecond) // [-1 h, -1 h + 4 s)
	}
	now := back.Add(4 * time.Second)
	d, n := e.QuantileAt(now.Add(-time.Nanosecond), 0.5)
	if n != 100 || d < 45*time.Millisecond || d > 55*time.Millisecond {
		t.Fatalf("after the clock stepped back 1 h: median %v over %d latencies, want about 50ms over 100", d, n)
	}
}

// Fault: the clock steps back by an hour. A Hedger's adaptive delay is
// read again within the 64th of a window it promises, on the stepped
// clock, rather than held for an hour (until the clock passes the instant
// at which its last reading was due to be renewed).
func TestHedgerDelayClockSteppedBack(t *testing.T) {
	h := mustNew(t, hedge.Config{Window: time.Second})
	for i := range 100 {
		h.ObserveAt(t0.Add(time.Duration(i)*5*time.Millisecond), 10*time.Millisecond, false)
	}
	if d := h.DelayAt(t0.Add(500 * time.Millisecond)); d < 9*time.Millisecond || d > 11*time.Millisecond {
		t.Fatalf("before the step: delay %v, want about 10ms", d)
	}
	back := t0.Add(-time.Hour)
	for i := range 100 {
		h.ObserveAt(back.Add(time.Duration(i)*5*time.Millisecond), 200*time.Millisecond, false)
	}
	if d := h.DelayAt(back.Add(500 * time.Millisecond)); d < 180*time.Millisecond || d > 220*time.Millisecond {
		t.Fatalf("half a window after the clock stepped back 1 h, latencies of 200ms since: delay %v, want about 200ms", d)
	}
}
