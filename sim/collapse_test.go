package sim

import (
	"errors"
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
