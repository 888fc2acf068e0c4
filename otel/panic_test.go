package otel_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// panicking is a meter provider whose instruments panic on every Add and
// Record: the fault of an SDK or exporter with a bug.
type panicking struct{ noop.MeterProvider }

func (panicking) Meter(string, ...metric.MeterOption) metric.Meter { return panickingMeter{} }

type panickingMeter struct{ noop.Meter }

func (panickingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return panickingCounter{}, nil
}

func (panickingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return panickingHistogram{}, nil
}

type panickingCounter struct{ noop.Int64Counter }

func (panickingCounter) Add(context.Context, int64, ...metric.AddOption) { panic("exporter bug: Add") }

type panickingHistogram struct{ noop.Float64Histogram }

func (panickingHistogram) Record(context.Context, float64, ...metric.RecordOption) {
	panic("exporter bug: Record")
}

// noPanic runs f and fails the test if it panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// TestPanickingMeterProviderLeavesCallsAlone: fault, a meter provider
// whose instruments panic on every measurement. The calls observed by the
// Observer go on as without it: a GET through httpretry to a loopback
// server answering 503 then 200 gets its 200 on the second attempt, and
// retry.Do retries a failure and succeeds. The retry loop lets an
// observer's panic go on (retry's observerpanic_test.go), so the Observer
// must not panic.
func TestPanickingMeterProviderLeavesCallsAlone(t *testing.T) {
	o, err := yotel.New(panicking{})
	if err != nil {
		t.Fatal(err)
	}
	srv := retrytest.NewServer(t, "503,200")
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o}
	client := tr.Client()
	defer client.CloseIdleConnections()
	noPanic(t, "GET through httpretry", func() {
		resp, err := client.Get(srv.URL + "/")
		if err != nil {
			t.Errorf("GET: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET: %d, want 200 on the second attempt", resp.StatusCode)
		}
	})
	if n := len(srv.Attempts()); n != 2 {
		t.Errorf("the server got %d requests, want 2", n)
	}

	calls := 0
	p.Env.Observer = o
	noPanic(t, "retry.Do", func() {
		err := retry.Do(context.Background(), p, func(context.Context) error {
			if calls++; calls == 1 {
				return errors.New("transient")
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Errorf("retry.Do: %v after %d calls, want nil after 2", err, calls)
		}
	})
}

// panickingStore is a dead-letter store whose Count panics.
type panickingStore struct{ deadletter.Store }

func (panickingStore) Count(context.Context, string, time.Time) (deadletter.Counts, error) {
	panic("store bug: Count")
}

// TestPanickingTrackedReads: fault, a tracked breaker's state, a tracked
// budget's level and a dead-letter store's Count that panic when a
// collection reads them. The collection (a scrape) goes on without them
// and shows the rest; the process does not crash (a Count runs on a
// goroutine of its own, where a panic would end the program).
func TestPanickingTrackedReads(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	o := observerOn(t, reader)
	o.TrackBudget("bad", func() float64 { panic("budget bug") })
	o.TrackBudget("good", func() float64 { return 7 })
	o.TrackBreakerFunc("bad", func() string { panic("breaker bug") })
	o.TrackBreakerFunc("good", func() string { return "open" })
	o.TrackDeadLetters("bad", panickingStore{})
	good, _ := deadletter.NewMemory(0)
	o.TrackDeadLetters("good", good)
	var rm metricdata.ResourceMetrics
	var err error
	noPanic(t, "collection", func() { err = reader.Collect(context.Background(), &rm) })
	// The SDK hands the callbacks' errors to its error handler.
	for _, want := range []string{`budget "bad"`, `breaker "bad"`, `queue "bad"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("collection error %v, want one naming the %s that panicked", err, want)
		}
	}
	s := flatten(t, rm)
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=good": 7})
	s.expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=good": 2})
	const q = "yaoki.name=good,yaoki.deadletter.state="
	s.expect(t, yotel.MetricDeadLetters, map[string]float64{q + "waiting": 0, q + "due": 0, q + "held": 0, q + "parked": 0})
}
