package retry_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// A call that may make one attempt only (under SingleAttempt: an outer
// layer retries; or with MaxAttempts 1; or under a Hedger whose MaxHedges
// is 0) cannot be hedged: a hedge is a second attempt. It is run as DoValue
// runs it: the Hedger does not plan it (it is not one of the calls its
// budget counts), nor observe its attempt, and no HedgeRefused is reported
// for the hedge it never could send.
func TestHedgeSingleAttemptNotPlanned(t *testing.T) {
	cases := []struct {
		name string
		ctx  func() context.Context
		max  int
	}{
		{"SingleAttempt", func() context.Context { return retry.SingleAttempt(context.Background()) }, 0},
		{"MaxAttempts1", context.Background, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := hedge.New(hedge.Config{Delay: 50 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				obs := &events{}
				p := retry.Policy{MaxAttempts: c.max, Env: &retry.Env{Hedger: h, Observer: obs}}
				s := &script{lat: []time.Duration{200 * time.Millisecond}}
				if v, err := retry.HedgeValue(c.ctx(), p, s.call, s.discard); err != nil || v != 1 {
					t.Fatalf("HedgeValue = %v, %v; want the first attempt's answer", v, err)
				}
				if st := h.StatsAt(time.Now()); st.Calls != 0 || st.Hedges != 0 || st.Seen != 0 {
					t.Errorf("Hedger stats %+v; want no call planned, no hedge, no first attempt observed", st)
				}
				if r := obs.of(event.HedgeRefused); len(r) != 0 {
					t.Errorf("HedgeRefused events %+v; want none: the call could not be hedged", r)
				}
				if n := s.n.Load(); n != 1 {
					t.Errorf("%d attempts, want 1", n)
				}
			})
		})
	}
	t.Run("MaxHedges0", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := &countingHedger{max: 0}
			obs := &events{}
			p := retry.Policy{Env: &retry.Env{Hedger: h, Observer: obs}}
			s := &script{lat: []time.Duration{200 * time.Millisecond}}
			if v, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil || v != 1 {
				t.Fatalf("HedgeValue = %v, %v; want the first attempt's answer", v, err)
			}
			if h.plans.Load() != 0 || h.allows.Load() != 0 || h.observes.Load() != 0 {
				t.Errorf("PlanAt %d, AllowAt %d, ObserveAt %d times; want none for a Hedger that sends no hedge",
					h.plans.Load(), h.allows.Load(), h.observes.Load())
			}
			if r := obs.of(event.HedgeRefused); len(r) != 0 {
				t.Errorf("HedgeRefused events %+v; want none", r)
			}
		})
	})
}

// A failed attempt of a call that cannot be hedged is retried as DoValue
// retries it (here: the outer layer retries, so it gives up at once with
// ReasonOuterLayer), and its value is returned, not discarded.
func TestHedgeSingleAttemptGivesUpAsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hedge.New(hedge.Config{Delay: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{Env: &retry.Env{Hedger: h}}
		s := &script{lat: []time.Duration{200 * time.Millisecond}, errs: []error{errFlaky}}
		v, err := retry.HedgeValue(retry.SingleAttempt(context.Background()), p, s.call, s.discard)
		if ge := asError(t, err); ge.Reason != retry.ReasonOuterLayer || v != 1 {
			t.Fatalf("HedgeValue = %v, %v; want attempt 1's value and a give-up for the outer layer", v, err)
		}
		if len(s.discarded) != 0 {
			t.Errorf("discarded %v, want nothing: the one value is returned", s.discarded)
		}

		r, err := retry.New(p)
		if err != nil {
			t.Fatal(err)
		}
		s = &script{lat: []time.Duration{200 * time.Millisecond}, errs: []error{errFlaky}}
		if _, err := retry.HedgeValueWith(retry.SingleAttempt(context.Background()), r, s.call, s.discard); asError(t, err).Reason != retry.ReasonOuterLayer {
			t.Errorf("HedgeValueWith = %v; want a give-up for the outer layer", err)
		}
		if st := h.StatsAt(time.Now()); st.Calls != 0 || st.Seen != 0 {
			t.Errorf("Hedger stats %+v; want no call planned or observed", st)
		}
	})
}

// countingHedger is a retry.Hedger with a fixed delay of 50 ms that allows
// every hedge, sends at most max per call, and counts what it is asked.
type countingHedger struct {
	max                     int
	plans, allows, observes atomic.Int32
}

func (h *countingHedger) PlanAt(time.Time) (time.Duration, bool) {
	h.plans.Add(1)
	return 50 * time.Millisecond, true
}
func (h *countingHedger) AllowAt(time.Time) error { h.allows.Add(1); return nil }
func (h *countingHedger) ObserveAt(time.Time, time.Duration, bool) {
	h.observes.Add(1)
}
func (h *countingHedger) MaxHedges() int { return h.max }

// A call that HedgeValue runs as DoValue (no Hedger, or one attempt only)
// allocates nothing when it succeeds, as DoValue does: its Policy, which
// the hedging driver's goroutines share, was moved to the heap on every
// call (112 B).
func TestHedgeValueNotHedgedAllocatesNothing(t *testing.T) {
	h, err := hedge.New(hedge.Config{Delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	op := func(context.Context) (int, error) { return 1, nil }
	single := retry.SingleAttempt(context.Background())
	hedged := retry.Policy{Env: &retry.Env{Hedger: h}}
	for name, f := range map[string]func(){
		"no Hedger":     func() { _, _ = retry.HedgeValue(context.Background(), retry.Policy{}, op, nil) },
		"SingleAttempt": func() { _, _ = retry.HedgeValue(single, hedged, op, nil) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}
