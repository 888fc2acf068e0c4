package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/internal/metrictest"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// These tests check --metrics-addr and --log-format of flaky, http and
// exec: metrics are scraped over HTTP from the running binary and parsed as
// Prometheus text; log records are parsed as JSON.

// scrape GETs a Prometheus endpoint and returns each sample of the yaoki_
// families as "name{label=value,...}" → value, with the labels sorted and
// the exporter's otel_scope_* labels left out.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scraping %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape of %s: %v", url, err)
	}
	out := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "yaoki_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				name += "_count"
				v = float64(m.GetHistogram().GetSampleCount())
			}
			out[series(name, m.GetLabel())] = v
			name = strings.TrimSuffix(name, "_count")
		}
	}
	return out
}

func series(name string, labels []*dto.LabelPair) string {
	var kv []string
	for _, l := range labels {
		if !strings.HasPrefix(l.GetName(), "otel_scope_") {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
	}
	return name + "{" + metrictest.Key(kv) + "}"
}

// only returns the samples of s whose name starts with prefix.
func only(s map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if strings.HasPrefix(k, prefix+"{") {
			out[k] = v
		}
	}
	return out
}

// TestFlakyMetrics drives yaoki flaky through httpretry, with the
// OpenTelemetry observer on the SDK's manual reader on the client side, and
// scrapes flaky's own /metrics: both sides count the same attempts.
func TestFlakyMetrics(t *testing.T) {
	s := startFlaky(t, "--script", "503,429:retry-after=1,reset,200", "--metrics-addr", "127.0.0.1:0")
	metrics := s.metricsURL(t)

	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	obs, err := yotel.New(provider)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: 4})
	// No keep-alive: net/http itself resends a GET whose reused connection
	// was reset, which would hide the reset.
	base := &http.Transport{DisableKeepAlives: true}
	defer base.CloseIdleConnections()
	// No budget: 3 retries on a new host, more than the default budget's
	// starting credit grants.
	client := (&httpretry.Transport{Base: base, Policy: p, Observer: obs, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}).Client()
	order := func(method string, hdr ...string) {
		if resp, _ := do(t, client, method, s.url+"orders", strings.NewReader("{}"), hdr...); resp.StatusCode != 200 {
			t.Fatalf("%s: %s, want 200", method, resp.Status)
		}
	}
	order("GET")                           // 503, 429, reset, 200
	order("POST", "Idempotency-Key", "k1") // its own walk: 503, 429, reset, 200
	order("POST", "Idempotency-Key", "k1") // replayed: 200
	s.waitRequests(t, 9)

	// The client's view.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == yotel.MetricAttempts {
			for _, dp := range sum.DataPoints {
				status, _ := dp.Attributes.Value("http.response.status_code")
				et, _ := dp.Attributes.Value("error.type")
				method, _ := dp.Attributes.Value("http.request.method")
				seen[fmt.Sprintf("%s %d %s", method.AsString(), status.AsInt64(), et.AsString())] += float64(dp.Value)
			}
		}
	}
	want := map[string]float64{
		"GET 503 503": 1, "GET 429 429": 1, "GET 0 connection_reset": 1, "GET 200 ": 1,
		"POST 503 503": 1, "POST 429 429": 1, "POST 0 connection_reset": 1, "POST 200 ": 2,
	}
	metrictest.Expect(t, "attempts the client counted (method, status, error.type)", seen, want)

	// The server's view, scraped over HTTP.
	got := scrape(t, metrics)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(s.url, "/"), "http://"))
	dest := ",yaoki_component=flaky,server_address=127.0.0.1,server_port=" + port
	metrictest.Expect(t, "flaky's yaoki_attempts_total", only(got, "yaoki_attempts_total"), map[string]float64{
		"yaoki_attempts_total{error_type=503,http_request_method=GET,http_response_status_code=503" + dest + ",yaoki_outcome=throttled,yaoki_status_class=5xx}":  1,
		"yaoki_attempts_total{error_type=429,http_request_method=GET,http_response_status_code=429" + dest + ",yaoki_outcome=throttled,yaoki_status_class=4xx}":  1,
		"yaoki_attempts_total{error_type=connection_reset,http_request_method=GET" + dest + ",yaoki_outcome=failure}":                                            1,
		"yaoki_attempts_total{http_request_method=GET,http_response_status_code=200" + dest + ",yaoki_outcome=success,yaoki_status_class=2xx}":                   1,
		"yaoki_attempts_total{error_type=503,http_request_method=POST,http_response_status_code=503" + dest + ",yaoki_outcome=throttled,yaoki_status_class=5xx}": 1,
		"yaoki_attempts_total{error_type=429,http_request_method=POST,http_response_status_code=429" + dest + ",yaoki_outcome=throttled,yaoki_status_class=4xx}": 1,
		"yaoki_attempts_total{error_type=connection_reset,http_request_method=POST" + dest + ",yaoki_outcome=failure}":                                           1,
		"yaoki_attempts_total{http_request_method=POST,http_response_status_code=200" + dest + ",yaoki_outcome=success,yaoki_status_class=2xx}":                  2,
	})
	metrictest.Expect(t, "flaky's yaoki_idempotency_replays_total", only(got, "yaoki_idempotency_replays_total"), map[string]float64{
		"yaoki_idempotency_replays_total{http_request_method=POST,http_response_status_code=200" + dest + ",yaoki_status_class=2xx}": 1,
	})
}

// TestFlakyLogFormatJSON: with --log-format json every line flaky writes on
// stderr is a JSON record; each request is one, with its answer.
func TestFlakyLogFormatJSON(t *testing.T) {
	s := startFlaky(t, "--script", "503,200", "--log-format", "json")
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	for _, want := range []int{503, 200} {
		resp, err := get(t, c, "GET", s.url+"x", "")
		if err != nil || resp.StatusCode != want {
			t.Fatalf("got %v %v, want %d", resp, err, want)
		}
	}
	s.stop()
	var requests []map[string]any
	for _, l := range s.log {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", l, err)
		}
		if m["msg"] == "request" {
			requests = append(requests, m)
		}
	}
	if len(requests) != 2 {
		t.Fatalf("%d request records, want 2: %v", len(requests), s.log)
	}
	for i, want := range []string{"503", "200"} {
		r := requests[i]
		if r["flaky.answer"] != want || r["http.request.method"] != "GET" || r["url.path"] != "/x" ||
			r["yaoki.attempt.number"] != "1" || r["flaky.request"] != float64(i+1) || r["level"] != "INFO" {
			t.Errorf("request record %d: %v; want answer %s, GET /x, attempt 1", i+1, r, want)
		}
	}
}

// TestHTTPMetricsAndLogs runs yaoki http against flaky (503, then 429 with
// Retry-After: 1, then 200) with --metrics-addr and --log-format json, and
// scrapes its metrics during the second wait (the server's second).
func TestHTTPMetricsAndLogs(t *testing.T) {
	s := startFlaky(t, "--script", "503,429:retry-after=1,200")
	h := startYaoki(t, "http", "--metrics-addr", "127.0.0.1:0", "--log-format", "json",
		"--base", "1ms", "--throttle-base", "1ms", s.url+"orders")
	metrics := h.metricsURL(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(s.url, "/"), "http://"))
	get := "http_request_method=GET,yaoki_component=httpretry,server_address=127.0.0.1,server_port=" + port
	var got map[string]float64
	poll(5*time.Second, 10*time.Millisecond, func() bool {
		got = scrape(t, metrics)
		return len(only(got, "yaoki_retries_total")) == 2
	})
	metrictest.Expect(t, "yaoki http's attempts during the wait", only(got, "yaoki_attempts_total"), map[string]float64{
		"yaoki_attempts_total{error_type=503,http_response_status_code=503," + get + ",yaoki_outcome=throttled,yaoki_status_class=5xx}": 1,
		"yaoki_attempts_total{error_type=429,http_response_status_code=429," + get + ",yaoki_outcome=throttled,yaoki_status_class=4xx}": 1,
	})
	metrictest.Expect(t, "yaoki http's retries during the wait", only(got, "yaoki_retries_total"), map[string]float64{
		"yaoki_retries_total{error_type=503,http_response_status_code=503," + get + ",yaoki_status_class=5xx,yaoki_wait_source=backoff}": 1,
		"yaoki_retries_total{error_type=429,http_response_status_code=429," + get + ",yaoki_status_class=4xx,yaoki_wait_source=server}":  1,
	})
	metrictest.Expect(t, "yaoki http's waits (histogram counts)", only(got, "yaoki_retry_wait_seconds_count"), map[string]float64{
		"yaoki_retry_wait_seconds_count{error_type=503,http_response_status_code=503," + get + ",yaoki_status_class=5xx,yaoki_wait_source=backoff}": 1,
		"yaoki_retry_wait_seconds_count{error_type=429,http_response_status_code=429," + get + ",yaoki_status_class=4xx,yaoki_wait_source=server}":  1,
	})
	// yaoki http makes one call per process: it keeps no per-host retry
	// budget (it could only cut the retries asked for), so there is no
	// budget level to show.
	if lv, ok := got["yaoki_budget_level{yaoki_name=127.0.0.1:"+port+"}"]; ok {
		t.Errorf("yaoki_budget_level of 127.0.0.1:%s: %v, want none (yaoki http keeps no budget)%s", port, lv, metrictest.Lines(got))
	}
	if code := h.wait(t); code != 0 {
		t.Fatalf("yaoki http exited %d:\n%s", code, strings.Join(h.log, "\n"))
	}
	var sources []string
	for _, l := range h.log {
		if !strings.HasPrefix(l, "{") {
			continue // the command's own messages
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log record %q: %v", l, err)
		}
		if m["msg"] == "retry scheduled" && m["level"] == "DEBUG" && m["server.address"] == "127.0.0.1" {
			sources = append(sources, fmt.Sprint(m["yaoki.wait.source"], " ", m["http.response.status_code"]))
		}
	}
	if fmt.Sprint(sources) != "[backoff 503 server 429]" {
		t.Errorf("retry records: %v, want [backoff 503 server 429]\n%s", sources, strings.Join(h.log, "\n"))
	}
}

// TestExecMetrics runs a command that fails twice through yaoki exec with
// --metrics-addr; its third attempt scrapes yaoki exec's own endpoint (with
// yaoki http) before succeeding, so the scrape shows the two failures.
func TestExecMetrics(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	counter, scraped := filepath.Join(dir, "count"), filepath.Join(dir, "scrape.txt")
	script := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s
if [ $n -lt 3 ]; then exit 7; fi
exec %[2]s http -o %[3]s http://%[4]s/metrics`, counter, yaoki, scraped, addr)
	r := run(t, nil, "exec", "--metrics-addr", addr, "--log-format", "text", "--base", "1ms", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "yaoki exec: metrics on http://"+addr+"/metrics") {
		t.Errorf("stderr does not announce the metrics URL:\n%s", r.stderr)
	}
	b, err := os.ReadFile(scraped)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("scrape: %v\n%s", err, b)
	}
	got := map[string]float64{}
	for _, name := range []string{"yaoki_attempts_total", "yaoki_retries_total"} {
		for _, m := range families[name].GetMetric() {
			got[series(name, m.GetLabel())] = m.GetCounter().GetValue()
		}
	}
	metrictest.Expect(t, "yaoki exec's metrics during attempt 3", got, map[string]float64{
		"yaoki_attempts_total{error_type=exit_7,yaoki_component=retry,yaoki_outcome=failure}":    2,
		"yaoki_retries_total{error_type=exit_7,yaoki_component=retry,yaoki_wait_source=backoff}": 2,
	})
	// The text log: one DEBUG record per retry.
	if n := strings.Count(r.stderr, `level=DEBUG msg="retry scheduled" yaoki.component=retry`); n != 2 {
		t.Errorf("%d retry records in text, want 2:\n%s", n, r.stderr)
	}
}
