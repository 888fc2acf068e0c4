package telemetry

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// otlpReader returns a reader that exports yaoki's metrics over OTLP/HTTP
// when OpenTelemetry's standard variables ask for it
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT; the
// exporter reads them, and OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, ...
// itself), nil otherwise. It exports when the meter provider shuts down,
// at the command's exit, and every minute before. OTEL_METRICS_EXPORTER=none
// turns it off; a protocol other than http/protobuf is refused.
func otlpReader(ctx context.Context) (sdkmetric.Reader, error) {
	if !otlpAsked() {
		return nil, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			if v != "http/protobuf" {
				return nil, cli.Usagef("%s=%s: yaoki exports OTLP over HTTP only: want http/protobuf (or leave it unset)", name, v)
			}
			break
		}
	}
	exp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, cli.Usagef("OTEL_EXPORTER_OTLP_*: cannot set up the OTLP exporter: %v", err)
	}
	return sdkmetric.NewPeriodicReader(exp), nil
}

// otlpAsked reports whether the environment asks for OTLP metrics.
func otlpAsked() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// otlpTimeout returns the time OpenTelemetry's environment gives one
// export (OTEL_EXPORTER_OTLP_METRICS_TIMEOUT, else OTEL_EXPORTER_OTLP_TIMEOUT,
// in milliseconds), and false when neither is set to a positive number.
// The exporter retries a failed export until its context ends, so Stop
// bounds the last export by it: a collector that does not answer delays
// the exit by no more than was asked.
func otlpTimeout() (time.Duration, bool) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return 0, false // the exporter's default, as it reads it
			}
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	return 0, false
}
