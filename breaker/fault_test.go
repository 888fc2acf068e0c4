package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenClockStepsBack: the clock steps back (an NTP correction) while the
// breaker is open. The breaker stays open for its open period measured on
// the stepped clock (30 s), not until the clock reaches the end computed
// before the step.
func TestOpenClockStepsBack(t *testing.T) {
	for _, back := range []time.Duration{10 * time.Second, 2 * time.Hour} {
		b := newB(t, Config{ConsecutiveFailures: 1})
		call(t, b, at(0), boom) // open until +30 s
		wantState(t, b, at(time.Second), Open)
		now := at(time.Second - back)
		_, err := b.AllowAt(now, false)
		var oe *OpenError
		if !errors.As(err, &oe) || oe.Wait > 30*time.Second {
			t.Fatalf("stepped back %v: AllowAt = %v, want a refusal waiting at most the 30 s period", back, err)
		}
		if u, ok := b.OpenUntil(now); !ok || u.Sub(now) > 30*time.Second {
			t.Errorf("stepped back %v: OpenUntil = %v (%v from now), %v; want at most 30 s ahead", back, u, u.Sub(now), ok)
		}
		// 30 s after the first refusal on the stepped clock, a probe goes.
		wantState(t, b, now.Add(30*time.Second), HalfOpen)
		call(t, b, now.Add(30*time.Second), nil)
		wantState(t, b, now.Add(30*time.Second), Closed)
	}
}

// TestTimeWindowClockStepsBack: the clock steps back by more than two
// windows after calls filled it; the failures after the step are counted and
// trip the breaker on its ratio, instead of being dropped until the clock
// catches up.
func TestTimeWindowClockStepsBack(t *testing.T) {
steps:
	for _, back := range []time.Duration{75 * time.Second, 3 * time.Hour} {
		b := newB(t, Config{})
		for i := range 300 { // a success every 100 ms over one window
			call(t, b, at(time.Duration(i)*100*time.Millisecond), nil)
		}
		start := at(30*time.Second - back)
		for i := range 30 { // then 30 failures, one a second
			now := start.Add(time.Duration(i) * time.Second)
			if _, err := b.AllowAt(now, false); err != nil {
				continue steps // tripped
			}
			call(t, b, now, boom)
		}
		t.Errorf("stepped back %v: 30 of 30 calls failed within the window, breaker %v; want open", back, b.StateAt(start.Add(30*time.Second)))
	}
}

// TestLostProbe: a half-open probe whose outcome never comes (its goroutine
// died, its Done was forgotten) holds its slot for at most OpenTimeout: then
// another probe goes, and the breaker closes when that one succeeds. The
// lost probe's outcome, should it come after all, is dropped.
func TestLostProbe(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1})
	call(t, b, at(0), boom) // open until +30 s
	lost, err := b.AllowAt(at(30*time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AllowAt(at(31*time.Second), false); err == nil {
		t.Fatal("a second probe while the first is in flight: allowed")
	}
	if _, err := b.AllowAt(at(59*time.Second), false); err == nil {
		t.Fatal("a second probe 29 s after the first: allowed, want refused until OpenTimeout (30 s)")
	}
	tk, err := b.AllowAt(at(60*time.Second), false)
	if err != nil {
		t.Fatalf("30 s after a probe that never reported: %v; want another probe", err)
	}
	b.DoneAt(at(61*time.Second), lost, time.Second, boom) // the lost one, late: dropped
	wantState(t, b, at(61*time.Second), HalfOpen)
	b.DoneAt(at(61*time.Second), tk, time.Second, nil)
	wantState(t, b, at(61*time.Second), Closed)
}

// TestHalfOpenProbesConcurrent: many goroutines asking at once while
// half-open get exactly HalfOpenProbes probes.
func TestHalfOpenProbesConcurrent(t *testing.T) {
	for _, probes := range []int{1, 3, 50} {
		b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: probes})
		call(t, b, at(0), boom)
		var granted atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				if _, err := b.AllowAt(at(31*time.Second), false); err == nil {
					granted.Add(1)
				}
			})
		}
		wg.Wait()
		if g := granted.Load(); g != int64(probes) {
			t.Errorf("HalfOpenProbes %d: %d of 200 concurrent calls allowed", probes, g)
		}
	}
}

// TestDoneFaults: Done called twice for one call, or with an instant before
// its AllowAt's, neither panics nor counts the outcome twice.
func TestDoneFaults(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 2})
	call(t, b, at(0), boom)
	p1, err := b.AllowAt(at(30*time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	b.DoneAt(at(31*time.Second), p1, time.Second, nil)
	b.DoneAt(at(31*time.Second), p1, time.Second, nil) // twice
	wantState(t, b, at(31*time.Second), HalfOpen)      // one success of two needed
	p2, err := b.AllowAt(at(31*time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AllowAt(at(31*time.Second), false); err == nil {
		t.Error("a third probe allowed with HalfOpenProbes 2 (one succeeded, one in flight)")
	}
	b.DoneAt(at(20*time.Second), p2, -time.Second, nil) // before the AllowAt, a negative duration
	wantState(t, b, at(31*time.Second), Closed)
}

// TestBoundaries: a call exactly SlowCall long is slow; a count window of
// one call trips on one failure with FailureRatio 1 and forgets it after one
// success; the zero time and instants far away neither panic nor leave the
// breaker open for longer than its period.
func TestBoundaries(t *testing.T) {
	b := newB(t, Config{FailureRatio: Disabled, SlowCall: time.Second, SlowRatio: 1, MinCalls: 1, WindowCalls: 1})
	tk, _ := b.AllowAt(at(0), false)
	b.DoneAt(at(0), tk, time.Second-time.Nanosecond, nil)
	wantState(t, b, at(0), Closed)
	tk, _ = b.AllowAt(at(0), false)
	b.DoneAt(at(0), tk, time.Second, nil)
	wantState(t, b, at(0), Open)

	b = newB(t, Config{FailureRatio: 1, WindowCalls: 1})
	call(t, b, at(0), nil)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)

	b = newB(t, Config{WindowCalls: 1, FailureRatio: 1})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if tk, err := b.AllowAt(at(0), false); err == nil {
				b.DoneAt(at(0), tk, 0, map[bool]error{true: boom}[i%2 == 0])
			}
		})
	}
	wg.Wait()

	for _, now := range []time.Time{{}, time.Unix(1<<40, 0), t0.Add(-100 * 365 * 24 * time.Hour)} {
		b := newB(t, Config{ConsecutiveFailures: 1})
		call(t, b, now, boom)
		if s := b.StateAt(now); s != Open {
			t.Errorf("tripped at %v: %v", now, s)
		}
		if s := b.StateAt(now.Add(31 * time.Second)); s != HalfOpen {
			t.Errorf("tripped at %v: %v 31 s later, want half_open", now, s)
		}
		call(t, b, now.Add(31*time.Second), nil)
		wantState(t, b, now.Add(31*time.Second), Closed)
	}
}
