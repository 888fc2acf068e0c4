package sim

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/throttle"
)

// drawingGuards is a policy whose guards draw: the default breaker (its open
// periods are jittered) and SRE adaptive throttling (it rejects at random).
func drawingGuards() Policy {
	return Policy{Name: "breaker + adaptive", Guards: func(rnd func() float64) Guards {
		b, err := breaker.New(breaker.Config{Rand: rnd})
		if err != nil {
			panic(err)
		}
		a, err := throttle.NewAdaptive(throttle.AdaptiveConfig{Rand: rnd})
		if err != nil {
			panic(err)
		}
		return Guards{Breaker: b, Throttle: a}
	}}
}

// A run is a pure function of its parameters, its policy and its seed, also
// when the policy's guards draw random numbers: the simulator hands them
// the run's source.
func TestRunIsAPureFunctionOfItsSeed(t *testing.T) {
	doc, err := policy.Parse([]byte(`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}],
		"RetryMode": "adaptive", "Breaker": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	pols := []Policy{Yaoki(), drawingGuards(), PolicyOf("document", doc)}
	o := Outage{Duration: 100 * time.Second, FailureRate: 0.5, Overload: true}
	for _, p := range pols {
		a, err := o.Run(p, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := o.Run(p, 7)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("outage, %s, seed 7 twice: %+v then %+v; want the same run", p.Name, a, b)
		}
		c := Collapse{Clients: 10, Trigger: Trigger{Peak: 100, Width: 10 * time.Second}}
		x, err := c.Run(p, 7)
		if err != nil {
			t.Fatal(err)
		}
		y, _ := c.Run(p, 7)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("collapse, %s, seed 7 twice: %d attempts, %d succeeded then %d, %d; want the same run",
				p.Name, x.Attempts, x.Succeeded, y.Attempts, y.Succeeded)
		}
	}
}

// Sweeps with different seeds differ: seeds are mixed by a hash, so that
// nearby seeds do not give the same runs in another order.
func TestSweepSeedsDiffer(t *testing.T) {
	seen := map[float64]uint64{}
	for seed := range uint64(4) {
		pts, err := HerdSweep{Clients: []int{50}, Runs: 4, Seed: seed}.Run(HerdStrategies(5*time.Millisecond, 2*time.Second)[2:3])
		if err != nil {
			t.Fatal(err)
		}
		calls := pts[0].Calls.Mean
		if s, dup := seen[calls]; dup {
			t.Errorf("herd, seeds %d and %d: the same mean calls %.2f; want different runs", s, seed, calls)
		}
		seen[calls] = seed
	}
}

// A point's runs depend on its parameters, not on its place in the lists
// of the sweep.
func TestPointSeedIndependentOfPosition(t *testing.T) {
	full := HerdStrategies(5*time.Millisecond, 2*time.Second)[2:3]
	a, err := HerdSweep{Clients: []int{30}, Runs: 3, Seed: 1}.Run(full)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := HerdSweep{Clients: []int{10, 20, 30}, Runs: 3, Seed: 1}.Run(full)
	if a[0] != b[2] {
		t.Errorf("herd at 30 clients: alone %+v, third in the list %+v; want the same point", a[0], b[2])
	}
	o, err := OutageSweep{FailureRates: []float64{0.3}, Runs: 2, Seed: 1}.Run([]Policy{Retries(3)})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := OutageSweep{FailureRates: []float64{0.1, 0.2, 0.3}, Runs: 2, Seed: 1}.Run([]Policy{Retries(3)})
	if o[0] != q[2] {
		t.Errorf("outage at p = 0.3: alone %+v, third in the list %+v; want the same point", o[0], q[2])
	}
	tr := Trigger{Peak: 80, Width: 5 * time.Second}
	c, err := CollapseSweep{Triggers: []Trigger{tr}, Runs: 2, Seed: 1}.Run([]Policy{NoBackoff()})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := CollapseSweep{Triggers: []Trigger{{Peak: 60}, tr}, Runs: 2, Seed: 1}.Run([]Policy{NoBackoff()})
	if c[0].Collapsed != d[1].Collapsed || c[0].Amplification != d[1].Amplification {
		t.Errorf("collapse at 80/s × 5 s: alone %+v, second in the list %+v; want the same point", c[0], d[1])
	}
}

// Outage, collapse and rate-limit sweeps give the same points with one
// worker and with three (each worker reuses its own workspace, so a run
// that kept anything of the run before it on that workspace would differ),
// also with guards that draw random numbers and guards shared by all the
// clients. Herd and tail have their own (TestHerdSweepDoesNotDependOnWorkers,
// TestTailRepeatable).
func TestSweepsDoNotDependOnWorkers(t *testing.T) {
	shared := drawingGuards()
	shared.Name, shared.Shared = "shared breaker + adaptive", true
	pols := []Policy{Yaoki(), YaokiFleet(), drawingGuards(), shared}
	outage := func(w int) any {
		pts, err := OutageSweep{Outage: Outage{Clients: 20, Duration: 5 * time.Second}, FailureRates: []float64{0.1, 0.5, 1},
			Runs: 3, Seed: 3, Workers: w}.Run(pols)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	collapse := func(w int) any {
		pts, err := CollapseSweep{Triggers: []Trigger{{Peak: 90, Width: 5 * time.Second}, {Peak: 100, Width: 5 * time.Second}},
			Runs: 3, Seed: 3, Workers: w}.Run(pols)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	rateLimit := func(w int) any {
		pts, err := RateLimitSweep{RateLimit: RateLimit{Duration: 5 * time.Second}, Loads: []float64{1, 1.5},
			Runs: 3, Seed: 3, Workers: w}.Run(pols)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	for name, sweep := range map[string]func(int) any{"outage": outage, "collapse": collapse, "ratelimit": rateLimit} {
		// Printed, so that a NaN (no run recovered) equals itself.
		if one, three := fmt.Sprintf("%+v", sweep(1)), fmt.Sprintf("%+v", sweep(3)); one != three {
			t.Errorf("%s: one worker gave\n%s\nthree workers\n%s\nwant the same points", name, one, three)
		}
	}
}
