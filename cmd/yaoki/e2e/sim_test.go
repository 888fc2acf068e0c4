package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkReport checks that dir holds each plot in SVG and PNG (a real,
// decodable image of a readable size), the numbers and an index.html that
// shows every plot.
func checkReport(t *testing.T, dir string, plots ...string) {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plots {
		svg, err := os.ReadFile(filepath.Join(dir, p+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svg[:min(len(svg), 400)], []byte("<svg")) {
			t.Errorf("%s.svg does not start as an SVG document: %.80q", p, svg)
		}
		f, err := os.Open(filepath.Join(dir, p+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Errorf("%s.png is %v, want at least 600×300", p, b.Size())
		}
		if !bytes.Contains(index, []byte(`src="`+p+`.svg"`)) {
			t.Errorf("index.html does not show %s.svg", p)
		}
	}
	for _, name := range []string{"results.csv", "results.json"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
		}
	}
}

func TestSimHerdTableAndReport(t *testing.T) {
	dir := t.TempDir()
	r := run(t, nil, "sim", "herd", "--clients", "10,30", "--runs", "4", "--out", dir, "--progress")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"herd: writes that reached the server (mean of 4 runs)", "clients", "none", "exponential",
		"full", "equal", "decorrelated", "yaoki", "policies:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	// One row per client count, one cell per policy.
	var rows int
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && (f[0] == "10" || f[0] == "30") {
			rows++
		}
	}
	if rows != 4 {
		t.Errorf("got %d table rows for 10 and 30 clients, want 2 per table:\n%s", rows, r.stdout)
	}
	if !strings.Contains(r.stderr, "herd") || !strings.Contains(r.stderr, "[====") || !strings.Contains(r.stderr, "report: "+filepath.Join(dir, "index.html")) {
		t.Errorf("stderr lacks the progress bar or the report's path:\n%s", r.stderr)
	}
	checkReport(t, dir, "herd-calls", "herd-time")
}

func TestSimOutageCSV(t *testing.T) {
	r := run(t, nil, "sim", "outage", "--p", "0,0.5,1", "--runs", "1", "--duration", "5s", "--format", "csv", "--out", "")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "report:") {
		t.Errorf(`--out "" wrote a report: %s`, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "scenario,policy,clients,failure_rate,load,trigger,metric,mean,sd,runs" {
		t.Fatalf("header %q", got)
	}
	// 7 policies (the post's 4, yaoki, yaoki + fleet budget, yaoki +
	// breaker) × 3 failure rates × 3 metrics (success, amplification,
	// refused).
	if len(recs)-1 != 63 {
		t.Fatalf("got %d rows, want 63", len(recs)-1)
	}
	found := false
	for _, rec := range recs[1:] {
		if rec[0] != "outage" || rec[2] != "100" {
			t.Fatalf("row %v: want scenario outage, 100 clients", rec)
		}
		if rec[1] == "3 retries" && rec[3] == "1" && rec[6] == "amplification" {
			found = true
			if v, _ := strconv.ParseFloat(rec[7], 64); v != 4 {
				t.Errorf("3 retries at p = 1: amplification %s, want 4", rec[7])
			}
		}
	}
	if !found {
		t.Error("no row for 3 retries' amplification at p = 1")
	}
}

func TestSimCollapseJSON(t *testing.T) {
	dir := t.TempDir()
	r := run(t, nil, "sim", "collapse", "--peak", "80", "--width", "5s", "--runs", "3", "--format", "json", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Seed     uint64 `json:"seed"`
		Collapse struct {
			Runs     int `json:"runs"`
			Policies []struct{ Name, Description string }
			Points   []struct {
				Policy  string `json:"policy"`
				Trigger struct {
					Kind   string  `json:"kind"`
					Peak   float64 `json:"peak"`
					WidthS float64 `json:"width_s"`
				} `json:"trigger"`
				Collapsed *float64  `json:"collapsed"`
				Goodput   []float64 `json:"goodput_per_s"`
				InFlight  []float64 `json:"in_flight"`
			} `json:"points"`
		} `json:"collapse"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	c := doc.Collapse
	if c.Runs != 3 || len(c.Points) != 3 || len(c.Policies) != 3 {
		t.Fatalf("got %d runs, %d points, %d policies; want 3, 3 (no backoff, backoff + jitter, yaoki), 3", c.Runs, len(c.Points), len(c.Policies))
	}
	for _, p := range c.Points {
		if p.Trigger.Kind != "spike" || p.Trigger.Peak != 80 || p.Trigger.WidthS != 5 || p.Collapsed == nil || len(p.Goodput) != 80 || len(p.InFlight) != 80 {
			t.Errorf("point %+v: want a spike 80/s × 5 s, a collapsed share and 80 s of series", p)
		}
	}
	checkReport(t, dir, "collapse-goodput", "collapse-inflight", "collapse-share")
}

// TestSimDefault runs the README's command: herd and outage with their
// published parameters, and the report.
func TestSimDefault(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, yaoki, "sim", "--out", dir)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("yaoki sim: %v: %s", err, errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	// The default job's budget is 10 s of CPU (user and system, all
	// workers). It is measured and logged, not asserted: on a shared
	// machine the same run takes from 6 to 10 s (docs/simulator.md says
	// how it is measured), and a timed assertion would fail for the
	// machine's sake, not the code's.
	cpu := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	t.Logf("yaoki sim: %.1f s of CPU (budget 10 s)", cpu.Seconds())
	for _, want := range []string{"herd: writes", "herd: time", "outage: calls that succeeded", "outage: attempts sent per call",
		"outage: calls refused locally", "token bucket", "yaoki", "yaoki + fleet budget", "collapse: runs still collapsed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(r.stderr, "[") {
		t.Errorf("progress bar drawn on a stderr that is not a terminal:\n%s", r.stderr)
	}
	checkReport(t, dir, "herd-calls", "herd-time", "outage-success", "outage-success-low", "outage-amplification", "outage-refused",
		"collapse-goodput", "collapse-inflight", "collapse-share")
}

func TestSimYourPolicyAndFilter(t *testing.T) {
	r := run(t, nil, "sim", "outage", "--p", "1", "--runs", "1", "--out", "", "--policies", "3 retries,mine",
		"--name", "mine", "--base", "10ms", "--jitter", "equal", "--max-attempts", "2", "--budget", "post-bucket")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var amp []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "1" && strings.Contains(f[1], ".") {
			amp = f
		}
	}
	if len(amp) != 3 || amp[1] != "4.000" {
		t.Fatalf("amplification row %v, want [1 4.000 <mine>]:\n%s", amp, r.stdout)
	}
	if v, _ := strconv.ParseFloat(amp[2], 64); v < 1.01 || v > 1.2 {
		t.Errorf("mine (2 attempts, the post's bucket) at p = 1: %s attempts per call, want about 1.1", amp[2])
	}
	if !strings.Contains(r.stdout, "2 attempts, exponential ×2 from 10ms, cap 20s, equal jitter, the 2022 post's token bucket") {
		t.Errorf("policy description missing:\n%s", r.stdout)
	}
}

func TestSimBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--format", "xml"}, `--format "xml": want table, csv or json`},
		{[]string{"sim", "outage", "--jitter", "wild"}, "--jitter"},
		{[]string{"sim", "outage", "--budget", "nope"}, `--budget "nope": want one of none, recommended, share`},
		{[]string{"sim", "outage", "--p", "1.5"}, "--p 1.5: out of range"},
		{[]string{"sim", "outage", "--policies", "nobody"}, `no policy "nobody"`},
		{[]string{"sim", "collapse", "--trigger", "quake"}, `--trigger "quake"`},
		{[]string{"sim", "storm"}, `sim has no subcommand "storm": want one of all, collapse, herd, outage, ratelimit, tail`},
		{[]string{"sim", "herd", "--max-attempts", "-3"}, "--max-attempts -3"},
	}
	for _, c := range cases {
		r := run(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("yaoki %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

func TestSimPolicyDocument(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.yaml")
	doc := "Retry:\n  - ErrorEquals: [\"HTTP.5XX\"]\n    IntervalSeconds: 0.1\n    MaxAttempts: 1\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "sim", "outage", "--policy", file, "--p", "1", "--runs", "1", "--out", "", "--format", "csv", "--policies", "mine.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs[1:] {
		if rec[1] != "mine.yaml" {
			t.Fatalf("row %v: want only the document's policy, named after its file", rec)
		}
		if rec[6] == "amplification" && rec[7] != "2" {
			t.Errorf("one retry of every 500: %s attempts per call, want 2", rec[7])
		}
	}
	r = run(t, nil, "sim", "outage", "--policy", file, "--base", "1s")
	if r.code != 2 || !strings.Contains(r.stderr, "--base cannot be combined with --policy") {
		t.Errorf("--policy with --base: exit %d, %q; want exit 2 and why", r.code, r.stderr)
	}
}

// TestSimSameSeedSameOutput: what yaoki sim prints is a pure function of
// its seed and parameters. Every scenario, in every format, prints the same
// bytes with one worker on one CPU as with three workers on two, also for
// guards that draw random numbers (a breaker, adaptive throttling) and for
// guards shared by all the clients.
func TestSimSameSeedSameOutput(t *testing.T) {
	yours := []string{"--breaker", "default", "--throttle", "adaptive", "--budget", "share", "--shared", "--max-attempts", "4"}
	scenarios := [][]string{
		{"herd", "--clients", "10,40", "--runs", "6"},
		append([]string{"outage", "--p", "0.1,0.5,1", "--runs", "3", "--duration", "5s", "--clients", "20"}, yours...),
		append([]string{"collapse", "--peak", "90,100", "--width", "5s", "--runs", "4"}, yours...),
		{"tail", "--runs", "2", "--duration", "4s", "--brownout", "1s", "--recovery", "1s"},
		append([]string{"ratelimit", "--load", "1,1.5", "--runs", "3", "--duration", "5s"}, yours...),
	}
	for _, sc := range scenarios {
		for _, format := range []string{"table", "csv", "json"} {
			args := append([]string{"sim"}, sc...)
			args = append(args, "--seed", "7", "--format", format, "--out", "")
			one := run(t, []string{"GOMAXPROCS=1"}, append(args, "--workers", "1")...)
			three := run(t, []string{"GOMAXPROCS=2"}, append(args, "--workers", "3")...)
			if one.code != 0 || three.code != 0 {
				t.Fatalf("yaoki %s: exit %d and %d: %s%s", strings.Join(args, " "), one.code, three.code, one.stderr, three.stderr)
			}
			if one.stdout != three.stdout {
				a, b := firstDifference(one.stdout, three.stdout)
				t.Errorf("yaoki %s: one worker on one CPU and three workers on two print different output; first different line:\n%s\n%s",
					strings.Join(args, " "), a, b)
			}
		}
	}
}

// firstDifference returns the first line where a and b differ, in each.
func firstDifference(a, b string) (string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return x, y
		}
	}
	return "", ""
}
