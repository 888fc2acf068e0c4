package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// runPlan runs `yaoki plan --json --policy FILE` on a file holding doc
// and returns the plan it printed.
func runPlan(t *testing.T, name, doc string, args ...string) *plan {
	t.Helper()
	t.Setenv(policy.EnvMaxAttempts, "")
	t.Setenv(policy.EnvRetryMode, "")
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	r := NewCommand()
	r.SetOut(&out)
	r.SetErr(&errOut)
	r.SetArgs(append([]string{"--json", "--policy", path}, args...))
	if err := r.Execute(); err != nil {
		t.Fatalf("yaoki plan --policy %s: %v\n%s", name, err, errOut.String())
	}
	var pl plan
	if err := json.Unmarshal(out.Bytes(), &pl); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out.String())
	}
	return &pl
}

// named is an error with a Step Functions name.
type named string

func (n named) Error() string     { return string(n) }
func (n named) ErrorName() string { return string(n) }

// loopWaits runs the document's policy in the real retry loop, without
// waiting, on a function that fails with err n times, then with more, then
// succeeds, and returns the waits the loop asked for.
func loopWaits(t *testing.T, doc string, err error, n int, more ...error) []time.Duration {
	t.Helper()
	d, perr := policy.Parse([]byte(doc))
	if perr != nil {
		t.Fatal(perr)
	}
	p, waits := retrytest.NoWait(d.Policy(policy.Options{}))
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	errs = append(errs, more...)
	_ = retry.Do(context.Background(), p, retrytest.Script(errs...).Func())
	return waits.All()
}

// Without jitter, each schedule `yaoki plan` prints is the waits the retry
// loop makes when every failure goes to that retrier.
func TestPlanPolicyScheduleIsTheLoops(t *testing.T) {
	const doc = `{"Retry": [
  {"ErrorEquals": ["A"], "IntervalSeconds": 3, "MaxAttempts": 4, "BackoffRate": 1.5},
  {"ErrorEquals": ["B"], "IntervalSeconds": 1, "MaxAttempts": 6, "MaxDelaySeconds": 5},
  {"ErrorEquals": ["C"], "IntervalSeconds": 0, "MaxAttempts": 5},
  {"ErrorEquals": ["D"], "IntervalSeconds": 2, "BackoffRate": 1},
  {"ErrorEquals": ["E"]},
  {"ErrorEquals": ["F"], "MaxAttempts": 0}
]}`
	pl := runPlan(t, "p.json", doc)
	for i, name := range []string{"A", "B", "C", "D", "E", "F"} {
		tr := pl.Tracks[i]
		got := loopWaits(t, doc, named(name), 10)
		if len(got) != tr.Retries || len(tr.Rows) != tr.Retries+1 {
			t.Errorf("%s: the loop made %d retries, the plan says %d with %d rows", name, len(got), tr.Retries, len(tr.Rows))
			continue
		}
		for k, w := range got {
			r := tr.Rows[k+1]
			if tr.AtOnce && w == time.Nanosecond {
				w = 0 // the loop's "at once" (see atOnce), shown as 0
			}
			if r.WaitMin != w.Seconds() || r.WaitMax != w.Seconds() {
				t.Errorf("%s: retry %d waits %v in the loop, the plan says %v to %v s", name, k+1, w, r.WaitMin, r.WaitMax)
			}
		}
	}
	if got := pl.Tracks[2]; strings.Contains(strings.Join(pl.Warnings, "\n"), "Retry[2] has no cap") {
		t.Errorf("IntervalSeconds 0 (track %+v): warned that its waits grow: %q", got, pl.Warnings)
	}
}

// The worst case that `yaoki plan` prints bounds what the loop really
// waits, also when waits keep growing past the 200th retry.
func TestPlanPolicyWorstCaseBoundsTheLoop(t *testing.T) {
	for _, tc := range []struct {
		doc string
		xs  int // failures with X, before two with Y
	}{
		{`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1000, "BackoffRate": 1.01}]`, 1000},
		{`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1000, "BackoffRate": 1.01, "MaxDelaySeconds": 100}]`, 1000},
		{`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3000, "BackoffRate": 1.002, "MaxDelaySeconds": 100}]`, 3000},
		{`[{"ErrorEquals": ["X"], "IntervalSeconds": 1, "MaxAttempts": 1000, "BackoffRate": 1.01}, {"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]`, 1000},
	} {
		doc := tc.doc
		pl := runPlan(t, "p.json", doc)
		var total time.Duration
		for _, w := range loopWaits(t, doc, named("X"), tc.xs, named("Y"), named("Y")) {
			total += w
		}
		if total.Seconds() > pl.WorstCase*(1+1e-9) {
			t.Errorf("%s: the loop waits %v in all, above the plan's worst case %s", doc, total, fmtSec(pl.WorstCase))
		}
		if pl.WorstCase > total.Seconds()*(1+1e-6) {
			t.Errorf("%s: the plan's worst case %s is above the %v the loop waits without jitter", doc, fmtSec(pl.WorstCase), total)
		}
	}
}

// A policy file saved with a UTF-8 byte order mark loads.
func TestPlanPolicyByteOrderMark(t *testing.T) {
	pl := runPlan(t, "p.json", "\xef\xbb\xbf"+`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]}`)
	if pl.Attempts != 3 {
		t.Errorf("attempts %d, want 3", pl.Attempts)
	}
}

// Past the retries that longest walks one by one, its closed form gives
// the sum of the waits that backoff.Schedule.Bounds gives.
func TestPlanPolicyLongWaitsClosedForm(t *testing.T) {
	for _, s := range []backoff.Schedule{
		{Kind: backoff.Exponential, Base: time.Second, Multiplier: 1.0001, Cap: noCapDuration, Jitter: backoff.None},
		{Kind: backoff.Exponential, Base: time.Second, Multiplier: 1.0001, Cap: 30 * time.Second, Jitter: backoff.Full},
		{Kind: backoff.Exponential, Base: time.Millisecond, Multiplier: 1.5, Cap: noCapDuration, Jitter: backoff.Equal},
		{Kind: backoff.Linear, Base: time.Millisecond, Cap: time.Minute, Jitter: backoff.None},
		{Kind: backoff.Constant, Base: 3 * time.Second, Cap: noCapDuration, Jitter: backoff.None},
	} {
		for _, r := range [][2]int{{1, 1}, {1, 200000}, {70000, 70001}, {65537, 200000}} {
			want := 0.0
			for n := r[0]; n <= r[1]; n++ {
				want += s.Bounds(n).Max.Seconds()
			}
			got := growingWaits(s, r[0], r[1])
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("%+v, retries %d to %d: %v s, want %v s", s, r[0], r[1], got, want)
			}
		}
	}
}
