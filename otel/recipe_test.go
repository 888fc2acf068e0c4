package otel_test

import (
	"log"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/event/eventlog"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
)

// The README's ten-line recipe, kept here so that it compiles: metrics on
// /metrics through the OpenTelemetry Prometheus exporter, and logs through
// log/slog, for every call made with the policy. (Not run: it would listen
// on a port and register with Prometheus's default registry.)
func Example_prometheus() {
	exporter, _ := prometheus.New() // go.opentelemetry.io/otel/exporters/prometheus
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	obs, err := yotel.New(provider) // yotel "github.com/yaoki-go/yaoki/otel"
	if err != nil {
		log.Fatal(err)
	}
	logs := eventlog.New(slog.Default()) // github.com/yaoki-go/yaoki/event/eventlog
	policy := retry.Policy{Env: &retry.Env{Observer: event.Multi(obs, logs)}}
	http.Handle("/metrics", promhttp.Handler()) // github.com/prometheus/client_golang/prometheus/promhttp
	go http.ListenAndServe("127.0.0.1:9464", nil)

	_ = policy
}
