package plan

import (
	"testing"
)

// TestPlanDecorrelatedGrowth: a DECORRELATED retrier's waits grow up to
// three times the previous one whatever its BackoffRate, and the plan says
// so; it printed "exponential ×2", the rate the loop does not use.
func TestPlanDecorrelatedGrowth(t *testing.T) {
	const doc = `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 4, "JitterStrategy": "DECORRELATED", "MaxDelaySeconds": 100}]`
	pl := runPlan(t, "p.json", doc)
	tr := pl.Tracks[0]
	if tr.Kind != "decorrelated" || tr.Rate != 3 {
		t.Errorf("track kind %q, multiplier %v; want decorrelated, 3", tr.Kind, tr.Rate)
	}
	for k := 2; k < len(tr.Rows); k++ {
		if got := tr.Rows[k].WaitMax / tr.Rows[k-1].WaitMax; got != tr.Rate {
			t.Errorf("attempt %d: the longest wait grows ×%v, the plan says ×%v", k+1, got, tr.Rate)
		}
	}
}
