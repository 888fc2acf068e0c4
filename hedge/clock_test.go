package hedge_test

import (
	"errors"
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

// Fault: the clock steps back by an hour in the middle of a brownout, then
// by an hour again once calls are fast. The brownout is judged on the
// first attempts of the stepped clock: it ends when they are fast, and
// starts again when they are slow, rather than being held (or ignored)
// until the clock catches up with the instants counted before the step.
// An adaptive Hedger without latencies, then, hedges nothing and says so.
func TestBrownoutClockSteppedBack(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: 10 * time.Millisecond, Budget: hedge.Off})
	observe := func(at time.Time, lat time.Duration) {
		for i := range 100 {
			now := at.Add(time.Duration(i) * time.Millisecond)
			h.PlanAt(now)
			h.ObserveAt(now, lat, lat > 10*time.Millisecond)
		}
	}
	observe(t0, time.Second)
	if err := h.AllowAt(t0.Add(100 * time.Millisecond)); !errors.Is(err, hedge.ErrBrownout) {
		t.Fatalf("every call slow: AllowAt = %v, want ErrBrownout", err)
	}
	back := t0.Add(-time.Hour)
	observe(back, time.Millisecond)
	if err := h.AllowAt(back.Add(100 * time.Millisecond)); err != nil {
		t.Errorf("1 h back, every call fast since: AllowAt = %v, want nil", err)
	}
	back2 := back.Add(-time.Hour)
	observe(back2, time.Second)
	if err := h.AllowAt(back2.Add(100 * time.Millisecond)); !errors.Is(err, hedge.ErrBrownout) {
		t.Errorf("2 h back, every call slow since: AllowAt = %v, want ErrBrownout", err)
	}

	a := mustNew(t, hedge.Config{})
	if d, ok := a.PlanAt(t0); d != 0 || ok {
		t.Errorf("adaptive, no latency known: PlanAt = %v, %v; want 0, false", d, ok)
	}
	if s := a.StatsAt(t0); s.Delay != 0 || s.Seen != 0 || !(s.Share() == 0) {
		t.Errorf("adaptive, no latency known: %+v (share %v); want no delay, none seen, share 0", s, s.Share())
	}
}
