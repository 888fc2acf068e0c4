package otel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/internal/metrictest"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// point is one data point: a counter's or gauge's value, or a histogram's
// count, sum and bucket counts.
type point struct {
	Value   float64
	Count   uint64
	Sum     float64
	Buckets []uint64
}

// snapshot maps a metric name to its points, keyed by their attributes
// written as sorted "k=v" pairs joined by commas.
type snapshot map[string]map[string]point

// observerOn returns an Observer on an SDK MeterProvider read by reader
// (a manual reader, the Prometheus exporter), shut down when the test ends.
func observerOn(t testing.TB, reader sdkmetric.Reader, opts ...sdkmetric.Option) *yotel.Observer {
	t.Helper()
	provider := sdkmetric.NewMeterProvider(append(opts, sdkmetric.WithReader(reader))...)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	o, err := yotel.New(provider)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// promObserver returns an Observer whose metrics the OpenTelemetry
// Prometheus exporter writes to reg.
func promObserver(t testing.TB, reg *prometheus.Registry) *yotel.Observer {
	t.Helper()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	return observerOn(t, exporter)
}

// newObserver returns an Observer on an SDK MeterProvider read by a manual
// reader, and a function that collects what was recorded so far.
func newObserver(t testing.TB, opts ...sdkmetric.Option) (*yotel.Observer, func() snapshot) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	o := observerOn(t, reader, opts...)
	return o, func() snapshot {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		return flatten(t, rm)
	}
}

func flatten(t testing.TB, rm metricdata.ResourceMetrics) snapshot {
	s := snapshot{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != yotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, yotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			points := map[string]point{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, p := range d.DataPoints {
					points[attrs(p.Attributes)] = point{Value: float64(p.Value)}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					points[attrs(p.Attributes)] = point{Value: float64(p.Value)}
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					points[attrs(p.Attributes)] = point{Value: p.Value}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[attrs(p.Attributes)] = point{Count: p.Count, Sum: p.Sum, Buckets: p.BucketCounts}
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			if len(points) > 0 {
				s[m.Name] = points
			}
		}
	}
	return s
}

func attrs(set attribute.Set) string {
	var kv []string
	for _, a := range set.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	return metrictest.Key(kv)
}

// values returns the metric's values by attributes (a histogram's counts).
func (s snapshot) values(name string) map[string]float64 {
	out := map[string]float64{}
	for k, p := range s[name] {
		if p.Count > 0 {
			out[k] = float64(p.Count)
		} else {
			out[k] = p.Value
		}
	}
	return out
}

// expect checks that metric name has exactly the points want.
func (s snapshot) expect(t *testing.T, name string, want map[string]float64) {
	t.Helper()
	metrictest.Expect(t, name, s.values(name), want)
}

// sorted returns the comma-separated attributes k in the order a snapshot
// keys them.
func sorted(k string) string { return metrictest.Key(strings.Split(k, ",")) }
