package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// TestThrottleWaitsAndRefusals: a throttle.Cubic told the dependency is
// overloaded makes calls wait for its tokens (0.5/s). What it did is in
// the metrics: a call it held back 2 s is a wait of source rate_limit in
// yaoki.retry.wait, and no retry; a call whose deadline that wait would
// pass is a rejection (reason deadline) beside its give-up. Before, both
// left nothing but an attempt that started late and a deadline give-up.
func TestThrottleWaitsAndRefusals(t *testing.T) {
	o, collect := newObserver(t)
	th, err := throttle.NewCubic(throttle.CubicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	th.RecordAt(time.Now(), true) // 0.5 tokens/s, none left: the next call waits 2 s
	p := retry.Policy{Env: &retry.Env{Throttle: th, Observer: o, Sleep: func(context.Context, time.Duration) error { return nil }}}
	if err := retry.Do(context.Background(), p, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = retry.Do(ctx, p, func(context.Context) error { return nil })
	if !errors.Is(err, retry.ErrDeadline) {
		t.Fatalf("call with 1s left: %v, want a deadline give-up", err)
	}
	s := collect()
	if w := s[yotel.MetricRetryWait]["retry.component=retry,retry.wait.source=rate_limit"]; w.Count != 1 || w.Sum < 1.9 || w.Sum > 2 {
		t.Errorf("rate-limit waits: count %d sum %vs, want one of about 2s", w.Count, w.Sum)
	}
	if r := s[yotel.MetricRetries]; len(r) != 0 {
		t.Errorf("retries %v, want none: the throttle's wait retries nothing", r)
	}
	s.expect(t, yotel.MetricRejections, map[string]float64{"retry.component=retry,retry.reason=deadline": 1})
	if g := s[yotel.MetricGiveUps]; len(g) != 1 {
		t.Errorf("give-ups %v, want the one deadline", g)
	}
}
