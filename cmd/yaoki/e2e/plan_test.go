package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
)

type planJSON struct {
	Attempts    int     `json:"attempts"`
	WorstCase   float64 `json:"worst_case_s"`
	BottomCalls float64 `json:"bottom_calls"`
	CostFailing float64 `json:"cost_per_million_failing"`
	Warnings    []string
	Schedules   []struct {
		Label    string `json:"label"`
		Retries  int    `json:"retries"`
		Attempts []struct {
			Attempt    int     `json:"attempt"`
			WaitMin    float64 `json:"wait_min_s"`
			WaitMean   float64 `json:"wait_mean_s"`
			WaitMax    float64 `json:"wait_max_s"`
			WorstStart float64 `json:"worst_start_s"`
			WorstEnd   float64 `json:"worst_end_s"`
		} `json:"attempts"`
	} `json:"schedules"`
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// The plan's numbers are the schedule's arithmetic: bounds from
// backoff.Schedule.Bounds, worst case = Σ max waits + attempts × timeout.
func TestPlanMatchesScheduleArithmetic(t *testing.T) {
	for _, jitter := range []string{"full", "equal", "none", "decorrelated"} {
		r := run(t, nil, "plan", "--max-attempts", "6", "--base", "100ms", "--cap", "1s", "--attempt-timeout", "2s",
			"--jitter", jitter, "--layers", "3", "--price-per-million", "0.4", "--json")
		if r.code != 0 {
			t.Fatalf("plan --jitter %s: exit %d: %s", jitter, r.code, r.stderr)
		}
		var pl planJSON
		if err := json.Unmarshal([]byte(r.stdout), &pl); err != nil {
			t.Fatalf("plan --json: %v\n%s", err, r.stdout)
		}
		j, _ := backoff.ParseJitter(jitter)
		s := backoff.Schedule{Base: 100 * time.Millisecond, Cap: time.Second, Jitter: j}
		rows := pl.Schedules[0].Attempts
		if pl.Attempts != 6 || len(rows) != 6 {
			t.Fatalf("%s: %d attempts, %d rows; want 6, 6", jitter, pl.Attempts, len(rows))
		}
		worst := 0.0
		for k := 1; k <= 5; k++ {
			b := s.Bounds(k)
			got := rows[k]
			worst += 2 + b.Max.Seconds()
			if got.Attempt != k+1 || !near(got.WaitMin, b.Min.Seconds()) || !near(got.WaitMean, b.Mean.Seconds()) ||
				!near(got.WaitMax, b.Max.Seconds()) || !near(got.WorstStart, worst) || !near(got.WorstEnd, worst+2) {
				t.Errorf("%s: attempt %d: got %+v, want min %v mean %v max %v, worst start %v, end %v",
					jitter, k+1, got, b.Min, b.Mean, b.Max, worst, worst+2)
			}
		}
		if want := worst + 2; !near(pl.WorstCase, want) {
			t.Errorf("%s: worst case %v s, want %v s", jitter, pl.WorstCase, want)
		}
		if pl.BottomCalls != 216 || !near(pl.CostFailing, 216*0.4) {
			t.Errorf("%s: bottom calls %v, cost %v; want 6^3 = 216 and 86.4", jitter, pl.BottomCalls, pl.CostFailing)
		}
	}
}

func TestPlanText(t *testing.T) {
	r := run(t, nil, "plan", "--max-attempts", "4", "--base", "1s", "--cap", "3s", "--jitter", "none", "--max-time", "5s", "--layers", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Waits 1s, 2s, 3s (capped): worst starts 1s, 3s, 6s; 6s is past the 5s deadline.
	for _, want := range []string{
		"  2        1s         1s         1s         1s",
		"  3        2s         2s         2s         3s",
		"  4        3s         3s         3s         6s             6s  (after the deadline)",
		"worst case: 5s",
		"has no jitter",
		"the worst case (6s) is longer than the deadline (5s)",
		"16 calls there (4^2)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A Step Functions block: one schedule per retrier, and the warnings its
// Step Functions defaults deserve (no cap, no jitter).
func TestPlanStepFunctionsDocument(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "retry.json")
	os.WriteFile(file, []byte(`"Retry": [ {
    "ErrorEquals": [ "States.Timeout" ],
    "IntervalSeconds": 3,
    "MaxAttempts": 2,
    "BackoffRate": 1.5
}, {
    "ErrorEquals": [ "States.ALL" ],
    "IntervalSeconds": 1,
    "MaxAttempts": 3,
    "MaxDelaySeconds": 3,
    "JitterStrategy": "FULL"
} ]`), 0o600)
	r := run(t, nil, "plan", "--policy", file, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var pl planJSON
	if err := json.Unmarshal([]byte(r.stdout), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.Attempts != 6 || len(pl.Schedules) != 2 {
		t.Fatalf("got %d attempts, %d schedules; want 1+2+3 = 6 attempts, 2 schedules", pl.Attempts, len(pl.Schedules))
	}
	if got := pl.Schedules[0].Attempts[2].WaitMax; !near(got, 4.5) {
		t.Errorf("Retry[0] retry 2 waits %v s, want 3·1.5 = 4.5 s", got)
	}
	// Worst mix: both of Retry[0]'s (3 + 4.5) and Retry[1]'s 1, 2, 3 (capped).
	if !near(pl.WorstCase, 3+4.5+1+2+3) {
		t.Errorf("worst case %v s, want 13.5 s", pl.WorstCase)
	}
	joined := strings.Join(pl.Warnings, "\n")
	for _, want := range []string{"Retry[0] has no cap", "Retry[0] has no jitter"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q: %s", want, joined)
		}
	}
	if strings.Contains(joined, "Retry[1] has no") {
		t.Errorf("Retry[1] has a cap and jitter, yet: %s", joined)
	}
}

// With MaxTotalAttempts below 1 + Σ MaxAttempts, the worst case is the
// worst mix of errors within the limit.
func TestPlanWorstMixWithinTotal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "retry.json")
	os.WriteFile(file, []byte(`{"Retry": [
  {"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 3, "MaxAttempts": 2, "BackoffRate": 1.5},
  {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3, "MaxDelaySeconds": 3}],
  "MaxTotalAttempts": 4}`), 0o600)
	r := run(t, nil, "plan", "--policy", file, "--json")
	var pl planJSON
	if err := json.Unmarshal([]byte(r.stdout), &pl); err != nil {
		t.Fatalf("%v: %s %s", err, r.stdout, r.stderr)
	}
	// 3 retries in all: Retry[0]'s 3 s and 4.5 s and Retry[1]'s 1 s (8.5 s)
	// beat Retry[1]'s 1+2+3 s and every other mix.
	if pl.Attempts != 4 || !near(pl.WorstCase, 8.5) {
		t.Fatalf("attempts %d, worst case %v s; want 4 and 8.5 s", pl.Attempts, pl.WorstCase)
	}
}

func TestPlanBadUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("Retry:\n  - ErrorEquals: [HTTP.503]\n    BackoffRate: 0.5\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--policy", bad}, "bad.yaml:3:18: Retry[0].BackoffRate: 0.5 out of range: want a number ≥ 1.0"},
		{[]string{"plan", "--policy", filepath.Join(dir, "missing.json")}, "cannot read the policy file"},
		{[]string{"plan", "--jitter", "lots"}, `--jitter "lots": want full, equal, decorrelated or none`},
		{[]string{"plan", "--max-attempts", "0"}, "--max-attempts 0: want ≥ 1"},
		{[]string{"plan", "--base", "soon"}, "not a duration"},
		{[]string{"plan", "--layers", "0"}, "--layers 0: want ≥ 1"},
		{[]string{"plan", "--policy", bad, "--cap", "1s"}, "--cap cannot be combined with --policy"},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki %v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r := run(t, []string{"YAOKI_MAX_ATTEMPTS=many"}, "plan")
	if r.code != 2 || !strings.Contains(r.stderr, "YAOKI_MAX_ATTEMPTS") {
		t.Errorf("bad YAOKI_MAX_ATTEMPTS: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, []string{"YAOKI_MAX_ATTEMPTS=5"}, "plan", "--json")
	if !strings.Contains(r.stdout, `"attempts": 5`) {
		t.Errorf("YAOKI_MAX_ATTEMPTS=5 not applied: %s", r.stdout)
	}
	r = run(t, []string{"YAOKI_RETRY_MODE=off"}, "plan", "--json")
	if !strings.Contains(r.stdout, `"attempts": 1`) {
		t.Errorf("YAOKI_RETRY_MODE=off not applied: %s", r.stdout)
	}
}

// YAOKI_RETRY_MODE as AWS_RETRY_MODE: a flag beats it, and plan says which
// mode applies and where it came from.
func TestPlanRetryMode(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		args     []string
		attempts int
		mode     string
		source   string
	}{
		{nil, nil, 3, "default", "default"},
		{[]string{"YAOKI_RETRY_MODE=off"}, nil, 1, "off", "$YAOKI_RETRY_MODE"},
		{[]string{"YAOKI_RETRY_MODE=off"}, []string{"--max-attempts", "5"}, 5, "standard", "$YAOKI_RETRY_MODE (off), overridden by --max-attempts"},
		{[]string{"YAOKI_RETRY_MODE=adaptive"}, nil, 3, "adaptive", "$YAOKI_RETRY_MODE"},
		{[]string{"YAOKI_RETRY_MODE=adaptive"}, []string{"--retry-mode", "standard"}, 3, "standard", "--retry-mode"},
		{[]string{"YAOKI_RETRY_MODE=Standard"}, nil, 3, "standard", "$YAOKI_RETRY_MODE"},
	} {
		r := run(t, tc.env, append([]string{"plan", "--json"}, tc.args...)...)
		var pl struct {
			Attempts   int
			Mode       string
			ModeSource string `json:"mode_source"`
			Notes      []string
		}
		if err := json.Unmarshal([]byte(r.stdout), &pl); err != nil {
			t.Fatalf("%v %v: %v\n%s", tc.env, tc.args, err, r.stderr)
		}
		if pl.Attempts != tc.attempts || pl.Mode != tc.mode || pl.ModeSource != tc.source {
			t.Errorf("%v %v: %d attempts, mode %q from %q; want %d, %q from %q", tc.env, tc.args, pl.Attempts, pl.Mode, pl.ModeSource, tc.attempts, tc.mode, tc.source)
		}
		if quota := strings.Contains(strings.Join(pl.Notes, "\n"), "retry quota"); quota != (tc.mode == "standard" || tc.mode == "adaptive") {
			t.Errorf("%v %v: mode %s, notes %q: the AWS quota is part of standard and adaptive only", tc.env, tc.args, pl.Mode, pl.Notes)
		}
	}
	r := run(t, []string{"YAOKI_RETRY_MODE=off"}, "plan")
	if !strings.Contains(r.stdout, "retry mode: off, from $YAOKI_RETRY_MODE") {
		t.Errorf("plan does not say the mode and its source:\n%s", r.stdout)
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"YAOKI_RETRY_MODE=legacy"}, nil, "legacy is each AWS SDK's own older behaviour"},
		{nil, []string{"--retry-mode", "legacy"}, "--retry-mode \"legacy\""},
		{nil, []string{"--retry-mode", "fast"}, "is not a retry mode"},
		{nil, []string{"--retry-mode", "off", "--max-attempts", "3"}, "contradict each other"},
		{nil, []string{"--max-time", "0"}, "--max-time 0: want a bound > 0"},
		{nil, []string{"--attempt-timeout", "0"}, "--attempt-timeout 0"},
		{nil, []string{"--multiplier", "0"}, "--multiplier 0"},
	} {
		r := run(t, tc.env, append([]string{"plan"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v %v: exit %d, %q; want 2 and %q", tc.env, tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// plan's warnings say what is true: a retrier with a finite count has a
// last wait, not waits without bound; a cap below the base and a worst case
// over a day are warned of; the Catch block is shown.
func TestPlanMessagesAndCatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "retry.json")
	os.WriteFile(file, []byte(`{"Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 2, "MaxAttempts": 3}],
  "Catch": [{"ErrorEquals": ["HTTP.503"], "Next": "Later", "ResultPath": "$.error"},
            {"ErrorEquals": ["States.ALL"], "Next": "Cleanup", "ResultPath": null}]}`), 0o600)
	r := run(t, nil, "plan", "--policy", file)
	for _, want := range []string{
		"Retry[0] has no cap (MaxDelaySeconds): its waits grow with each retry, its last (retry 3) up to 8s",
		"catch: HTTP.503 → Later (the error goes to $.error)",
		"catch: States.ALL → Cleanup (ResultPath null: the error is discarded, the input passes on)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "without bound") {
		t.Errorf("a retrier with 3 retries is said to grow without bound:\n%s", r.stdout)
	}
	r = run(t, nil, "plan", "--cap", "10ms")
	if !strings.Contains(r.stdout, "cap (10ms) is below its base (50ms)") {
		t.Errorf("no warning for a cap below the base:\n%s", r.stdout)
	}
	r = run(t, nil, "plan", "--max-attempts", "10000")
	if !strings.Contains(r.stdout, "over a day") {
		t.Errorf("no warning for a worst case over a day:\n%s", r.stdout)
	}
	r = run(t, nil, "plan", "--max-retry-after", "0")
	if !strings.Contains(r.stdout, "longest Retry-After honoured: none (0s)") {
		t.Errorf("--max-retry-after 0 does not mean none:\n%s", r.stdout)
	}
}
