package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// A wait of 0 (--cap 0, IntervalSeconds 0) reaches backoff as 1 ns, its
// "at once"; the plan shows what the user wrote and what the loop does,
// retries at once with waits of 0 and a worst case of 0, not "from 1ns,
// cap 1ns", waits of 1ns and a worst case of 2ns, and says how to give
// the retries a wait.
func TestPlanAtOnce(t *testing.T) {
	const doc = `{"Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 0, "MaxAttempts": 2}]}`
	pl := runPlan(t, "zero.json", doc)
	tr := pl.Tracks[0]
	if !tr.AtOnce || tr.Base != 0 || tr.Cap != 0 || pl.WorstCase != 0 {
		t.Errorf("IntervalSeconds 0: at_once %v, base %v s, cap %v s, worst case %v s; want true, 0, 0, 0", tr.AtOnce, tr.Base, tr.Cap, pl.WorstCase)
	}
	for _, r := range tr.Rows {
		if r.WaitMax != 0 || r.WorstStart != 0 {
			t.Errorf("attempt %d: longest wait %v s, worst start %v s; want 0", r.Attempt, r.WaitMax, r.WorstStart)
		}
	}
	if len(pl.Warnings) != 1 || !strings.Contains(pl.Warnings[0], "Retry[0] retries at once, with no wait") || !strings.Contains(pl.Warnings[0], "IntervalSeconds above 0") {
		t.Errorf("warnings %q; want one, that Retry[0] retries at once", pl.Warnings)
	}

	t.Setenv(policy.EnvMaxAttempts, "")
	t.Setenv(policy.EnvRetryMode, "")
	var out bytes.Buffer
	cmd := NewCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--cap", "0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"every retried error: 2 retries, at once, with no wait between attempts", "worst case: 0s", "are retried at once too", "give --cap a value above 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("yaoki plan --cap 0 does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "1ns") || strings.Contains(text, "2ns") {
		t.Errorf("yaoki plan --cap 0 shows nanoseconds nobody wrote:\n%s", text)
	}
	var js bytes.Buffer
	cmd = NewCommand()
	cmd.SetOut(&js)
	cmd.SetArgs([]string{"--cap", "0", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var p plan
	if err := json.Unmarshal(js.Bytes(), &p); err != nil || !p.Tracks[0].AtOnce || p.Tracks[0].Cap != 0 {
		t.Errorf("yaoki plan --cap 0 --json: %v, %+v; want at_once and cap_s 0", err, p.Tracks)
	}
}

// A document with no retrier retries nothing, which the plan says as a
// warning: an empty document printed "no warnings".
func TestPlanNoRetrierWarned(t *testing.T) {
	for _, doc := range []string{`{}`, `{"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Fallback"}]}`} {
		pl := runPlan(t, "empty.json", doc)
		if len(pl.Warnings) != 1 || !strings.Contains(pl.Warnings[0], "has no retrier (its Retry block is empty or absent): no error is retried") {
			t.Errorf("%s: warnings %q; want that no error is retried", doc, pl.Warnings)
		}
	}
}
