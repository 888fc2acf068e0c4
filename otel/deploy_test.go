package otel_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/yaoki-go/yaoki/event"
)

// The deploy/ directory at the root of the repository: Prometheus alerting
// rules (with promtool unit tests) and a Grafana dashboard. These tests load
// them and check every metric and label they name against what the
// OpenTelemetry Prometheus exporter really writes for this package.
const deployDir = "../deploy"

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// readDeployFile returns the content of a file under deployDir.
func readDeployFile(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{deployDir}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b := readDeployFile(t, "prometheus", "yaoki-alerts.yml")
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("yaoki-alerts.yml: %v", err)
	}
	return f
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b := readDeployFile(t, "grafana", "yaoki-dashboard.json")
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("yaoki-dashboard.json: %v", err)
	}
	return d
}

var (
	// A series selector: a metric name and, optionally, its label matchers.
	selectorRE = regexp.MustCompile(`\b(yaoki_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	// Grafana's variables, replaced by values a plain PromQL parser takes.
	grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$destination", ".*")
)

// valueRE is a label matcher with its value.
var valueRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)

// documentedValues returns the values docs/observability.md allows for
// each label whose values are a closed set.
func documentedValues(t *testing.T) map[string][]string {
	t.Helper()
	r := docValues(t, event.AttrReason)
	return map[string][]string{
		"yaoki_reason":           slices.Concat(r["give-ups"], r["rejections"], r["conflicts"], r["redrives"]),
		"yaoki_outcome":          docValues(t, event.AttrOutcome)[""],
		"yaoki_wait_source":      docValues(t, event.AttrWaitSource)[""],
		"yaoki_component":        docValues(t, event.AttrComponent)[""],
		"yaoki_deadletter_state": {"waiting", "due", "held", "parked"},
		"yaoki_state_from":       {event.StateClosed, event.StateHalfOpen, event.StateOpen},
		"yaoki_state_to":         {event.StateClosed, event.StateHalfOpen, event.StateOpen},
	}
}

// checkValues reports a matcher on a label with a closed set of values
// that names a value the docs do not list (a literal, or an alternative of
// a regular expression), or a regular expression that matches none: such
// a selector finds nothing, and its alert never fires.
func checkValues(t *testing.T, where, metric, label, op, value string) {
	t.Helper()
	allowed, closed := documentedValues(t)[label]
	if !closed {
		return
	}
	alternatives := []string{value}
	if op == "=~" || op == "!~" {
		alternatives = strings.Split(value, "|")
	}
	for _, alt := range alternatives {
		re, err := regexp.Compile("^(?:" + alt + ")$")
		if err != nil {
			t.Errorf("%s: %s{%s%s%q}: %v", where, metric, label, op, value, err)
			continue
		}
		if !slices.ContainsFunc(allowed, re.MatchString) {
			t.Errorf("%s: %s{%s%s%q}: %q matches none of the values docs/observability.md lists for %s (%v)", where, metric, label, op, value, alt, label, allowed)
		}
	}
}

// checkExpr reports every metric of expr that the exporter does not write,
// every label matched on a metric that lacks it, and every grouping label
// that none of the expression's metrics has. It returns the metrics named.
func checkExpr(t *testing.T, where, expr string, x exported) []string {
	t.Helper()
	var metrics []string
	labels := map[string]bool{}
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		if x.label(name) {
			continue // a grouping label, checked below
		}
		metrics = append(metrics, name)
		if x[name] == nil {
			t.Errorf("%s: metric %s is not exported; the exporter writes %v", where, name, x.names())
			continue
		}
		for l := range x[name] {
			labels[l] = true
		}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !x[name][mm[1]] {
				t.Errorf("%s: %s has no label %s", where, name, mm[1])
			}
		}
		for _, mm := range valueRE.FindAllStringSubmatch(m[2], -1) {
			checkValues(t, where, name, mm[1], mm[2], mm[3])
		}
	}
	if len(metrics) == 0 {
		t.Errorf("%s: %q names no yaoki metric", where, expr)
	}
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !labels[l] {
				t.Errorf("%s: grouping by %s, a label none of %v has", where, l, metrics)
			}
		}
	}
	return metrics
}

func TestAlertRules(t *testing.T) {
	x, _ := exportedByPrometheus(t)
	f := loadRules(t)
	covered := map[string]bool{}
	n := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			n++
			where := "alert " + r.Alert
			if r.Alert == "" || r.Expr == "" || r.For == "" {
				t.Errorf("rule %d of group %s: alert %q, expr %q, for %q: all three are needed", n, g.Name, r.Alert, r.Expr, r.For)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", where, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: a summary and a description are needed", where)
			}
			for _, m := range checkExpr(t, where, r.Expr, x) {
				covered[m] = true
			}
			if strings.Contains(r.Expr, `http_response_status_code="429"`) {
				covered["429"] = true
			}
		}
	}
	// The four situations an operator must be told about.
	for _, need := range []string{"429", "yaoki_retries_total", "yaoki_give_ups_total", "yaoki_breaker_state"} {
		if !covered[need] {
			t.Errorf("no alert is about %s", need)
		}
	}
}

// TestAlertRulesTestSeries checks the promtool unit tests' input series
// against the exporter too, so that the scenarios the alerts are tested on
// are made of series that exist.
func TestAlertRulesTestSeries(t *testing.T) {
	x, _ := exportedByPrometheus(t)
	b := readDeployFile(t, "prometheus", "yaoki-alerts_test.yml")
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("yaoki-alerts_test.yml: %v", err)
	}
	if len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != "yaoki-alerts.yml" || len(tests.Tests) == 0 {
		t.Fatalf("yaoki-alerts_test.yml tests %v with %d tests", tests.RuleFiles, len(tests.Tests))
	}
	for i, tc := range tests.Tests {
		for _, s := range tc.InputSeries {
			checkExpr(t, fmt.Sprintf("promtool test %d", i+1), s.Series, x)
		}
	}
}

func TestDashboard(t *testing.T) {
	x, _ := exportedByPrometheus(t)
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard: title %q, uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	covered := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range checkExpr(t, "panel "+p.Title, grafanaVars.Replace(tg.Expr), x) {
				covered[m] = true
			}
			if strings.Contains(tg.Expr, `http_response_status_code="429"`) {
				covered["429"] = true
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			checkExpr(t, "variable "+v.Name, v.Definition, x)
		}
	}
	// A panel for each alert's subject, and for every metric family the
	// exporter writes (a histogram by its buckets).
	need := []string{"429"}
	for name := range x {
		sum, isSum := strings.CutSuffix(name, "_sum")
		count, isCount := strings.CutSuffix(name, "_count")
		if !strings.HasPrefix(name, "yaoki_") || isSum && x[sum+"_bucket"] != nil || isCount && x[count+"_bucket"] != nil {
			continue
		}
		need = append(need, name)
	}
	slices.Sort(need)
	if len(need) < 16 {
		t.Fatalf("the scrape has %d yaoki metric families, want every one of the 15 documented: %v", len(need)-1, need)
	}
	for _, need := range need {
		if !covered[need] {
			t.Errorf("no panel shows %s", need)
		}
	}
}

// TestPromtool runs Prometheus's own checker on the rules, their unit tests
// (each alert fires on its scenario and not on the healthy series beside
// it), and the dashboard's queries (as recording rules, with Grafana's
// variables replaced), when promtool is installed (Debian: prometheus).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus): the rules were checked against the exporter, not by Prometheus")
	}
	dir := filepath.Join(deployDir, "prometheus")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", "yaoki-alerts.yml")
	run("test", "rules", "yaoki-alerts_test.yml")

	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			expr, _ := json.Marshal(grafanaVars.Replace(tg.Expr)) // a JSON string is a YAML string
			fmt.Fprintf(&b, "      - record: dashboard:panel_%d_%s\n        expr: %s\n", p.ID, strings.ToLower(tg.RefID), expr)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(file)
	run("check", "rules", abs)
}
