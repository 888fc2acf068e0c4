package e2e

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rateLimitPolicies are the policies yaoki sim ratelimit compares when no
// policy flag is set, in their order.
var rateLimitPolicies = []string{"yaoki", "yaoki, retrying at once", "no retries", "2 retries at once, no budget"}

// yaoki sim ratelimit prints one row per load in each of its four tables,
// and writes the plots (the zoom near the limit too, with two loads in it)
// and index.html.
func TestSimRateLimitTableAndReport(t *testing.T) {
	dir := t.TempDir()
	r := run(t, nil, "sim", "ratelimit", "--load", "2,0.9,1", "--runs", "2", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"ratelimit: calls that succeeded, % (10 clients, 100 attempts admitted per 1s window, Retry-After rounded down; calls for 20s, hops Exp(10ms), 2 runs per point)",
		"ratelimit: attempts sent per call", "ratelimit: 429s per call", "ratelimit: mean latency of the calls that succeeded, ms",
		"yaoki, retrying at once", "2 retries at once, no budget", "policies:", "no budget",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	// Four tables, one row per load each, in increasing order; the cells of
	// a row are the four policies'. The policies' names have spaces, so a
	// row is found by its first field and read from its last four.
	rows := map[string][][]string{}
	var order []string
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && (f[0] == "0.9" || f[0] == "1" || f[0] == "2") {
			rows[f[0]] = append(rows[f[0]], f[1:])
			order = append(order, f[0])
		}
	}
	if len(order) != 12 || !slices.Equal(order[:3], []string{"0.9", "1", "2"}) {
		t.Fatalf("rows %v: want loads 0.9, 1, 2 in each of 4 tables:\n%s", order, r.stdout)
	}
	cell := func(load string, table, policy int) float64 {
		v, err := strconv.ParseFloat(rows[load][table][policy], 64)
		if err != nil {
			t.Fatalf("load %s, table %d, policy %d: %v", load, table, policy, err)
		}
		return v
	}
	// At load 2 the limiter lets half the calls through, whatever the
	// policy; no retries sends one attempt per call, 2 retries at once
	// without a budget about two, and yaoki's budget keeps it near one.
	for pi, name := range rateLimitPolicies {
		if s := cell("2", 0, pi); s < 45 || s > 56 {
			t.Errorf("%s at load 2: %.2f %% succeeded, want about 50", name, s)
		}
	}
	if a := cell("2", 1, 2); a != 1 {
		t.Errorf("no retries at load 2: %.3f attempts per call, want 1", a)
	}
	if a := cell("2", 1, 3); a < 1.8 || a > 2.3 {
		t.Errorf("2 retries at once at load 2: %.3f attempts per call, want about 2", a)
	}
	if a := cell("2", 1, 0); a > 1.1 {
		t.Errorf("yaoki at load 2: %.3f attempts per call, want at most 1.1 (its budget)", a)
	}
	// A call without retries waits for two hops of 10 ms on average; yaoki's
	// retried calls wait for their backoff too.
	if l := cell("1", 3, 2); l < 15 || l > 25 {
		t.Errorf("no retries at load 1: mean latency %.1f ms, want about 20", l)
	}
	if l, none := cell("1", 3, 0), cell("1", 3, 2); l <= none {
		t.Errorf("yaoki at load 1: mean latency %.1f ms, want more than no retries' %.1f (its retries wait)", l, none)
	}
	checkReport(t, dir, "ratelimit-success", "ratelimit-success-near", "ratelimit-amplification")
}

func TestSimRateLimitCSV(t *testing.T) {
	r := run(t, nil, "sim", "ratelimit", "--load", "2", "--runs", "1", "--clients", "5", "--duration", "5s", "--format", "csv", "--out", "")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "scenario,policy,clients,failure_rate,load,trigger,metric,mean,sd,runs" {
		t.Fatalf("header %q", got)
	}
	// 4 policies × 1 load × 4 metrics.
	if len(recs)-1 != 16 {
		t.Fatalf("got %d rows, want 16:\n%s", len(recs)-1, r.stdout)
	}
	metrics := map[string]bool{}
	for _, rec := range recs[1:] {
		if rec[0] != "ratelimit" || rec[2] != "5" || rec[3] != "" || rec[4] != "2" || rec[5] != "" || rec[9] != "1" {
			t.Fatalf("row %v: want scenario ratelimit, 5 clients, load 2, 1 run", rec)
		}
		if !slices.Contains(rateLimitPolicies, rec[1]) {
			t.Errorf("row %v: policy %q is not one of %q", rec, rec[1], rateLimitPolicies)
		}
		metrics[rec[6]] = true
		if rec[1] == "no retries" && rec[6] == "amplification" && rec[7] != "1" {
			t.Errorf("no retries: %s attempts per call, want 1", rec[7])
		}
	}
	if len(metrics) != 4 || !metrics["success"] || !metrics["amplification"] || !metrics["limited"] || !metrics["latency_s"] {
		t.Errorf("metrics %v, want success, amplification, limited, latency_s", metrics)
	}
}

// The JSON holds the scenario's parameters and one point per policy and
// load; --policies takes names that hold a comma; with --round-up the
// limiter says "Retry-After: 1", which even the client that retries at
// once honours, so its retried calls wait about a second.
func TestSimRateLimitJSON(t *testing.T) {
	r := run(t, nil, "sim", "ratelimit", "--load", "1.1", "--runs", "1", "--per-window", "50", "--window", "1s", "--round-up",
		"--format", "json", "--out", "", "--policies", "no retries,yaoki, retrying at once")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	type stat struct{ Mean float64 }
	var doc struct {
		RateLimit *struct {
			Runs      int `json:"runs"`
			Policies  []struct{ Name string }
			Clients   int     `json:"clients"`
			PerWindow int     `json:"per_window"`
			WindowS   float64 `json:"window_s"`
			RoundUp   bool    `json:"round_up"`
			Points    []struct {
				Policy        string  `json:"policy"`
				Load          float64 `json:"load"`
				Success       stat    `json:"success"`
				Amplification stat    `json:"amplification"`
				Limited       stat    `json:"limited_per_call"`
				LatencyS      stat    `json:"latency_s"`
			} `json:"points"`
		} `json:"ratelimit"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	l := doc.RateLimit
	if l == nil || l.Runs != 1 || l.Clients != 10 || l.PerWindow != 50 || l.WindowS != 1 || !l.RoundUp {
		t.Fatalf("got %+v; want 1 run, 10 clients, 50 per window of 1 s, rounded up", l)
	}
	if len(l.Points) != 2 || l.Points[0].Policy != "no retries" || l.Points[1].Policy != "yaoki, retrying at once" {
		t.Fatalf("points %+v: want no retries, then yaoki, retrying at once", l.Points)
	}
	none, once := l.Points[0], l.Points[1]
	if none.Load != 1.1 || none.Amplification.Mean != 1 || none.Limited.Mean <= 0 || math.Abs(none.Success.Mean+none.Limited.Mean-1) > 1e-9 {
		t.Errorf("no retries: %+v; want load 1.1, 1 attempt per call, every 429 a call lost", none)
	}
	if once.Amplification.Mean <= 1 || once.LatencyS.Mean < 0.05 {
		t.Errorf(`retrying at once with "Retry-After: 1": %+v; want retries, which wait about 1 s`, once)
	}
}

// Bad flags are refused before any simulation runs, with what is
// accepted.
func TestSimRateLimitBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--load", "0.5,0"}, "--load 0: want > 0 (leave the flag out for its default, 0.5,0.8,0.9,1,1.1,1.25,1.5,2,3)"},
		{[]string{"--per-window", "0"}, "--per-window 0: want ≥ 1"},
		{[]string{"--window", "0s"}, "--window 0: want > 0"},
		{[]string{"--clients", "0"}, "--clients 0: want ≥ 1 client"},
		{[]string{"--load", "2000"}, "--load 2000: out of range; want a share of PerWindow in (0, 1000]"},
		{[]string{"--per-window", "-3"}, "--per-window -3: out of range; want 1 to 1e6"},
		{[]string{"--window", "2h"}, "--window 2h0m0s: out of range; want up to 1h"},
		{[]string{"--load", "x"}, `invalid argument "x" for "--load" flag`},
		{[]string{"--policies", "nobody"}, `no policy "nobody" in this scenario; it has: "yaoki", "yaoki, retrying at once", "no retries", "2 retries at once, no budget"`},
	} {
		r := run(t, nil, append([]string{"sim", "ratelimit", "--out", ""}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "RateLimit.") {
			t.Errorf("yaoki sim ratelimit %q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
		if r.stdout != "" {
			t.Errorf("yaoki sim ratelimit %q ran simulations before refusing: %q", tc.args, r.stdout)
		}
	}
}

// yaoki sim all runs every scenario, the rate limit included.
func TestSimAllScenarios(t *testing.T) {
	r := run(t, nil, "sim", "all", "--runs", "1", "--format", "csv", "--out", "")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rec := range recs[1:] {
		seen[rec[0]] = true
	}
	for _, s := range []string{"herd", "outage", "collapse", "tail", "ratelimit"} {
		if !seen[s] {
			t.Errorf("yaoki sim all: no rows of %s (got %v)", s, seen)
		}
	}
}
