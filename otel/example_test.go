package otel_test

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// Record a policy's attempts, retries and give-ups. The application brings
// the SDK and its reader or exporter (here a manual reader, to print what
// was recorded; in production the Prometheus exporter or OTLP).
func Example() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	obs, err := yotel.New(provider)
	if err != nil {
		panic(err)
	}
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: obs}})
	unavailable := errors.New("partner unavailable")
	_ = retry.Do(context.Background(), p, retrytest.Script(unavailable, unavailable, unavailable).Func())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range sum.DataPoints {
				fmt.Printf("%s{%s} %d\n", m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value)
			}
		}
	}
	// Output:
	// yaoki.attempts{error.type=_OTHER,yaoki.component=retry,yaoki.outcome=failure} 3
	// yaoki.retries{error.type=_OTHER,yaoki.component=retry,yaoki.wait.source=backoff} 2
	// yaoki.give_ups{error.type=_OTHER,yaoki.component=retry,yaoki.reason=attempts_exhausted} 1
}
