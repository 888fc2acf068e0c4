package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/event"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// exported is what a Prometheus scrape of the Observer shows: for each
// sample name a Prometheus query can use (a histogram family F gives F_bucket,
// F_sum and F_count), the label names its series carry.
type exported map[string]map[string]bool

// names returns the sample names, sorted.
func (x exported) names() []string {
	var out []string
	for n := range x {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// label reports whether name is a label of an exported sample and not a
// sample's name: the toolkit's labels share the metrics' yaoki_ prefix
// (yaoki_reason), so that a word of a query is told apart by what the
// exporter writes.
func (x exported) label(name string) bool {
	if x[name] != nil {
		return false
	}
	for _, labels := range x {
		if labels[name] {
			return true
		}
	}
	return false
}

// everyEventList has at least one event of every kind
// (TestEveryKindCounted holds it to that); those without a Component are
// httpretry's GET to 127.0.0.1:8080.
var everyEventList = []event.Event{
	{Kind: event.AttemptStart, Attempt: 1},
	{Kind: event.AttemptEnd, Attempt: 1, Outcome: event.Throttled, Status: 429, Duration: 3 * time.Millisecond},
	{Kind: event.RetryScheduled, Attempt: 1, Status: 429, Wait: time.Second, Source: event.ServerHint},
	{Kind: event.AttemptEnd, Attempt: 2, Outcome: event.Success, Status: 200, Duration: 2 * time.Millisecond},
	{Kind: event.GaveUp, Attempt: 3, Status: 503, Reason: "attempts_exhausted", Duration: time.Second},
	{Kind: event.BudgetRefused, Name: "127.0.0.1:8080", Reason: "budget_exhausted"},
	{Kind: event.BreakerRejected, Name: "127.0.0.1:8080", Wait: time.Second},
	{Kind: event.ThrottleRejected, Name: "127.0.0.1:8080"},
	{Kind: event.RetryScheduled, Attempt: 1, Wait: 2 * time.Second, Source: event.RateLimit},
	{Kind: event.RetryScheduled, Attempt: 1, Wait: 3 * time.Second, Source: event.RateLimit, Reason: "bulkhead"},
	{Kind: event.ThrottleRejected, Attempt: 1, Wait: 4 * time.Second, Reason: "deadline"},
	{Kind: event.BreakerStateChange, Component: "breaker", Name: "127.0.0.1:8080", From: "closed", To: "open"},
	{Kind: event.Replay, Component: "idempotency", Method: "POST", Status: 201},
	{Kind: event.Replay, Component: "flaky", Method: "POST", Host: "127.0.0.1:8080", Status: 201},
	{Kind: event.Conflict, Component: "idempotency", Method: "POST", Status: 409, Reason: "in_progress"},
	{Kind: event.Redrive, Component: "deadletter", Name: "payments", Outcome: event.Rejected, Reason: "redrives_exhausted", Key: "k", Attempt: 5},
	{Kind: event.Hedge, Attempt: 2, Wait: 50 * time.Millisecond},
	{Kind: event.HedgeWon, Attempt: 2, Duration: 60 * time.Millisecond},
	{Kind: event.HedgeRefused, Attempt: 3, Reason: "hedge_budget_exhausted"},
}

// everyEvent records at least one event of every kind, with every field
// that an HTTP transport, a breaker, a budget and the idempotency middleware
// set, so that every instrument and every attribute shows in a scrape.
func everyEvent(o *yotel.Observer) {
	ctx := context.Background()
	h := event.Event{Component: "httpretry", Method: "GET", Host: "127.0.0.1:8080"}
	for _, e := range everyEventList {
		if e.Component == "" {
			e.Component, e.Method, e.Host = h.Component, h.Method, h.Host
		}
		o.Observe(ctx, e)
	}
	o.TrackBudget("127.0.0.1:8080", func() float64 { return 0.5 })
	dl, _ := deadletter.NewMemory(0)
	_ = dl.Put(ctx, deadletter.Letter{ID: "1", Queue: "payments", Created: time.Now(), Parked: true})
	o.TrackDeadLetters("payments", dl)
}

// scrape serves reg over HTTP on loopback, as an application would with
// promhttp, GETs it and parses the text it answers.
func scrape(t testing.TB, reg *prometheus.Registry) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	return families, string(body)
}

// exportedByPrometheus records every kind of event through the
// OpenTelemetry Prometheus exporter and returns what a scrape shows.
func exportedByPrometheus(t testing.TB) (exported, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o := promObserver(t, reg)
	everyEvent(o)
	families, body := scrape(t, reg)
	x := exported{}
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		if x[name] == nil {
			x[name] = map[string]bool{}
		}
		for _, l := range labels {
			x[name][l.GetName()] = true
		}
		for _, l := range extra {
			x[name][l] = true
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", m.GetLabel(), "le")
				add(name+"_sum", m.GetLabel())
				add(name+"_count", m.GetLabel())
				continue
			}
			add(name, m.GetLabel())
		}
	}
	return x, body
}

// TestPrometheusNames checks the package documentation's table against what
// the exporter really writes.
func TestPrometheusNames(t *testing.T) {
	x, body := exportedByPrometheus(t)
	doc := map[string]string{ // OpenTelemetry name → Prometheus family name, as documented
		yotel.MetricAttempts:           "yaoki_attempts_total",
		yotel.MetricAttemptDuration:    "yaoki_attempt_duration_seconds",
		yotel.MetricRetries:            "yaoki_retries_total",
		yotel.MetricRetryWait:          "yaoki_retry_wait_seconds",
		yotel.MetricGiveUps:            "yaoki_give_ups_total",
		yotel.MetricRejections:         "yaoki_rejections_total",
		yotel.MetricBreakerTransitions: "yaoki_breaker_transitions_total",
		yotel.MetricBreakerState:       "yaoki_breaker_state",
		yotel.MetricBudgetLevel:        "yaoki_budget_level",
		yotel.MetricReplays:            "yaoki_idempotency_replays_total",
		yotel.MetricConflicts:          "yaoki_idempotency_conflicts_total",
		yotel.MetricDeadLetters:        "yaoki_deadletter_letters",
		yotel.MetricRedrives:           "yaoki_deadletter_redrives_total",
		yotel.MetricHedges:             "yaoki_hedges_total",
		yotel.MetricHedgesWon:          "yaoki_hedges_won_total",
	}
	for otelName, promName := range doc {
		if !x[promName]["yaoki_component"] && !x[promName]["yaoki_name"] && !x[promName+"_count"]["yaoki_component"] {
			t.Errorf("%s: no series %s with yaoki_component or yaoki_name in the scrape; exported: %v", otelName, promName, x.names())
		}
	}
	for _, label := range []string{"http_request_method", "http_response_status_code", "server_address", "server_port",
		"error_type", "yaoki_component", "yaoki_outcome", "yaoki_status_class"} {
		if !x["yaoki_attempts_total"][label] {
			t.Errorf("yaoki_attempts_total has no label %s", label)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}
