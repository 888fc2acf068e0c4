package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/metrictest"
)

// pushgatewayPath is Debian's prometheus-pushgateway, which .ci/run installs.
const pushgatewayPath = "/usr/bin/prometheus-pushgateway"

// startPushgateway starts a real Prometheus Pushgateway on a free loopback
// port, keeping its metrics in memory, and returns its URL once it is
// ready. It is stopped at the end of the test.
func startPushgateway(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(pushgatewayPath); err != nil {
		t.Skipf("no Pushgateway at %s (Debian package prometheus-pushgateway)", pushgatewayPath)
	}
	addr := freePort(t)
	s := startProgram(t, pushgatewayPath, "--web.listen-address="+addr, "--persistence.file=")
	t.Cleanup(s.kill)
	url := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	var err error
	if !poll(15*time.Second, 20*time.Millisecond, func() bool {
		var resp *http.Response
		if resp, err = client.Get(url + "/-/ready"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("the Pushgateway on %s is not ready after 15 s: %v\n%s", addr, err, strings.Join(s.lines(), "\n"))
	}
	return url
}

// sum adds the samples of got whose series holds every one of parts.
func sum(got map[string]float64, parts ...string) float64 {
	total := 0.0
	for k, v := range got {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(k, p)
		}
		if all {
			total += v
		}
	}
	return total
}

// yaoki http and yaoki exec push their metrics to a real Pushgateway at
// exit, under a job label, so that a short-lived command's retries and
// give-ups can be scraped after it is gone.
func TestMetricsPushToPushgateway(t *testing.T) {
	pg := startPushgateway(t)
	s := startScripted(t, false, status(503, "busy\n"), ok("done\n"))
	r := run(t, nil, append([]string{"http", "--metrics-push", pg}, append(fastRetries, s.url)...)...)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("exit %d, stdout %q:\n%s", r.code, r.stdout, r.stderr)
	}
	got := scrape(t, pg+"/metrics")
	if n := sum(got, "yaoki_attempts_total{", "job=yaoki_http"); n != 2 {
		t.Errorf("pushed yaoki_attempts_total for job yaoki_http: %v, want 2 (a 503, then a 200)\n%s", n, metrictest.Lines(got))
	}
	if n := sum(got, "yaoki_retries_total{", "job=yaoki_http"); n != 1 {
		t.Errorf("pushed yaoki_retries_total for job yaoki_http: %v, want 1\n%s", n, metrictest.Lines(got))
	}

	// exec, with a job of its own, giving up: the give-up is pushed.
	r = run(t, nil, "exec", "--metrics-push", pg, "--metrics-job", "nightly_sync", "--max-attempts", "2", "--base", "0", "--", "false")
	if r.code != 1 {
		t.Fatalf("exec false: exit %d, want 1:\n%s", r.code, r.stderr)
	}
	got = scrape(t, pg+"/metrics")
	if n := sum(got, "yaoki_give_ups_total{", "job=nightly_sync"); n != 1 {
		t.Errorf("pushed yaoki_give_ups_total for job nightly_sync: %v, want 1\n%s", n, metrictest.Lines(got))
	}
	if n := sum(got, "yaoki_attempts_total{", "job=yaoki_http"); n != 2 {
		t.Errorf("the exec push changed job yaoki_http's samples: %v, want 2", n)
	}
}

// A Pushgateway that cannot be reached is reported on stderr; the exit code
// is the command's own.
func TestMetricsPushUnreachable(t *testing.T) {
	r := run(t, nil, "exec", "--metrics-push", "http://"+freePort(t), "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "cannot push the metrics to") {
		t.Fatalf("exit %d, stderr %q; want 0 and the failed push reported", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--metrics-push", "127.0.0.1:9091", "--", "true"}, "--metrics-push \"127.0.0.1:9091\": want the URL of a Prometheus Pushgateway"},
		{[]string{"exec", "--metrics-job", "x", "--", "true"}, "give --metrics-push URL too"},
		{[]string{"exec", "--metrics-push", "http://127.0.0.1:1", "--metrics-job", "a/b", "--", "true"}, "--metrics-job \"a/b\""},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki %q: exit %d, %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
