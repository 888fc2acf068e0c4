package sim

import "testing"

// TestYaokiOutage: yaoki's defaults hide a flaky server (≥ 99.9 % success
// up to p = 0.05) and do not pile on a dead one (≤ 1.10 attempts per call
// at p = 1); no anchor of the 2022 post does both.
func TestYaokiOutage(t *testing.T) {
	pts, err := OutageSweep{FailureRates: []float64{0, 0.01, 0.02, 0.0325, 0.05, 1}, Runs: 2, Seed: 6}.Run([]Policy{Yaoki()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		t.Logf("p = %-6v success %.4f %%, %.3f attempts per call", p.FailureRate, 100*p.Success.Mean, p.Amplification.Mean)
		if p.FailureRate <= 0.05 && p.Success.Mean < 0.999 {
			t.Errorf("p = %v: success %.4f %%, want ≥ 99.9 %%", p.FailureRate, 100*p.Success.Mean)
		}
		if p.FailureRate == 1 && p.Amplification.Mean > 1.10 {
			t.Errorf("p = 1: %.3f attempts per call, want ≤ 1.10", p.Amplification.Mean)
		}
	}
}

// TestYaokiBudgetOnlyOutage records why Yaoki has a breaker: with the
// budget alone, per client as the HTTP transport keeps it, a dead server
// earns no retries but each client's floor (10 retries per second, 100 over
// its 10 s of 10 calls per second) still grants one retry per call: about
// 2 attempts per call.
func TestYaokiBudgetOnlyOutage(t *testing.T) {
	pts, err := OutageSweep{FailureRates: []float64{0.05, 1}, Runs: 1, Seed: 6}.Run([]Policy{YaokiBudgetOnly()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("budget only: p = 0.05 success %.3f %%; p = 1: %.3f attempts per call", 100*pts[0].Success.Mean, pts[1].Amplification.Mean)
	if a := pts[1].Amplification.Mean; a < 1.9 || a > 2.1 {
		t.Errorf("budget only at p = 1: %.3f attempts per call, want about 2 (the floor alone: one retry per call)", a)
	}
}

// TestYaokiCollapse: no spike up to 100/s for 10 s leaves a server
// collapsed when its client runs yaoki's defaults.
func TestYaokiCollapse(t *testing.T) {
	pts, err := CollapseSweep{Triggers: DefaultTriggers(), Runs: 6, Seed: 100}.Run([]Policy{Yaoki()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		t.Logf("spike %v/s × %v: collapsed %.0f %%, recovery %.1f s, %.2f attempts per request",
			p.Trigger.Peak, p.Trigger.Width, 100*p.Collapsed, p.Recovery.Mean, p.Amplification.Mean)
		if p.Collapsed > 0 {
			t.Errorf("spike %v/s × %v: %.0f %% of runs collapsed, want none", p.Trigger.Peak, p.Trigger.Width, 100*p.Collapsed)
		}
	}
}
