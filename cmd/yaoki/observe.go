package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/event/eventlog"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// observeFlags are --metrics-addr and --log-format, shared by http, exec
// and flaky: what the toolkit reports while the command runs, as
// Prometheus metrics (module yaoki/otel through the OpenTelemetry
// Prometheus exporter) and as structured logs (package eventlog).
type observeFlags struct {
	metricsAddr string
	metricsPush string
	metricsJob  string
	logFormat   string
}

// observeFlagsHelp is appended to the long help of each command that takes
// the flags.
const observeFlagsHelp = `
Observability: --metrics-addr ADDR serves Prometheus metrics on
http://ADDR/metrics for as long as the command runs (attempts by status and
outcome, retries and their waits by source, give-ups by reason; the names
and labels are in docs/observability.md); port 0 picks a free port,
and the URL is printed on stderr. A short-lived command's metrics are gone
when it exits, so they can also be pushed at exit: --metrics-push URL sends
them to a Prometheus Pushgateway (job label --metrics-job, default
yaoki_COMMAND, replacing that job's last push), and OTEL_EXPORTER_OTLP_ENDPOINT
(or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, with OTEL_EXPORTER_OTLP_HEADERS)
sends them over OTLP/HTTP. --log-format text|json writes each retry (level
DEBUG), give-up (WARN) and breaker change (INFO) on stderr as a structured
log record, beside the command's own messages; durations are in seconds.`

// flakyMetricsHelp says what flaky's metrics and logs hold.
const flakyMetricsHelp = `
For flaky, each answer counts as an attempt of its client
(yaoki_attempts_total with retry_component="flaky", by status and by the
outcome a client following yaoki's rules sees; a reset is a failure with
error_type="connection_reset"), and each replay of a keyed operation as an
idempotency replay. With --log-format, its request lines (and its listening
and summary lines) are log records too: msg "request", "listening", "summary".`

func (f *observeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://ADDR/metrics while running, e.g. 127.0.0.1:9464 (port 0: any free port)")
	fs.StringVar(&f.metricsPush, "metrics-push", "", "at exit, push the metrics to this Prometheus Pushgateway, e.g. http://127.0.0.1:9091")
	fs.StringVar(&f.metricsJob, "metrics-job", "", "the job label of --metrics-push (default yaoki_COMMAND, e.g. yaoki_http)")
	fs.StringVar(&f.logFormat, "log-format", "", "log retries, give-ups and breaker changes on stderr as structured records: text or json")
}

// observing is what start set up; its zero parts are what was not asked
// for. Its methods are safe on a nil *observing.
type observing struct {
	observer event.Observer // nil when no flag asked for anything
	logger   *slog.Logger   // nil without --log-format
	metrics  *yotel.Observer
	url      string // the metrics URL, "" without --metrics-addr

	provider *sdkmetric.MeterProvider
	reg      *prometheus.Registry // yaoki's metrics, what --metrics-push sends
	srv      *http.Server
	served   chan struct{}
	push     string // --metrics-push URL, "" for none
	job      string
	stderr   io.Writer
	prefix   string
}

// start sets up what the flags ask for: a logger on stderr, metrics (for
// --metrics-addr, --metrics-push or the OTLP exporter's environment), and
// a metrics endpoint whose URL it announces on stderr as "PREFIX: metrics
// on URL". The caller must call stop, which pushes the metrics.
func (f *observeFlags) start(cmd *cobra.Command, prefix string) (*observing, error) {
	return f.startWith(cmd, prefix, nil)
}

// startWith is start with more handlers on the metrics endpoint's server:
// mount, if not nil, adds them to its mux (yaoki proxy's /healthz and
// /readyz).
func (f *observeFlags) startWith(cmd *cobra.Command, prefix string, mount func(*http.ServeMux)) (*observing, error) {
	o := &observing{stderr: cmd.ErrOrStderr(), prefix: prefix}
	stderr := cmd.ErrOrStderr()
	switch f.logFormat {
	case "":
	case "text":
		o.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case "json":
		o.logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default:
		return nil, usagef("--log-format %q: want text or json", f.logFormat)
	}
	if f.metricsPush != "" {
		u, err := url.Parse(f.metricsPush)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--metrics-push %q: want the URL of a Prometheus Pushgateway, such as http://127.0.0.1:9091", f.metricsPush)
		}
		o.push = f.metricsPush
	}
	o.job = f.metricsJob
	if o.job == "" {
		o.job = "yaoki_" + strings.ReplaceAll(cmd.Name(), "-", "_")
	} else if !validJob(o.job) {
		return nil, usagef("--metrics-job %q: want a label value of letters, digits and _ such as yaoki_nightly", f.metricsJob)
	}
	if cmd.Flags().Changed("metrics-job") && o.push == "" {
		return nil, usagef("--metrics-job names the job of --metrics-push: give --metrics-push URL too")
	}
	otlp, err := otlpReader(cmd.Context())
	if err != nil {
		return nil, err
	}
	var observers []event.Observer
	if o.logger != nil {
		observers = append(observers, eventlog.New(o.logger))
	}
	if f.metricsAddr != "" || o.push != "" || otlp != nil {
		if f.metricsAddr != "" {
			if _, _, err := net.SplitHostPort(f.metricsAddr); err != nil {
				return nil, usagef("--metrics-addr %q: want HOST:PORT such as 127.0.0.1:9464 (port 0: any free port)", f.metricsAddr)
			}
		}
		if err := o.setupMetrics(cmd.Name(), otlp); err != nil {
			return nil, err
		}
		observers = append(observers, o.metrics)
	}
	if f.metricsAddr != "" {
		if err := o.serveMetrics(f.metricsAddr, cmd.Name(), mount); err != nil {
			_ = o.provider.Shutdown(context.Background())
			return nil, err
		}
		fmt.Fprintf(stderr, "%s: metrics on %s\n", prefix, o.url)
	}
	o.observer = event.Multi(observers...)
	return o, nil
}

// validJob reports whether s may be a job label in a Pushgateway URL path.
func validJob(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// setupMetrics starts the meter provider with the Prometheus exporter on
// a registry of yaoki's metrics, and the OTLP reader if there is one.
func (o *observing) setupMetrics(command string, otlp sdkmetric.Reader) error {
	o.reg = prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(o.reg))
	if err != nil {
		return exit(1, fmt.Sprintf("%s: cannot start the Prometheus exporter: %v", command, err))
	}
	res := resource.NewSchemaless(attribute.String("service.name", "yaoki "+command))
	opts := []sdkmetric.Option{sdkmetric.WithReader(exporter), sdkmetric.WithResource(res)}
	if otlp != nil {
		opts = append(opts, sdkmetric.WithReader(otlp))
	}
	o.provider = sdkmetric.NewMeterProvider(opts...)
	if o.metrics, err = yotel.New(o.provider); err != nil {
		_ = o.provider.Shutdown(context.Background())
		return exit(1, fmt.Sprintf("%s: %v", command, err))
	}
	return nil
}

// serveMetrics serves yaoki's metrics, with the Go runtime and process
// collectors, on addr.
func (o *observing) serveMetrics(addr, command string, mount func(*http.ServeMux)) error {
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exit(1, fmt.Sprintf("%s: cannot serve metrics on %s: %v (is the port taken? use port 0 for a free one)", command, addr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{o.reg, rt}, promhttp.HandlerOpts{}))
	if mount != nil {
		mount(mux)
	}
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	o.url = "http://" + ln.Addr().String() + "/metrics"
	o.served = make(chan struct{})
	go func() {
		defer close(o.served)
		_ = o.srv.Serve(ln)
	}()
	return nil
}

// stop closes the metrics endpoint (after the scrapes in progress), pushes
// the metrics (--metrics-push) and shuts the meter provider down, which
// exports to OTLP a last time. A push that fails is reported on stderr; it
// does not change the command's exit code.
func (o *observing) stop() {
	if o == nil || o.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if o.srv != nil {
		_ = o.srv.Shutdown(ctx)
		<-o.served
	}
	if o.push != "" {
		if err := push.New(o.push, o.job).Gatherer(o.reg).Client(&http.Client{Timeout: 5 * time.Second}).PushContext(ctx); err != nil {
			fmt.Fprintf(o.stderr, "%s: cannot push the metrics to %s (job %s): %v\n", o.prefix, o.push, o.job, err)
		}
	}
	if err := o.provider.Shutdown(ctx); err != nil {
		fmt.Fprintf(o.stderr, "%s: cannot export the metrics: %v\n", o.prefix, err)
	}
}

// track puts the per-host guards of t (each destination's retry budget,
// and breaker if any) on the metrics' gauges.
func (o *observing) track(t *httpretry.Transport) {
	if o != nil && o.metrics != nil {
		o.metrics.TrackTransport(t)
	}
}
