package sim

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

func TestCollapseStableWithoutTrigger(t *testing.T) {
	c := Collapse{Trigger: Trigger{Kind: NoTrigger}}
	for seed := range uint64(3) {
		r, err := c.Run(NoBackoff(), seed)
		if err != nil {
			t.Fatal(err)
		}
		if r.Collapsed || r.Recovery != 0 || r.Amplification() > 1.01 {
			t.Fatalf("seed %d, no trigger: collapsed %v, recovery %v, amplification %.3f; want a quiet run",
				seed, r.Collapsed, r.Recovery, r.Amplification())
		}
		// Little's law: 40/s × (1 + 0.01·C) s gives C ≈ 67 in service.
		mean := 0.0
		for _, n := range r.InFlight[10:] {
			mean += float64(n) / float64(len(r.InFlight)-10)
		}
		if mean < 55 || mean > 80 {
			t.Fatalf("seed %d: %.1f attempts in service on average, want about 67", seed, mean)
		}
		if len(r.Goodput) != 80 || r.Succeeded < 2800 || r.Succeeded > 3400 {
			t.Fatalf("seed %d: %d answers over %d s, want about 40 per second for 80 s", seed, r.Succeeded, len(r.Goodput))
		}
	}
}

// TestCollapseParity: a spike to 80/s for 5 s leaves the server collapsed
// in most runs when clients retry at once, and backoff with jitter (waits
// of seconds) brings it back within seconds.
func TestCollapseParity(t *testing.T) {
	pts, err := CollapseSweep{Triggers: []Trigger{{Peak: 80, Width: 5 * time.Second}}, Runs: 20, Seed: 80}.Run(CollapseAnchors())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		t.Logf("%-16s collapsed in %2.0f %% of runs; recovery %.1f s ± %.1f; %.2f attempts per request",
			p.Policy, 100*p.Collapsed, p.Recovery.Mean, p.Recovery.SD, p.Amplification.Mean)
	}
	if nb := pts[0]; nb.Collapsed <= 0.5 {
		t.Errorf("no backoff: collapsed in %.0f %% of runs, want most", 100*nb.Collapsed)
	}
	if bj := pts[1]; bj.Collapsed > 0.1 || !(bj.Recovery.Mean < 10) {
		t.Errorf("backoff + jitter: collapsed in %.0f %% of runs, recovery %.1f s; want ≤ 10 %% and under 10 s",
			100*bj.Collapsed, bj.Recovery.Mean)
	}
	// A collapsed server still answers, but late: goodput falls to almost
	// nothing while it is down.
	if g := pts[0].Goodput; g[70] > 20 {
		t.Errorf("no backoff: %.1f answers per second at t = 70 s, want a collapsed goodput", g[70])
	}
}

func TestCollapseSlowdownTrigger(t *testing.T) {
	c := Collapse{Trigger: Trigger{Kind: Slowdown, Factor: 3, Width: 10 * time.Second}}
	r, err := c.Run(NoBackoff(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Collapsed || r.Recovery != -1 {
		t.Fatalf("service ×3 for 10 s, no backoff: collapsed %v (recovery %v), want collapsed (-1)", r.Collapsed, r.Recovery)
	}
	// The spike's arrivals never change under a slowdown.
	if r.FirstTries < 2800 || r.FirstTries > 3600 {
		t.Fatalf("%d requests in 80 s, want about 3200", r.FirstTries)
	}
}

func TestCollapseIsRepeatable(t *testing.T) {
	a, _ := Collapse{}.Run(BackoffJitter(time.Second), 5)
	b, _ := Collapse{}.Run(BackoffJitter(time.Second), 5)
	if a.Attempts != b.Attempts || a.InFlightAtEnd != b.InFlightAtEnd || a.Succeeded != b.Succeeded {
		t.Fatalf("same seed, different runs: %+v and %+v", a, b)
	}
}

// Guards see timeouts as such, and a refusing budget ends requests with
// the reason.
func TestCollapseGuards(t *testing.T) {
	var timeouts int
	p := Policy{Name: "counted", MaxAttempts: 3, Immediate: true, Guards: func(func() float64) Guards {
		return Guards{Budget: &timeoutBudget{n: &timeouts}}
	}}
	r, err := Collapse{Trigger: Trigger{Peak: 100, Width: 10 * time.Second}}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if timeouts == 0 || r.GaveUp[retry.ReasonBudgetExhausted] != timeouts {
		t.Fatalf("budget saw %d timeouts, refused %d retries; want them equal and not zero", timeouts, r.GaveUp[retry.ReasonBudgetExhausted])
	}
	if r.Collapsed {
		t.Fatal("no retries at all, and yet collapsed")
	}
	if !errors.Is(errTimeout, retry.ErrAttemptTimeout) {
		t.Fatal("ErrTimeout does not match retry.ErrAttemptTimeout")
	}
}

type timeoutBudget struct{ n *int }

func (b *timeoutBudget) AllowRetryAt(_ time.Time, timeout bool) bool {
	if timeout {
		*b.n++
	}
	return false
}
func (b *timeoutBudget) RecordAt(time.Time, bool, bool) {}

func TestTriggerKindString(t *testing.T) {
	for k, want := range map[TriggerKind]string{Spike: "spike", Slowdown: "slowdown", NoTrigger: "none", 9: "TriggerKind(9)"} {
		if s := k.String(); s != want {
			t.Errorf("TriggerKind(%d).String() = %q, want %q", uint8(k), s, want)
		}
	}
}

var referenceFlag = flag.Bool("reference", false, "TestCollapseReferenceGrid: run the collapse's reference grid, 200 runs a point (about 10 s of CPU)")

// TestCollapseReferenceGrid compares backoff + jitter on the reference
// grid (spikes of 50–100/s for 5 s and 10 s, 200 runs a point, seed 1, as
// `yaoki sim collapse --peak 50,60,70,80,90,100 --width 5s,10s --runs 200
// --policies "backoff + jitter"` runs it) with the reference model's own
// counts of collapsed runs out of 200 (its Python, run outside this
// repository, docs/simulator.md): at every point the two 95 % Wilson
// intervals overlap.
//
//	go test ./sim -run TestCollapseReferenceGrid -v -args -reference
func TestCollapseReferenceGrid(t *testing.T) {
	if !*referenceFlag {
		t.Skip("runs 2400 collapses: go test ./sim -run TestCollapseReferenceGrid -v -args -reference")
	}
	reference := map[[2]float64]int{ // {peak, width in s}: runs collapsed of 200
		{90, 5}: 21, {100, 5}: 134, {70, 10}: 31, {80, 10}: 199, {90, 10}: 200, {100, 10}: 200,
	}
	var trs []Trigger
	for _, w := range []time.Duration{5 * time.Second, 10 * time.Second} {
		for peak := 50.0; peak <= 100; peak += 10 {
			trs = append(trs, Trigger{Kind: Spike, At: 20 * time.Second, Width: w, Peak: peak})
		}
	}
	pts, err := CollapseSweep{Triggers: trs, Runs: 200, Seed: 1, Workers: 2}.Run(CollapseAnchors()[1:2])
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		ref := reference[[2]float64{p.Trigger.Peak, p.Trigger.Width.Seconds()}] // 0 where not listed
		n := int(math.Round(p.Collapsed * float64(p.Runs)))
		slo, shi := wilson(n, p.Runs)
		rlo, rhi := wilson(ref, 200)
		t.Logf("%s: %5.1f %% [%.1f, %.1f] collapsed; reference %5.1f %% [%.1f, %.1f]", p.Policy+" "+fmt.Sprint(p.Trigger.Peak, "/s × ", p.Trigger.Width),
			100*p.Collapsed, 100*slo, 100*shi, 100*float64(ref)/200, 100*rlo, 100*rhi)
		if shi < rlo || rhi < slo {
			t.Errorf("spike %v/s × %v: %d of %d runs collapsed, the reference %d of 200: the 95 %% intervals do not overlap",
				p.Trigger.Peak, p.Trigger.Width, n, p.Runs, ref)
		}
	}
}

// wilson returns the 95 % Wilson score interval of k successes in n.
func wilson(k, n int) (lo, hi float64) {
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return max(0, c-h), min(1, c+h)
}
