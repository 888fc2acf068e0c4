package plan

import (
	"testing"
)

// TestPlanPolicyTracksWithinAttempts: when the call's attempts
// (MaxTotalAttempts, RetryMode off) allow fewer retries than a retrier's
// MaxAttempts, each table shows the retries the loop makes, not the
// retrier's: it showed five waits, up to 16 s, for a call that retries
// once.
func TestPlanPolicyTracksWithinAttempts(t *testing.T) {
	for _, doc := range []string{
		`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 5}], "MaxTotalAttempts": 2}`,
		`{"Retry": [{"ErrorEquals": ["A"], "MaxAttempts": 2}, {"ErrorEquals": ["States.ALL"], "MaxAttempts": 6}], "MaxTotalAttempts": 4}`,
		`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 5}], "RetryMode": "off"}`,
	} {
		pl := runPlan(t, "p.json", doc)
		tr := pl.Tracks[len(pl.Tracks)-1]
		got := loopWaits(t, doc, named("x"), 10)
		if len(tr.Rows) != len(got)+1 || tr.Retries != len(got) || tr.More != 0 {
			t.Errorf("%s: the loop made %d retries, the plan's table shows %d retries in %d rows (%d more)", doc, len(got), tr.Retries, len(tr.Rows), tr.More)
			continue
		}
		for k, w := range got {
			if r := tr.Rows[k+1]; r.WaitMax != w.Seconds() {
				t.Errorf("%s: retry %d waits %v in the loop, the plan says %v s", doc, k+1, w, r.WaitMax)
			}
		}
	}
}
