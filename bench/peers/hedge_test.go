package peersbench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// Scenario: hedging on but not triggered. An op that succeeds at once,
// under a hedge policy whose delay (1 s) never passes: what every call
// pays for being able to hedge (a goroutine for the attempt, a timer, a
// context). yaoki's policy also asks its Hedger (PlanAt, ObserveAt) and
// keeps the retry loop's attempt limit and guards; failsafe-go's is its
// hedge policy alone (hedgepolicy.NewWithDelay).
func BenchmarkHedgeSuccessPath(b *testing.B) {
	ctx := context.Background()
	h, err := hedge.New(hedge.Config{Delay: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	p := retry.Policy{Env: &retry.Env{Hedger: h}}
	yaoki := func() error {
		return retry.Hedge(ctx, p, func(context.Context) error { return noop() })
	}
	fs := failsafe.With[any](hedgepolicy.NewWithDelay[any](time.Second))
	failsafeCall := func() error { return fs.Run(noop) }
	for _, c := range []struct {
		lib  string
		call func() error
	}{{"baseline", noop}, {"yaoki", yaoki}, {"failsafe", failsafeCall}} {
		b.Run("lib="+c.lib, func(b *testing.B) {
			if err := c.call(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
