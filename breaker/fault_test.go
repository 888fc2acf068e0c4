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
