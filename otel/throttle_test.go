package otel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
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
	if w := s[yotel.MetricRetryWait]["yaoki.component=retry,yaoki.wait.source=rate_limit"]; w.Count != 1 || w.Sum < 1.9 || w.Sum > 2 {
		t.Errorf("rate-limit waits: count %d sum %vs, want one of about 2s", w.Count, w.Sum)
	}
	if r := s[yotel.MetricRetries]; len(r) != 0 {
		t.Errorf("retries %v, want none: the throttle's wait retries nothing", r)
	}
	s.expect(t, yotel.MetricRejections, map[string]float64{"yaoki.component=retry,yaoki.reason=deadline": 1})
	if g := s[yotel.MetricGiveUps]; len(g) != 1 {
		t.Errorf("give-ups %v, want the one deadline", g)
	}
}

// TestBulkheadWaitTellsItself: a call that waited 3 s for the one slot of
// a full bulkhead shows in yaoki.retry.wait as a bulkhead's wait
// (yaoki.reason bulkhead beside yaoki.wait.source rate_limit), apart from
// a throttle's waits, so that an operator sees which knob holds calls
// back. Virtual time (synctest): the call holding the slot ends 3 s after
// the other began to wait.
func TestBulkheadWaitTellsItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, collect := newObserver(t)
		bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1, MaxWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Observer: o}}
		ctx := context.Background()
		release := make(chan struct{})
		done := make(chan error)
		go func() { done <- retry.Do(ctx, p, func(context.Context) error { <-release; return nil }) }()
		synctest.Wait() // it holds the slot
		go func() {
			time.Sleep(3 * time.Second) // virtual: the synctest bubble's clock
			close(release)
		}()
		if err := retry.Do(ctx, p, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		w := collect()[yotel.MetricRetryWait]
		if b := w["yaoki.component=retry,yaoki.reason=bulkhead,yaoki.wait.source=rate_limit"]; b.Count != 1 || b.Sum != 3 {
			t.Errorf("waits %v, want one bulkhead wait of 3 s (yaoki.reason=bulkhead)", w)
		}
	})
}
