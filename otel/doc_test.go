package otel_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/event"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// documentedMetric is one row of the metrics table of docs/observability.md.
type documentedMetric struct {
	prom, kind string
	unit       string          // "" for none
	attrs      map[string]bool // OpenTelemetry attribute keys
}

// docAttrs maps the words of the table's attribute column to the
// attribute keys they stand for.
var docAttrs = map[string][]string{
	"component":              {event.AttrComponent},
	"name":                   {event.AttrName},
	"method":                 {event.AttrMethod},
	"status":                 {event.AttrStatusCode, event.AttrStatusClass},
	"destination":            {event.AttrServerAddress, event.AttrServerPort},
	"outcome":                {event.AttrOutcome},
	"error.type":             {event.AttrErrorType},
	"yaoki.wait.source":      {event.AttrWaitSource},
	"yaoki.reason":           {event.AttrReason},
	"yaoki.state.from":       {event.AttrStateFrom},
	"yaoki.state.to":         {event.AttrStateTo},
	"yaoki.deadletter.state": {"yaoki.deadletter.state"},
}

// readMetricsTable parses the table under "## Metrics" in
// docs/observability.md.
func readMetricsTable(t *testing.T) map[string]documentedMetric {
	t.Helper()
	b, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(yaoki\\.[a-z_.]+)` \\| `([a-z_]+)` \\| ([a-z]+) \\| (`[^`]+`|none) \\| (.*) \\|$")
	parens := regexp.MustCompile(`\([^)]*\)`)
	out := map[string]documentedMetric{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := documentedMetric{prom: m[2], kind: m[3], unit: strings.Trim(strings.TrimPrefix(m[4], "none"), "`"), attrs: map[string]bool{}}
		col := parens.ReplaceAllString(m[5], "")
		if i := strings.IndexAny(col, ":;"); i >= 0 {
			col = col[:i]
		}
		for _, w := range strings.Split(col, ",") {
			w = strings.Trim(strings.TrimSpace(w), "`")
			if as, ok := strings.CutPrefix(w, "as `"); ok {
				for k := range out[strings.TrimSuffix(as, "`")].attrs {
					d.attrs[k] = true
				}
				continue
			}
			keys, ok := docAttrs[w]
			if !ok {
				t.Fatalf("docs/observability.md: %s: attribute %q not understood by this test", m[1], w)
			}
			for _, k := range keys {
				d.attrs[k] = true
			}
		}
		out[m[1]] = d
	}
	if len(out) == 0 {
		t.Fatal("docs/observability.md: no metrics table found")
	}
	return out
}

// TestDocumentedMetrics checks the table of docs/observability.md against
// what the SDK collects (a manual reader) after every kind of event and
// what the Prometheus exporter writes: the same instruments, of the
// documented type and unit, under the documented Prometheus names,
// carrying no attribute the table does not list.
func TestDocumentedMetrics(t *testing.T) {
	doc := readMetricsTable(t)
	reader := sdkmetric.NewManualReader()
	o := observerOn(t, reader)
	everyEvent(o)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	prom, _ := exportedByPrometheus(t)
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			d, ok := doc[m.Name]
			if !ok {
				t.Errorf("%s is exported but not in the table of docs/observability.md", m.Name)
				continue
			}
			var kind string
			var sets []attribute.Set
			switch x := m.Data.(type) {
			case metricdata.Sum[int64]:
				kind = "counter"
				for _, p := range x.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				kind = "histogram"
				for _, p := range x.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[int64]:
				kind = "gauge"
				for _, p := range x.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[float64]:
				kind = "gauge"
				for _, p := range x.DataPoints {
					sets = append(sets, p.Attributes)
				}
			default:
				kind = "unknown"
			}
			if kind != d.kind {
				t.Errorf("%s is a %s, the table says %s", m.Name, kind, d.kind)
			}
			if m.Unit != d.unit {
				t.Errorf("%s has the unit %q, the table says %q", m.Name, m.Unit, d.unit)
			}
			family := d.prom
			if kind == "histogram" {
				family += "_count"
			}
			if prom[family] == nil {
				t.Errorf("%s: the table's Prometheus name %s is not in the scrape (%v)", m.Name, d.prom, prom.names())
			}
			var extra []string
			for _, s := range sets {
				for _, kv := range s.ToSlice() {
					if !d.attrs[string(kv.Key)] {
						extra = append(extra, string(kv.Key))
					}
				}
			}
			if len(extra) > 0 {
				sort.Strings(extra)
				t.Errorf("%s carries attributes the table does not list: %v", m.Name, extra)
			}
		}
	}
	for name := range doc {
		if !seen[name] {
			t.Errorf("%s is in the table of docs/observability.md but not exported", name)
		}
	}
}

// sqlTables are the words of the docs that look like metric names and are
// tables of the PostgreSQL store instead.
var sqlTables = map[string]bool{"yaoki_dead_letters": true, "yaoki_idempotency": true}

// TestDocsNameExportedMetrics: every metric name the manuals and the
// README write (a query, an alert to copy, a grep of a scrape) is one the
// exporter writes, with the labels its selectors match on, so that what
// an operator copies from them finds series.
func TestDocsNameExportedMetrics(t *testing.T) {
	x, _ := exportedByPrometheus(t)
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	word := regexp.MustCompile(`\b(yaoki_[a-z0-9_]+)\b(\{[^}]*\})?`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range word.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if sqlTables[name] || x.label(name) && m[2] == "" {
					continue
				}
				n++
				labels := x[name]
				if labels == nil {
					labels = x[name+"_bucket"] // a histogram's family
				}
				if labels == nil {
					t.Errorf("%s:%d: %s is not a metric the exporter writes (it writes %v)", f, i+1, name, x.names())
					continue
				}
				for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
					if !labels[mm[1]] {
						t.Errorf("%s:%d: %s has no label %s", f, i+1, name, mm[1])
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no metric name found in the docs")
	}
}

// docLetters maps the attribute letters of the package documentation's
// table (doc.go) to the attribute keys they stand for.
var docLetters = map[string][]string{
	"C": {event.AttrComponent},
	"N": {event.AttrName},
	"M": {event.AttrMethod},
	"S": {event.AttrStatusCode, event.AttrStatusClass},
	"H": {event.AttrServerAddress, event.AttrServerPort},
	"O": {event.AttrOutcome},
	"W": {event.AttrWaitSource},
	"R": {event.AttrReason},
	"E": {event.AttrErrorType},
	"F": {event.AttrStateFrom, event.AttrStateTo},
	"D": {"yaoki.deadletter.state"},
}

// TestPackageDocTable: the table of the package documentation (doc.go)
// says what the table of docs/observability.md says: the same
// instruments, Prometheus names, types, units and attributes.
func TestPackageDocTable(t *testing.T) {
	manual := readMetricsTable(t)
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^//\t(yaoki\.[a-z_.]+)\s+(yaoki_[a-z_]+)\s+(counter|histogram|gauge)\s+(\{[a-z]+\}|s)?\s+([A-Z]( [A-Z])*)$`)
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, "//\tyaoki.") {
				t.Errorf("doc.go: row not understood: %q", line)
			}
			continue
		}
		seen++
		d, ok := manual[m[1]]
		if !ok {
			t.Errorf("doc.go lists %s, docs/observability.md does not", m[1])
			continue
		}
		if m[2] != d.prom || m[3] != d.kind || m[4] != d.unit {
			t.Errorf("%s: doc.go says %s %s %q, docs/observability.md %s %s %q", m[1], m[2], m[3], m[4], d.prom, d.kind, d.unit)
		}
		attrs := map[string]bool{}
		for _, l := range strings.Fields(m[5]) {
			for _, k := range docLetters[l] {
				attrs[k] = true
			}
		}
		if !maps.Equal(attrs, d.attrs) {
			t.Errorf("%s: doc.go's attributes %s are %v, docs/observability.md's %v", m[1], m[5], slices.Sorted(maps.Keys(attrs)), slices.Sorted(maps.Keys(d.attrs)))
		}
	}
	if seen != len(manual) {
		t.Errorf("doc.go has %d rows, docs/observability.md %d", seen, len(manual))
	}
}

// TestNamesDoNotCollide holds the toolkit's metric and attribute names to
// OpenTelemetry's naming rule: names live in one hierarchy, so none is
// another's name, and none is the namespace of another (a leaf
// "yaoki.hedges" beside "yaoki.hedges.won" would break it). The names of
// the toolkit's own are in the "yaoki." namespace; the others are
// semantic conventions.
func TestNamesDoNotCollide(t *testing.T) {
	metrics := []string{yotel.MetricAttempts, yotel.MetricRetries, yotel.MetricGiveUps, yotel.MetricRejections,
		yotel.MetricReplays, yotel.MetricConflicts, yotel.MetricBreakerTransitions, yotel.MetricRetryWait,
		yotel.MetricAttemptDuration, yotel.MetricBreakerState, yotel.MetricBudgetLevel, yotel.MetricRedrives,
		yotel.MetricHedges, yotel.MetricHedgesWon, yotel.MetricDeadLetters}
	attrs := []string{event.AttrMethod, event.AttrMethodOriginal, event.AttrStatusCode, event.AttrServerAddress,
		event.AttrServerPort, event.AttrErrorType, event.AttrErrorMessage, event.AttrComponent, event.AttrName,
		event.AttrAttempt, event.AttrOutcome, event.AttrStatusClass, event.AttrWait, event.AttrWaitSource,
		event.AttrReason, event.AttrDuration, event.AttrStateFrom, event.AttrStateTo, event.AttrLevel, event.AttrKey,
		yotel.AttrDeadLetterState}
	semconv := map[string]bool{event.AttrMethod: true, event.AttrMethodOriginal: true, event.AttrStatusCode: true,
		event.AttrServerAddress: true, event.AttrServerPort: true, event.AttrErrorType: true, event.AttrErrorMessage: true}
	names := append(slices.Clone(metrics), attrs...)
	for i, a := range names {
		if !semconv[a] && !strings.HasPrefix(a, "yaoki.") {
			t.Errorf("%q: not a semantic convention, and not in the yaoki. namespace", a)
		}
		for j, b := range names {
			switch {
			case i != j && a == b:
				t.Errorf("%q is two names", a)
			case strings.HasPrefix(b, a+"."):
				t.Errorf("%q is a name and the namespace of %q", a, b)
			}
		}
	}
}
