package breaker

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// TestProbeReportedTwiceBesideAnother: a half-open probe whose outcome is
// reported twice while another probe of the same half-open period is in
// flight counts once: its repeated success neither closes the breaker on
// one probe's evidence nor takes the other probe's place, its failure
// reported after its success does not reopen the breaker, and its
// ignored outcome frees one probe slot, not two.
func TestProbeReportedTwiceBesideAnother(t *testing.T) {
	canceled := context.Canceled // ignored by DefaultClassify: frees the slot
	half := at(30 * time.Second)
	probe := func(t *testing.T, b *Breaker, who string) uint64 {
		t.Helper()
		tk, err := b.AllowAt(half, false)
		if err != nil {
			t.Fatalf("probe %s refused: %v", who, err)
		}
		return tk
	}
	refused := func(t *testing.T, b *Breaker, why string) {
		t.Helper()
		if _, err := b.AllowAt(half, false); err == nil {
			t.Errorf("a probe allowed %s", why)
		}
	}
	state := func(t *testing.T, b *Breaker, want State, why string) {
		t.Helper()
		if got := b.StateAt(half); got != want {
			t.Errorf("%s: state %v, want %v", why, got, want)
		}
	}
	open := func(t *testing.T, probes int) *Breaker {
		b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: probes})
		call(t, b, at(0), boom) // open until +30 s
		return b
	}

	t.Run("success twice", func(t *testing.T) {
		b := open(t, 2)
		a, c := probe(t, b, "A"), probe(t, b, "B")
		b.DoneAt(half, a, time.Millisecond, nil)
		b.DoneAt(half, a, time.Millisecond, nil) // again
		state(t, b, HalfOpen, "A's success reported twice, B in flight")
		refused(t, b, "with one probe in flight and one success of two")
		b.DoneAt(half, c, time.Millisecond, nil)
		state(t, b, Closed, "A and B succeeded")
	})
	t.Run("success twice, three probes", func(t *testing.T) {
		b := open(t, 3)
		a, c := probe(t, b, "A"), probe(t, b, "B")
		b.DoneAt(half, a, time.Millisecond, nil)
		b.DoneAt(half, a, time.Millisecond, nil) // again
		d := probe(t, b, "C")                    // one success, one in flight: one slot left
		refused(t, b, "with two probes in flight and one success of three")
		b.DoneAt(half, c, time.Millisecond, nil) // B's outcome counts
		state(t, b, HalfOpen, "A and B succeeded, C in flight")
		b.DoneAt(half, d, time.Millisecond, nil)
		state(t, b, Closed, "A, B and C succeeded")
	})
	t.Run("success then failure", func(t *testing.T) {
		b := open(t, 2)
		a, c := probe(t, b, "A"), probe(t, b, "B")
		b.DoneAt(half, a, time.Millisecond, nil)
		b.DoneAt(half, a, time.Millisecond, boom) // A again, contradicting itself
		state(t, b, HalfOpen, "A's failure reported after its success")
		b.DoneAt(half, c, time.Millisecond, nil)
		state(t, b, Closed, "A and B succeeded")
	})
	t.Run("ignored twice", func(t *testing.T) {
		b := open(t, 2)
		a, _ := probe(t, b, "A"), probe(t, b, "B")
		b.DoneAt(half, a, time.Millisecond, canceled)
		b.DoneAt(half, a, time.Millisecond, canceled) // again
		probe(t, b, "C")                              // A's slot
		refused(t, b, "beyond HalfOpenProbes 2: A's slot was freed twice")
	})
	t.Run("first attempt twice, RetriesOnly", func(t *testing.T) {
		// A first attempt passes a half-open breaker without a slot, and
		// its outcome counts as a probe's: once.
		b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 2, RetriesOnly: true})
		call(t, b, at(0), boom)
		tk, err := b.AllowAt(half, true) // a retry: a probe, which moves it half-open
		if err != nil {
			t.Fatal(err)
		}
		f, err := b.AllowAt(half, false) // a first attempt beside it
		if err != nil {
			t.Fatal(err)
		}
		b.DoneAt(half, f, time.Millisecond, nil)
		b.DoneAt(half, f, time.Millisecond, nil) // again
		state(t, b, HalfOpen, "the first attempt's success reported twice, the probe in flight")
		b.DoneAt(half, tk, time.Millisecond, nil)
		state(t, b, Closed, "the first attempt and the probe succeeded")
	})
	t.Run("permit done twice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { // Allow reads the clock: a virtual one
			b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 2})
			call(t, b, time.Now(), boom) // open for 30 s
			time.Sleep(30 * time.Second) // virtual time: the open period ends
			pa, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			pb, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			pa.Done(nil)
			pa.Done(nil) // again
			if s := b.State(); s != HalfOpen {
				t.Errorf("A's Done(nil) twice, B in flight: state %v, want half_open", s)
			}
			pb.Done(nil)
			if s := b.State(); s != Closed {
				t.Errorf("A and B succeeded: state %v, want closed", s)
			}
		})
	})
}

// TestProbeIDsWrap: past the last id, a half-open generation's ids start
// again from 1, skipping those whose outcome has not come; each outcome
// still counts once.
func TestProbeIDsWrap(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 3})
	call(t, b, at(0), boom)
	half := at(30 * time.Second)
	first, err := b.AllowAt(half, false) // id 1
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.lastID = maxID - 1
	b.mu.Unlock()
	var tks []uint64
	for range 2 { // ids maxID, then 2: 1 is in flight
		tk, err := b.AllowAt(half, false)
		if err != nil {
			t.Fatal(err)
		}
		tks = append(tks, tk)
	}
	ids := []uint64{first >> idShift & maxID, tks[0] >> idShift & maxID, tks[1] >> idShift & maxID}
	if ids[0] != 1 || ids[1] != maxID || ids[2] != 2 {
		t.Fatalf("probe ids %v, want [1 %d 2]", ids, maxID)
	}
	for _, tk := range []uint64{first, first, tks[0], tks[0]} {
		b.DoneAt(half, tk, time.Millisecond, nil)
	}
	wantState(t, b, half, HalfOpen) // two of three, each once
	b.DoneAt(half, tks[1], time.Millisecond, nil)
	wantState(t, b, half, Closed)
}

// TestProbesReportedTwiceConcurrently: of 50 probes in flight, 49 report
// their success twice at once; the breaker waits for the 50th.
func TestProbesReportedTwiceConcurrently(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 50})
	call(t, b, at(0), boom)
	half := at(30 * time.Second)
	tks := make([]uint64, 50)
	for i := range tks {
		var err error
		if tks[i], err = b.AllowAt(half, false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, tk := range tks[:49] {
		for range 2 {
			wg.Go(func() { b.DoneAt(half, tk, time.Millisecond, nil) })
		}
	}
	wg.Wait()
	wantState(t, b, half, HalfOpen)
	if _, err := b.AllowAt(half, false); err == nil {
		t.Error("a 51st probe allowed: 49 succeeded and one is in flight")
	}
	b.DoneAt(half, tks[49], time.Millisecond, nil)
	wantState(t, b, half, Closed)
}

// TestJitterDrawOutOfRange: Config.Rand breaks its contract (draws in
// [0, 1)). Each open period stays within [OpenTimeout, OpenTimeout × (1 +
// OpenJitter)]: a NaN, an infinite or a huge draw made the period
// negative (time.Duration of NaN), so the breaker tripped and was
// half-open at once, never refusing; -1 shortened it below OpenTimeout;
// 2 lengthened it past its jitter.
func TestJitterDrawOutOfRange(t *testing.T) {
	for _, draw := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 2, 1e12, 1} {
		b := newB(t, Config{ConsecutiveFailures: 1, OpenJitter: 0.1, Rand: func() float64 { return draw }})
		call(t, b, at(0), boom)
		u, open := b.OpenUntil(at(0))
		if d := u.Sub(at(0)); !open || d < 30*time.Second || d > 33*time.Second {
			t.Errorf("draw %v: open %v for %v, want open for 30 s to 33 s (OpenTimeout + up to 10 %%)", draw, open, d)
		}
	}
}
