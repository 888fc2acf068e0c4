package sim

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/retry"
)

// errOf returns the error that a scenario's Run (run, a method expression
// such as Herd.Run) returns for a scenario under policy p.
func errOf[S, P, R any](run func(S, P, uint64) (R, error), p P) func(S) error {
	return func(s S) error {
		_, err := run(s, p, 1)
		return err
	}
}

// TestScenariosValidate: a scenario with a field out of range is an error
// from Run, not a panic: it matches ErrInvalidConfig and names the first
// field out of range as Scenario.Field; a policy out of range is its own
// package's error.
func TestScenariosValidate(t *testing.T) {
	herd, outage := errOf(Herd.Run, NoRetries()), errOf(Outage.Run, NoRetries())
	collapse, tail := errOf(Collapse.Run, NoBackoff()), errOf(Tail.Run, TailPolicy{})
	ratelimit := errOf(RateLimit.Run, NoRetries())
	for i, c := range []struct {
		err   error
		field string
	}{
		{herd(Herd{Clients: -1}), "Herd.Clients"},
		{herd(Herd{HopMean: -1}), "Herd.HopMean"},
		{outage(Outage{Clients: -1}), "Outage.Clients"},
		{outage(Outage{Rate: -1}), "Outage.Rate"},
		{outage(Outage{Rate: math.Inf(1)}), "Outage.Rate"},
		{outage(Outage{Duration: -time.Second}), "Outage.Duration"},
		// Calls closer than a nanosecond apart would never let the run
		// end (the next always comes at the same instant); more than 1e9
		// calls would take hours.
		{outage(Outage{Rate: 1e11}), "Outage.Rate"},
		{outage(Outage{Clients: 1e6, Rate: 1e4}), "Outage.Rate"},
		{outage(Outage{Duration: 1e6 * time.Hour}), "Outage.Duration"},
		{ratelimit(RateLimit{Window: time.Nanosecond}), "RateLimit.Load"},
		{ratelimit(RateLimit{PerWindow: 1e6, Load: 1000, Duration: time.Hour}), "RateLimit.Load"},
		{outage(Outage{HopMean: -1}), "Outage.HopMean"},
		{outage(Outage{FailureRate: 1.5}), "Outage.FailureRate"},
		{outage(Outage{FailureRate: math.NaN()}), "Outage.FailureRate"},
		{collapse(Collapse{Rate: -1}), "Collapse.Rate"},
		{collapse(Collapse{Rate: math.NaN()}), "Collapse.Rate"},
		{collapse(Collapse{Trigger: Trigger{Kind: 9}}), "Collapse.Trigger.Kind"},
		{collapse(Collapse{Trigger: Trigger{Peak: -5}}), "Collapse.Trigger.Peak"},
		{collapse(Collapse{Trigger: Trigger{Factor: -1}}), "Collapse.Trigger.Factor"},
		{collapse(Collapse{Timeout: -1}), "Collapse.Timeout"},
		{collapse(Collapse{ServiceBase: -1}), "Collapse.ServiceBase"},
		{collapse(Collapse{Duration: -1}), "Collapse.Duration"},
		{collapse(Collapse{Threshold: -1}), "Collapse.Threshold"},
		{collapse(Collapse{Clients: -1}), "Collapse.Clients"},
		{collapse(Collapse{Clients: -1, Rate: -1}), "Collapse.Rate"},
		{tail(Tail{Fanout: -1}), "Tail.Fanout"},
		{tail(Tail{Rate: -1}), "Tail.Rate"},
		{tail(Tail{SlowShare: 2}), "Tail.SlowShare"},
		{tail(Tail{Rate: 1e5, Fanout: 10000}), "Tail.Rate"},
		{tail(Tail{Fast: -time.Second}), "Tail.Fast"},
		{tail(Tail{Warmup: time.Minute}), "Tail.Warmup"},
	} {
		var ce *configerr.Error
		if !errors.Is(c.err, ErrInvalidConfig) || !errors.As(c.err, &ce) || ce.Field != c.field {
			t.Errorf("case %d: got %v, want an invalid configuration error on %s matching ErrInvalidConfig", i, c.err, c.field)
		}
	}

	if _, err := (HerdSweep{Clients: []int{10, -5}, Runs: 1}).Run(HerdStrategies(time.Millisecond, time.Second)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("herd sweep with -5 clients: got %v, want ErrInvalidConfig", err)
	}
	bad := Policy{MaxAttempts: -2}
	for name, err := range map[string]error{"herd": errOf(Herd.Run, bad)(Herd{}), "outage": errOf(Outage.Run, bad)(Outage{}),
		"collapse": errOf(Collapse.Run, bad)(Collapse{})} {
		if !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("%s, MaxAttempts -2: got %v, want retry.ErrInvalidConfig", name, err)
		}
	}
	if err := errOf(Tail.Run, TailPolicy{Hedge: &hedge.Config{Quantile: 2}})(Tail{}); !errors.Is(err, hedge.ErrInvalidConfig) {
		t.Errorf("a bad hedge configuration: got %v, want hedge.ErrInvalidConfig", err)
	}
}

// Where a field's zero means a default and zero itself makes sense, a
// negative value stands for it: hops without spread, a trigger at the
// start, a service time that does not grow with the work in service.
func TestNegativeMeansNone(t *testing.T) {
	// One client, no conflict: a read and a write there and back, four
	// hops of exactly 10 ms.
	h, err := Herd{Clients: 1, HopStdDev: -1}.Run(NoRetries(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if h.Time != 40*time.Millisecond {
		t.Errorf("herd without spread: one client done at %v, want 4 hops of 10ms, 40ms", h.Time)
	}
	// A spike of 100/s for 10 s collapses a server whose service time
	// grows with its work; one whose service time stays at 1 s answers
	// every attempt before the timeout, and never collapses.
	spike := Trigger{Peak: 100, Width: 10 * time.Second}
	grows, err := Collapse{Trigger: spike}.Run(NoBackoff(), 3)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := Collapse{Trigger: spike, ServicePerRequest: -1}.Run(NoBackoff(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !grows.Collapsed || flat.Collapsed || flat.Attempts != flat.FirstTries {
		t.Errorf("spike 100/s × 10 s: growing service collapsed %v; flat service collapsed %v with %d attempts for %d requests; want true, false and one attempt each",
			grows.Collapsed, flat.Collapsed, flat.Attempts, flat.FirstTries)
	}
	// A spike at the start: the first seconds carry it.
	early, err := Collapse{Trigger: Trigger{At: -1, Peak: 100, Width: 5 * time.Second}}.Run(NoBackoff(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if early.InFlight[4] <= grows.InFlight[4] {
		t.Errorf("spike at t = 0: %d attempts in service at 5 s, spike at 20 s: %d; want more with the spike at the start",
			early.InFlight[4], grows.InFlight[4])
	}
	pts, err := CollapseSweep{Triggers: []Trigger{{At: -1}}, Runs: 1}.Run([]Policy{NoBackoff()})
	if err != nil {
		t.Fatal(err)
	}
	if at := pts[0].Trigger.At; at != 0 {
		t.Errorf("a sweep's point for a trigger at the start says At = %v, want 0", at)
	}
}
