package telemetry

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

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/event/eventlog"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// Flags are --metrics-addr and --log-format, shared by http, exec
// and flaky: what the toolkit reports while the command runs, as
// Prometheus metrics (module yaoki/otel through the OpenTelemetry
// Prometheus exporter) and as structured logs (package eventlog).
type Flags struct {
	MetricsAddr string
	metricsPush string
	metricsJob  string
	LogFormat   string
}

// FlagsHelp is appended to the long help of each command that takes
// the flags.
const FlagsHelp = `
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

// Register registers the flags on fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://ADDR/metrics while running, e.g. 127.0.0.1:9464 (port 0: any free port)")
	fs.StringVar(&f.metricsPush, "metrics-push", "", "at exit, push the metrics to this Prometheus Pushgateway, e.g. http://127.0.0.1:9091")
	fs.StringVar(&f.metricsJob, "metrics-job", "", "the job label of --metrics-push (default yaoki_COMMAND, e.g. yaoki_http)")
	fs.StringVar(&f.LogFormat, "log-format", "", "log retries, give-ups and breaker changes on stderr as structured records: text or json")
}

// Running is what start set up; its zero parts are what was not asked
// for. Its methods are safe on a nil *Running.
type Running struct {
	Observer event.Observer // nil when no flag asked for anything
	Logger   *slog.Logger   // nil without --log-format
	Metrics  *yotel.Observer
	URL      string // the metrics URL, "" without --metrics-addr

	provider *sdkmetric.MeterProvider
	reg      *prometheus.Registry // yaoki's metrics, what --metrics-push sends
	srv      *http.Server
	served   chan struct{}
	push     string // --metrics-push URL, "" for none
	otlp     bool   // metrics are exported over OTLP
	job      string
	stderr   io.Writer
	prefix   string
}

// Start sets up what the flags ask for: a logger on stderr, metrics (for
// --metrics-addr, --metrics-push or the OTLP exporter's environment), and
// a metrics endpoint whose URL it announces on stderr as "PREFIX: metrics
// on URL". The caller must call stop, which pushes the metrics.
func (f *Flags) Start(cmd *cobra.Command, prefix string) (*Running, error) {
	return f.StartWith(cmd, prefix, nil)
}

// StartWith is Start with more handlers on the metrics endpoint's server:
// mount, if not nil, adds them to its mux (yaoki proxy's /healthz and
// /readyz).
func (f *Flags) StartWith(cmd *cobra.Command, prefix string, mount func(*http.ServeMux)) (*Running, error) {
	o := &Running{stderr: cmd.ErrOrStderr(), prefix: prefix}
	stderr := cmd.ErrOrStderr()
	switch f.LogFormat {
	case "":
	case "text":
		o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case "json":
		o.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default:
		return nil, cli.Usagef("--log-format %q: want text or json", f.LogFormat)
	}
	if f.metricsPush != "" {
		u, err := url.Parse(f.metricsPush)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, cli.Usagef("--metrics-push %q: want the URL of a Prometheus Pushgateway, such as http://127.0.0.1:9091", f.metricsPush)
		}
		o.push = f.metricsPush
	}
	o.job = f.metricsJob
	if o.job == "" {
		o.job = "yaoki_" + strings.ReplaceAll(cmd.Name(), "-", "_")
	} else if !validJob(o.job) {
		return nil, cli.Usagef("--metrics-job %q: want a label value of letters, digits and _ such as yaoki_nightly", f.metricsJob)
	}
	if cmd.Flags().Changed("metrics-job") && o.push == "" {
		return nil, cli.Usagef("--metrics-job names the job of --metrics-push: give --metrics-push URL too")
	}
	otlp, err := otlpReader(cmd.Context())
	if err != nil {
		return nil, err
	}
	var observers []event.Observer
	if o.Logger != nil {
		observers = append(observers, eventlog.New(o.Logger))
	}
	if f.MetricsAddr != "" || o.push != "" || otlp != nil {
		if f.MetricsAddr != "" {
			if _, _, err := net.SplitHostPort(f.MetricsAddr); err != nil {
				return nil, cli.Usagef("--%s %q: want HOST:PORT such as 127.0.0.1:9464 (port 0: any free port)", addrFlag(cmd), f.MetricsAddr)
			}
		}
		if err := o.setupMetrics(cmd.Name(), otlp); err != nil {
			return nil, err
		}
		observers = append(observers, o.Metrics)
	}
	if f.MetricsAddr != "" {
		if err := o.serveMetrics(f.MetricsAddr, cmd.Name(), mount); err != nil {
			_ = o.provider.Shutdown(context.Background())
			return nil, err
		}
		fmt.Fprintf(stderr, "%s: metrics on %s\n", prefix, o.URL)
	}
	o.Observer = event.Multi(observers...)
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
func (o *Running) setupMetrics(command string, otlp sdkmetric.Reader) error {
	o.reg = prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(o.reg))
	if err != nil {
		return cli.Exit(1, fmt.Sprintf("%s: cannot start the Prometheus exporter: %v", command, err))
	}
	res := resource.NewSchemaless(attribute.String("service.name", "yaoki "+command))
	opts := []sdkmetric.Option{sdkmetric.WithReader(exporter), sdkmetric.WithResource(res)}
	if otlp != nil {
		opts = append(opts, sdkmetric.WithReader(otlp))
	}
	o.provider = sdkmetric.NewMeterProvider(opts...)
	o.otlp = otlp != nil
	if o.Metrics, err = yotel.New(o.provider); err != nil {
		_ = o.provider.Shutdown(context.Background())
		return cli.Exit(1, fmt.Sprintf("%s: %v", command, err))
	}
	return nil
}

// serveMetrics serves yaoki's metrics, with the Go runtime and process
// collectors, on addr.
func (o *Running) serveMetrics(addr, command string, mount func(*http.ServeMux)) error {
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cli.Exit(1, fmt.Sprintf("%s: cannot serve metrics on %s: %v (is the port taken? use port 0 for a free one)", command, addr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{o.reg, rt}, promhttp.HandlerOpts{}))
	if mount != nil {
		mount(mux)
	}
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	o.URL = "http://" + ln.Addr().String() + "/metrics"
	o.served = make(chan struct{})
	go func() {
		defer close(o.served)
		_ = o.srv.Serve(ln)
	}()
	return nil
}

// Stop closes the metrics endpoint (after the scrapes in progress), pushes
// the metrics (--metrics-push) and shuts the meter provider down, which
// exports to OTLP a last time, all within 5 s, the last export within
// OTEL_EXPORTER_OTLP_TIMEOUT when it is shorter. A push or an export that
// fails is reported on stderr; it does not change the command's exit code.
func (o *Running) Stop() {
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
	if d, ok := otlpTimeout(); ok && o.otlp {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d) // within the 5 s
		defer cancel()
	}
	if err := o.provider.Shutdown(ctx); err != nil {
		fmt.Fprintf(o.stderr, "%s: cannot export the metrics: %v\n", o.prefix, err)
	}
}

// Track puts the per-host guards of t (each destination's retry budget,
// and breaker if any) on the metrics' gauges.
func (o *Running) Track(t *httpretry.Transport) {
	if o != nil && o.Metrics != nil {
		o.Metrics.TrackTransport(t)
	}
}

// addrFlag is the name of the flag that holds Flags.MetricsAddr on cmd:
// --metrics-addr, or --admin-addr where yaoki proxy registers it under
// that name.
func addrFlag(cmd *cobra.Command) string {
	if cmd.Flags().Lookup("metrics-addr") == nil && cmd.Flags().Lookup("admin-addr") != nil {
		return "admin-addr"
	}
	return "metrics-addr"
}
