package telemetry_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/internal/leakcheck"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// command runs a command that takes the telemetry flags with args, and
// body while its telemetry runs; it returns what the command wrote on
// stderr, Stop's messages included.
func command(t *testing.T, args []string, body func(run *telemetry.Running)) string {
	t.Helper()
	var tf telemetry.Flags
	var stderr bytes.Buffer
	cmd := &cobra.Command{Use: "demo", SilenceUsage: true, RunE: func(cmd *cobra.Command, _ []string) error {
		run, err := tf.Start(cmd, "demo")
		if err != nil {
			return err
		}
		defer run.Stop()
		body(run)
		return nil
	}}
	tf.Register(cmd.Flags())
	cmd.SetErr(&stderr)
	cmd.SetOut(io.Discard)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("demo %v: %v\n%s", args, err, stderr.String())
	}
	return stderr.String()
}

// retried GETs a loopback server answering 503 then 200 through an
// httpretry transport observed by run, and fails the test unless the
// call gets its 200.
func retried(t *testing.T, run *telemetry.Running) {
	t.Helper()
	srv := retrytest.NewServer(t, "503,200")
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: run.Observer}
	run.Track(tr)
	client := tr.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d, want 200 after a retry", resp.StatusCode)
	}
}

// TestMetricsEndpointPassesPromtool scrapes the endpoint --metrics-addr
// serves (yaoki proxy's --admin-addr is the same server) after a retried
// call: yaoki's metrics and the Go runtime and process collectors side by
// side, which promtool check metrics accepts (names, suffixes, help, no
// family twice).
func TestMetricsEndpointPassesPromtool(t *testing.T) {
	var body string
	stderr := command(t, []string{"--metrics-addr", "127.0.0.1:0"}, func(run *telemetry.Running) {
		retried(t, run)
		client := &http.Client{}
		defer client.CloseIdleConnections()
		resp, err := client.Get(run.URL)
		if err != nil {
			t.Fatalf("GET %s: %v", run.URL, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, %v", run.URL, resp.StatusCode, err)
		}
		body = string(b)
	})
	if !strings.Contains(stderr, "demo: metrics on http://127.0.0.1:") {
		t.Errorf("stderr %q does not announce the metrics URL", stderr)
	}
	for _, want := range []string{`yaoki_attempts_total{`, `yaoki_retries_total{`, `yaoki_wait_source="backoff"`, "go_goroutines ", "process_start_time_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape has no %s:\n%s", want, body)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus): the endpoint's exposition was not linted")
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestOTLPCollectorDown: faults, the OTLP collector the environment names
// refuses connections, or accepts them and never answers (a lost reply).
// The observed call retries and succeeds as without metrics; the export
// fails at exit, within OTEL_EXPORTER_OTLP_TIMEOUT (the exporter retries
// until its context ends, which was Stop's 5 s), and says so on stderr.
func TestOTLPCollectorDown(t *testing.T) {
	for _, fault := range []string{"refused", "no answer"} {
		t.Run(fault, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			held := make(chan net.Conn, 16)
			if fault == "refused" {
				ln.Close() // nothing listens there
			} else {
				go func() { // accept, read nothing, answer nothing
					for {
						c, err := ln.Accept()
						if err != nil {
							close(held)
							return
						}
						held <- c
					}
				}()
				defer func() {
					ln.Close()
					for c := range held {
						c.Close()
					}
				}()
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300") // ms
			var stopped time.Time
			stderr := command(t, nil, func(run *telemetry.Running) {
				if run.Metrics == nil {
					t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT set: no metrics were set up")
				}
				retried(t, run)
				stopped = time.Now() // Stop runs next
			})
			if !strings.Contains(stderr, "demo: cannot export the metrics") {
				t.Errorf("stderr %q, want it to say the metrics could not be exported", stderr)
			}
			// The last export is bounded by the 300 ms asked for (the
			// margin is for a loaded machine), not by Stop's own 5 s.
			if d := time.Since(stopped); d > 3*time.Second {
				t.Errorf("the exit waited %v for the collector, want about OTEL_EXPORTER_OTLP_TIMEOUT (300ms)", d)
			}
		})
	}
}
