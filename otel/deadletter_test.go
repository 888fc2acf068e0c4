package otel_test

import (
	"context"
	"testing"
	"time"

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
	const q = "retry.name=payments,retry.deadletter.state="
	collect().expect(t, yotel.MetricDeadLetters, map[string]float64{q + "waiting": 1, q + "due": 2, q + "held": 1, q + "parked": 1})
	untrack()
	if got := collect().values(yotel.MetricDeadLetters); len(got) != 0 {
		t.Fatalf("after untrack: %v, want no points", got)
	}
}
