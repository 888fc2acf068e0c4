package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/event"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// TestBucketsFitWaitsAndDurations: the histograms' buckets resolve waits
// and attempt durations from a millisecond (a jittered wait drawn near 0,
// an attempt on loopback) to ten minutes (a batch job's attempt, a
// throttle's or a server's long wait): the first bound is at most 1 ms,
// the last at least 600 s, and no bucket in between spans more than a
// factor of 3, so that a quantile read from them is off by less than that.
func TestBucketsFitWaitsAndDurations(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	o := observerOn(t, reader)
	ctx := context.Background()
	o.Observe(ctx, event.Event{Kind: event.RetryScheduled, Component: "retry", Source: event.Backoff, Wait: time.Millisecond})
	o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Component: "retry", Outcome: event.Success, Duration: time.Millisecond})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			seen++
			b := h.DataPoints[0].Bounds
			if len(b) == 0 || b[0] > 0.001 || b[len(b)-1] < 600 {
				t.Errorf("%s: bounds %v, want from 1 ms or less to 600 s or more", m.Name, b)
				continue
			}
			for i := 1; i < len(b); i++ {
				if b[i] > 3*b[i-1] {
					t.Errorf("%s: bucket (%v, %v] spans more than a factor of 3 (bounds %v)", m.Name, b[i-1], b[i], b)
				}
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d histograms collected, want %s and %s", seen, yotel.MetricRetryWait, yotel.MetricAttemptDuration)
	}
}
