package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	yotel "github.com/yaoki-go/yaoki/otel"
)

// Hedges sent and won have their own counters; refused ones are local
// rejections, by reason.
func TestHedgeCounters(t *testing.T) {
	ctx := context.Background()
	o, collect := newObserver(t)
	for _, e := range []event.Event{
		{Kind: event.Hedge, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 2, Wait: 50 * time.Millisecond},
		{Kind: event.Hedge, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 3, Wait: 100 * time.Millisecond},
		{Kind: event.HedgeWon, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 3, Duration: 120 * time.Millisecond},
		{Kind: event.HedgeRefused, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 2, Reason: "hedge_brownout"},
	} {
		o.Observe(ctx, e)
	}
	const k = "http.request.method=GET,retry.component=httpretry,server.address=api.example.com"
	collect().expect(t, yotel.MetricHedges, map[string]float64{k: 2})
	collect().expect(t, yotel.MetricHedgesWon, map[string]float64{k: 1})
	collect().expect(t, yotel.MetricRejections, map[string]float64{k + ",retry.reason=hedge_brownout": 1})
}
