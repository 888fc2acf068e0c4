package hedge_test

import (
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

func mustNew(t *testing.T, c hedge.Config) *hedge.Hedger {
	t.Helper()
	h, err := hedge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestConfigValidate(t *testing.T) {
	bad := []struct {
		c     hedge.Config
		field string
	}{
		{hedge.Config{Delay: -1}, "Delay"},
		{hedge.Config{Quantile: 1}, "Quantile"},
		{hedge.Config{Quantile: 0.3}, "Quantile"},
		{hedge.Config{MaxHedges: 11}, "MaxHedges"},
		{hedge.Config{MaxHedges: -1}, "MaxHedges"},
		{hedge.Config{Budget: -0.5}, "Budget"},
		{hedge.Config{Budget: 11}, "Budget"},
		{hedge.Config{MinPerSecond: -2}, "MinPerSecond"},
		{hedge.Config{Brownout: 1.5}, "Brownout"},
		{hedge.Config{Window: time.Millisecond}, "Window"},
	}
	for _, b := range bad {
		_, err := hedge.New(b.c)
		var ce *configerr.Error
		if !errors.Is(err, hedge.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != b.field {
			t.Errorf("New(%+v): got %v, want an invalid configuration error on %s", b.c, err, b.field)
		}
	}
	for _, c := range []hedge.Config{{}, {Delay: time.Millisecond, Budget: hedge.Off, Brownout: hedge.Off, MinPerSecond: hedge.Off},
		{Quantile: 0.5, MaxHedges: 10, Budget: 10, Brownout: 1, Window: time.Hour}} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", c, err)
		}
	}
	c := mustNew(t, hedge.Config{}).Config()
	if c.Quantile != 0.97 || c.MaxHedges != 2 || c.Budget != 0.05 || c.MinPerSecond != 1 || c.Brownout != 0.5 || c.Window != 10*time.Second {
		t.Errorf("defaults: got %+v", c)
	}
}

// A fixed delay is used from the first call.
func TestPlanFixed(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: 50 * time.Millisecond})
	if d, ok := h.PlanAt(t0); d != 50*time.Millisecond || !ok {
		t.Errorf("PlanAt: got %v, %v; want 50ms, true", d, ok)
	}
}

// An adaptive Hedger does not hedge until it knows MinSamples latencies,
// then hedges after their 97th percentile, and follows them when they
// change.
func TestPlanAdaptive(t *testing.T) {
	h := mustNew(t, hedge.Config{Window: time.Second})
	now := t0
	// 5 ms to 14 ms for 98 % of the first attempts, 200 ms for the others.
	lat := func(i int) time.Duration {
		if i%100 >= 98 {
			return 200 * time.Millisecond
		}
		return time.Duration(5+i%100/10) * time.Millisecond // 5 ms … 14 ms
	}
	for i := range hedge.MinSamples - 1 {
		if d, ok := h.PlanAt(now); ok || d != 0 {
			t.Fatalf("call %d, before %d latencies: PlanAt = %v, %v; want 0, false", i, hedge.MinSamples, d, ok)
		}
		h.ObserveAt(now, lat(i), false)
		now = now.Add(time.Millisecond)
	}
	for i := hedge.MinSamples - 1; i < 500; i++ {
		h.ObserveAt(now, lat(i), false)
		now = now.Add(time.Millisecond)
	}
	now = now.Add(20 * time.Millisecond) // past the refresh interval (window / 64)
	d, ok := h.PlanAt(now)
	if !ok || d < 13*time.Millisecond || d > 16*time.Millisecond {
		t.Errorf("after 500 latencies: PlanAt = %v, %v; want about 14ms (their 97th percentile), true", d, ok)
	}
	// The latencies double: within a window the delay follows them.
	for i := range 1000 {
		h.ObserveAt(now, 2*lat(i), false)
		now = now.Add(time.Millisecond)
	}
	if d, _ := h.PlanAt(now); d < 26*time.Millisecond || d > 32*time.Millisecond {
		t.Errorf("a window after the latencies doubled: delay %v, want about 28ms", d)
	}
}

// The budget grants Budget × calls + MinPerSecond × its horizon (a fifth
// of Window) hedges over its horizon, and grants again as calls keep
// coming.
func TestBudget(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: 0.05, MinPerSecond: 1, Window: 10 * time.Second})
	for range 200 {
		h.PlanAt(t0)
	}
	// 0.05 × 200 + 1 × 2 = 12 hedges.
	for i := range 12 {
		if err := h.AllowAt(t0); err != nil {
			t.Fatalf("hedge %d of 12: %v", i+1, err)
		}
	}
	if err := h.AllowAt(t0); !errors.Is(err, hedge.ErrBudget) {
		t.Fatalf("hedge 13 of 12: got %v, want ErrBudget", err)
	}
	// 20 more calls earn one more hedge.
	for range 20 {
		h.PlanAt(t0.Add(time.Second))
	}
	if err := h.AllowAt(t0.Add(time.Second)); err != nil {
		t.Fatalf("after 20 more calls: %v", err)
	}
	if err := h.AllowAt(t0.Add(time.Second)); !errors.Is(err, hedge.ErrBudget) {
		t.Fatalf("the hedge after it: got %v, want ErrBudget", err)
	}
	// Once the horizon (2 s) slid past them, the floor alone: 2.
	late := t0.Add(4 * time.Second)
	for i := range 2 {
		if err := h.AllowAt(late); err != nil {
			t.Fatalf("floor hedge %d: %v", i+1, err)
		}
	}
	if err := h.AllowAt(late); !errors.Is(err, hedge.ErrBudget) {
		t.Fatalf("beyond the floor: got %v, want ErrBudget", err)
	}
	s := h.StatsAt(late)
	if s.Calls != 0 || s.Hedges != 2 {
		t.Errorf("StatsAt: %+v, want 0 calls and 2 hedges in the window", s)
	}
	// Off: no limit.
	free := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: hedge.Off})
	for i := range 1000 {
		if err := free.AllowAt(t0); err != nil {
			t.Fatalf("Budget Off, hedge %d: %v", i+1, err)
		}
	}
}

// When most first attempts are slower than the delay, hedging stops, and
// it resumes by itself once the slow ones have left the window.
func TestBrownout(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: 10 * time.Millisecond, Budget: hedge.Off, Window: 5 * time.Second})
	now := t0
	step := func(n int, slow bool) {
		for range n {
			h.PlanAt(now)
			lat := 5 * time.Millisecond
			if slow {
				lat = 300 * time.Millisecond
			}
			h.ObserveAt(now, lat, slow)
			now = now.Add(time.Millisecond)
		}
	}
	step(100, false) // [0, 100 ms): healthy
	if err := h.AllowAt(now); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	step(90, true) // 90 slow of 190: not most
	if _, ok := h.PlanAt(now); !ok {
		t.Fatalf("90 slow of 191: PlanAt says no hedge, want hedges")
	}
	step(20, true) // 110 slow of 211: most
	if _, ok := h.PlanAt(now); ok {
		t.Errorf("110 slow of 212: PlanAt says hedge, want none (brownout)")
	}
	if err := h.AllowAt(now); !errors.Is(err, hedge.ErrBrownout) {
		t.Errorf("110 slow of 212: AllowAt = %v, want ErrBrownout", err)
	}
	// A brownout window (a fifth of Window) later, healthy again.
	now = now.Add(time.Second)
	step(100, false)
	if err := h.AllowAt(now); err != nil {
		t.Errorf("recovered: %v", err)
	}
	off := mustNew(t, hedge.Config{Delay: 10 * time.Millisecond, Brownout: hedge.Off})
	for range 100 {
		off.ObserveAt(t0, time.Second, true)
	}
	if err := off.AllowAt(t0); err != nil {
		t.Errorf("Brownout Off, every call slow: %v", err)
	}
}
