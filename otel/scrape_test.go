package otel_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
	"github.com/yaoki-go/yaoki/throttle"
)

// realCalls makes, through httpretry transports observed by o, calls to
// servers on loopback that exercise what an operator watches: retries
// after a 503 (backoff) and a 429 with Retry-After (server), a give-up
// after three 500s, a retry refused by an empty budget, a breaker that
// opens and refuses the retry, a throttle's wait before an attempt, and a
// hedge that wins over a first attempt never answered. The transports are tracked, for the gauges. The
// policies do not wait (retrytest.NoWait); the hedge's 1 ms delay is the
// driver's own timer.
func realCalls(t *testing.T, o *yotel.Observer) {
	t.Helper()
	// get GETs url through tr and wants the status want, or with want 0
	// an error (a give-up without an answer to hand back).
	get := func(tr *httpretry.Transport, url string, want int) {
		t.Helper()
		o.TrackTransport(tr)
		client := tr.Client()
		defer client.CloseIdleConnections()
		resp, err := client.Get(url)
		if want == 0 && err != nil {
			return
		}
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}
	transport := func(srv *retrytest.Server, g httpretry.Guards) *httpretry.Transport {
		p, _ := retrytest.NoWait(retry.Policy{})
		return &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o, Guards: g}
	}
	// Retries, then a give-up: attempts_exhausted.
	a := retrytest.NewServer(t, "503,429:retry-after=1,200,500*3")
	ta := transport(a, httpretry.Guards{Budget: httpretry.NoBudget})
	get(ta, a.URL+"/a", 200)
	get(ta, a.URL+"/a", 500)
	// An empty token bucket refuses the retry: budget_exhausted.
	b := retrytest.NewServer(t, "500*2")
	get(transport(b, httpretry.Guards{Budget: func(string) retry.Budget {
		bucket, err := budget.NewBucket(budget.BucketConfig{Capacity: 1, RetryCost: 1, ThrottleCost: 1, NoRetryIncrement: 1})
		if err != nil {
			t.Fatal(err)
		}
		bucket.AllowRetryAt(time.Now(), false) // its one token
		return bucket
	}}), b.URL+"/b", 500)
	// A breaker that opens at the first failure refuses the retry:
	// breaker_open, and a transition to open.
	c := retrytest.NewServer(t, "500*2")
	get(transport(c, httpretry.Guards{Budget: httpretry.NoBudget, Breaker: func(host string) retry.Breaker {
		br, err := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 1, Observer: o})
		if err != nil {
			t.Fatal(err)
		}
		return br
	}}), c.URL+"/c", 0)
	// A throttle told of an overload makes the attempt wait: rate_limit.
	d := retrytest.NewServer(t, "200")
	get(transport(d, httpretry.Guards{Budget: httpretry.NoBudget, Throttle: func(string) retry.Throttle {
		th, err := throttle.NewCubic(throttle.CubicConfig{})
		if err != nil {
			t.Fatal(err)
		}
		th.RecordAt(time.Now(), true)
		return th
	}}), d.URL+"/d", 200)
	// A first attempt that is never answered (until the call cancels it,
	// or the test ends): its hedge answers and wins.
	stop := make(chan struct{})
	e := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(header.AttemptCount) == "1" { // whichever comes first
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}
	}))
	defer e.Close()
	defer close(stop) // before Close, which waits for the handlers
	p, _ := retrytest.NoWait(retry.Policy{})
	get(&httpretry.Transport{Base: e.Client().Transport, Policy: p, Observer: o, Guards: httpretry.Guards{Budget: httpretry.NoBudget},
		Hedge: &hedge.Config{Delay: time.Millisecond, Budget: hedge.Off, MinPerSecond: hedge.Off, Brownout: hedge.Off}}, e.URL+"/e", 200)
}

// TestScrapeAfterRealCalls scrapes over loopback HTTP, as Prometheus
// does, a registry holding the exporter of an Observer and the Go runtime
// and process collectors (what yaoki's --metrics-addr and --admin-addr
// serve), after realCalls. Every yaoki family it shows is in the metrics
// table of docs/observability.md with its documented type and attributes,
// every label value is one the attribute table allows (or of a bounded
// form: a status class, an error type without spaces), the series an
// operator needs for each situation are there, and promtool check metrics
// accepts the exposition.
func TestScrapeAfterRealCalls(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o := promObserver(t, reg)
	realCalls(t, o)
	families, body := scrape(t, reg)
	defer func() {
		if t.Failed() {
			t.Logf("scrape:\n%s", body)
		}
	}()

	doc := map[string]documentedMetric{}
	for _, d := range readMetricsTable(t) {
		doc[d.prom] = d
	}
	reasons := docValues(t, event.AttrReason)
	allowed := map[string][]string{
		"yaoki_reason":      slices.Concat(reasons["give-ups"], reasons["rejections"], reasons["conflicts"], reasons["redrives"]),
		"yaoki_outcome":     docValues(t, event.AttrOutcome)[""],
		"yaoki_wait_source": docValues(t, event.AttrWaitSource)[""],
		"yaoki_component":   docValues(t, event.AttrComponent)[""],
		"yaoki_state_from":  {event.StateClosed, event.StateHalfOpen, event.StateOpen},
		"yaoki_state_to":    {event.StateClosed, event.StateHalfOpen, event.StateOpen},
		"server_address":    {"127.0.0.1"},
	}
	bounded := map[string]*regexp.Regexp{
		"yaoki_status_class":        regexp.MustCompile(`^[1-5]xx$`),
		"http_response_status_code": regexp.MustCompile(`^[1-9][0-9][0-9]$`),
		"server_port":               regexp.MustCompile(`^[0-9]{1,5}$`),
		"http_request_method":       regexp.MustCompile(`^(GET|HEAD|POST|PUT|DELETE|CONNECT|OPTIONS|TRACE|PATCH|QUERY|_OTHER)$`),
		// A status, a cause's name, a Go type or _OTHER: never a message.
		"error_type": regexp.MustCompile(`^([45][0-9][0-9]|[a-z_]+|_OTHER|\*?[a-zA-Z0-9_]+\.[a-zA-Z0-9_]+)$`),
		"yaoki_name": regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`),
	}
	scope := map[string]bool{"otel_scope_name": true, "otel_scope_version": true, "otel_scope_schema_url": true}
	types := map[dto.MetricType]string{dto.MetricType_COUNTER: "counter", dto.MetricType_GAUGE: "gauge", dto.MetricType_HISTOGRAM: "histogram"}
	// has[family][label=value]: the label values each family shows.
	has := map[string]map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "yaoki_") {
			continue
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("%s is exported but not in the metrics table of docs/observability.md", name)
			continue
		}
		if types[f.GetType()] != d.kind {
			t.Errorf("%s is a %s, the table says %s", name, types[f.GetType()], d.kind)
		}
		has[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			has[name][""] += v
			for _, l := range m.GetLabel() {
				k, val := l.GetName(), l.GetValue()
				if scope[k] {
					continue
				}
				if !d.attrs[strings.ReplaceAll(k, "_", ".")] && !promLabelOf(d, k) {
					t.Errorf("%s: label %s is not among the attributes the table lists for it", name, k)
				}
				if vs, ok := allowed[k]; ok && !slices.Contains(vs, val) {
					t.Errorf("%s: %s=%q is not a value docs/observability.md allows (%v)", name, k, val, vs)
				} else if re, ok := bounded[k]; ok && !re.MatchString(val) {
					t.Errorf("%s: %s=%q is not of the bounded form %s", name, k, val, re)
				} else if !ok && allowed[k] == nil {
					t.Errorf("%s: label %s: this test does not know its values; add it to allowed or bounded", name, k)
				}
				has[name][k+"="+val] += v
			}
		}
	}
	// What an operator looks for after these calls.
	for _, need := range []struct{ family, label string }{
		{"yaoki_attempts_total", "yaoki_outcome=throttled"},
		{"yaoki_attempts_total", "yaoki_outcome=failure"},
		{"yaoki_attempts_total", "yaoki_outcome=success"},
		{"yaoki_attempts_total", "http_response_status_code=429"},
		{"yaoki_attempt_duration_seconds", "yaoki_outcome=success"},
		{"yaoki_retries_total", "yaoki_wait_source=backoff"},
		{"yaoki_retries_total", "yaoki_wait_source=server"},
		{"yaoki_retry_wait_seconds", "yaoki_wait_source=server"},
		{"yaoki_retry_wait_seconds", "yaoki_wait_source=rate_limit"},
		{"yaoki_give_ups_total", "yaoki_reason=attempts_exhausted"},
		{"yaoki_give_ups_total", "yaoki_reason=budget_exhausted"},
		{"yaoki_give_ups_total", "yaoki_reason=breaker_open"},
		{"yaoki_rejections_total", "yaoki_reason=budget_exhausted"},
		{"yaoki_rejections_total", "yaoki_reason=breaker_open"},
		{"yaoki_breaker_transitions_total", "yaoki_state_to=open"},
		{"yaoki_hedges_total", ""},
		{"yaoki_hedges_won_total", ""},
	} {
		if has[need.family][need.label] == 0 {
			t.Errorf("%s: no series with %q counting anything", need.family, need.label)
		}
	}
	// The gauges: the breaker open (2), the empty bucket (0) beside the
	// hosts whose budget is off.
	if has["yaoki_breaker_state"][""] != 2 {
		t.Errorf("yaoki_breaker_state: %v, want the one open breaker (2)", has["yaoki_breaker_state"])
	}
	if _, ok := has["yaoki_budget_level"]; !ok {
		t.Errorf("yaoki_budget_level: not in the scrape, want the empty bucket's 0")
	}
	promtoolCheckMetrics(t, body)
}

// promLabelOf reports whether the Prometheus label k stands for one of
// d's attributes whose name has underscores of its own
// (http.response.status_code is http_response_status_code).
func promLabelOf(d documentedMetric, k string) bool {
	for a := range d.attrs {
		if strings.ReplaceAll(a, ".", "_") == k {
			return true
		}
	}
	return false
}

// promtoolCheckMetrics runs promtool check metrics, Prometheus's own
// linter of an exposition (names, suffixes, units, help texts), on body.
func promtoolCheckMetrics(t *testing.T, body string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus): the exposition was checked against the docs, not by promtool check metrics")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	cmd.Env = append(os.Environ(), "LANG=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
