package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestBreakerAndBudget wires a real breaker and a real token-bucket budget
// of the toolkit: the breaker reports its transitions and refusals to the
// Observer, the gauges read the breaker's state and the budget's level.
func TestBreakerAndBudget(t *testing.T) {
	o, collect := newObserver(t)
	inventory, err := breaker.New(breaker.Config{Name: "inventory", ConsecutiveFailures: 2,
		OpenTimeout: time.Minute, OpenJitter: breaker.Disabled, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	// search trips an hour ago: its open period is over, so it is
	// half-open for whoever asks, though no call has moved it yet.
	search, err := breaker.New(breaker.Config{Name: "search", ConsecutiveFailures: 1,
		OpenTimeout: time.Minute, OpenJitter: breaker.Disabled, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	quota, err := budget.NewBucket(budget.BucketConfig{}) // 500 tokens, 14 a retry
	if err != nil {
		t.Fatal(err)
	}
	o.TrackBudget("inventory", quota.Level)
	o.TrackBreaker(inventory)

	down := errors.New("connection refused")
	p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: 4, Env: &retry.Env{Breaker: inventory, Budget: quota, Observer: o}})
	// Attempts 1 and 2 fail and trip the breaker; attempt 3 is refused.
	err = retry.Do(context.Background(), p, retrytest.Script(down, down, down, down).Func())
	if !errors.Is(err, retry.ErrBreakerOpen) {
		t.Fatalf("Do = %v, want breaker open", err)
	}
	ago := time.Now().Add(-time.Hour)
	tk, _ := search.AllowAt(ago, false)
	search.DoneAt(ago, tk, time.Millisecond, down)

	s := collect()
	// inventory is read (open); search is learned from its one transition
	// (open), since nobody tracks it.
	s.expect(t, yotel.MetricBreakerState, map[string]float64{"retry.name=inventory": 2, "retry.name=search": 2})
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"retry.component=breaker,retry.name=inventory,retry.state.from=closed,retry.state.to=open": 1,
		"retry.component=breaker,retry.name=search,retry.state.from=closed,retry.state.to=open":    1,
	})
	// The refusal, reported by the breaker and by the loop that asked it.
	s.expect(t, yotel.MetricRejections, map[string]float64{
		"retry.component=breaker,retry.name=inventory,retry.reason=breaker_open": 1,
		"retry.component=retry,retry.reason=breaker_open":                        1,
	})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		"error.type=_OTHER,retry.component=retry,retry.reason=breaker_open": 1,
	})
	// Two retries granted (14 tokens each) and no success: 472 left.
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{"retry.name=inventory": 472})

	// Tracked, search shows half-open: its State says so before any call.
	o.TrackBreaker(search)
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"retry.name=inventory": 2, "retry.name=search": 1})
}
