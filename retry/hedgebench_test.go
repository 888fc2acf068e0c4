package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// What HedgeValue costs when its first attempt succeeds at once: a hedged
// call (a goroutine, a timer, a context), one that may not be hedged
// (under SingleAttempt), and one without a Hedger; the last two run as
// DoValue runs them, without allocating.
func BenchmarkHedgeValueSuccess(b *testing.B) {
	h := fixedHedger(b, time.Second, 2)
	p := retry.Policy{Env: &retry.Env{Hedger: h}}
	op := func(context.Context) (int, error) { return 1, nil }
	for _, c := range []struct {
		name string
		ctx  context.Context
		p    retry.Policy
	}{
		{"hedged", context.Background(), p},
		{"single-attempt", retry.SingleAttempt(context.Background()), p},
		{"no-hedger", context.Background(), retry.Policy{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := retry.HedgeValue(c.ctx, c.p, op, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
