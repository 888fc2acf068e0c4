package otel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/yaoki-go/yaoki/deadletter"
	yotel "github.com/yaoki-go/yaoki/otel"
)

func TestDeadLetterGauge(t *testing.T) {
	ctx := context.Background()
	o, collect := newObserver(t)
	s, _ := deadletter.NewMemory(0)
	now := time.Now()
	put := func(id string, due time.Time, parked bool) {
		t.Helper()
		if err := s.Put(ctx, deadletter.Letter{ID: id, Queue: "payments", Created: now, Due: due, Parked: parked}); err != nil {
			t.Fatal(err)
		}
	}
	put("held", now.Add(-time.Hour), false)
	if got, err := s.Claim(ctx, "payments", now, 1, time.Hour); err != nil || len(got) != 1 {
		t.Fatalf("Claim: %v %v", got, err)
	}
	put("waiting", now.Add(time.Hour), false)
	put("due1", now.Add(-time.Minute), false)
	put("due2", now.Add(-time.Minute), false)
	put("parked", now, true)

	untrack := o.TrackDeadLetters("payments", s)
	const q = "yaoki.name=payments,yaoki.deadletter.state="
	collect().expect(t, yotel.MetricDeadLetters, map[string]float64{q + "waiting": 1, q + "due": 2, q + "held": 1, q + "parked": 1})
	untrack()
	if got := collect().values(yotel.MetricDeadLetters); len(got) != 0 {
		t.Fatalf("after untrack: %v, want no points", got)
	}
}

// unanswered is a dead-letter store whose server does not answer counts
// (a lost reply): Count waits until its context ends.
type unanswered struct{ deadletter.Store }

func (unanswered) Count(ctx context.Context, _ string, _ time.Time) (deadletter.Counts, error) {
	<-ctx.Done()
	return deadletter.Counts{}, ctx.Err()
}

// TestDeadLetterGaugeStoresNotAnswering: fault, lost replies: three
// tracked queues whose store does not answer hold a collection (a scrape)
// for CountTimeout in all, not CountTimeout each, so that a scrape during
// a database outage ends before Prometheus' own timeout (10 s by default)
// and still shows every other metric and the queue whose store answers.
func TestDeadLetterGaugeStoresNotAnswering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reader := sdkmetric.NewManualReader()
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer provider.Shutdown(ctx)
		o, err := yotel.New(provider)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := deadletter.NewMemory(0)
		if err := s.Put(ctx, deadletter.Letter{ID: "1", Queue: "ok", Created: time.Now(), Parked: true}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"a", "b", "c"} {
			o.TrackDeadLetters(q, unanswered{s})
		}
		o.TrackDeadLetters("ok", s)
		start := time.Now()
		var rm metricdata.ResourceMetrics
		err = reader.Collect(ctx, &rm)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Collect: %v, want the stores' context.DeadlineExceeded", err)
		}
		got := flatten(t, rm).values(yotel.MetricDeadLetters)
		if took := time.Since(start); took > yotel.CountTimeout {
			t.Errorf("the collection took %v, want at most CountTimeout (%v)", took, yotel.CountTimeout)
		}
		if got["yaoki.deadletter.state=parked,yaoki.name=ok"] != 1 || len(got) != 4 {
			t.Errorf("letters = %v, want the 4 states of queue ok only", got)
		}
	})
}
