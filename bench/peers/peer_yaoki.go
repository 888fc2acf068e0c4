package peersbench

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

// yaoki: the toolkit this harness was copied into. The retrier is built
// once with retry.New (validated policy, shareable, like every other peer's
// executor); the backoff is the pure backoff.Schedule with a math/rand/v2
// draw per call.

func init() {
	RegisterLib(Lib{Name: "yaoki", Module: "github.com/yaoki-go/yaoki"})

	RegisterRetrier(Retrier{
		Lib: "yaoki",
		New: func(p RetryPolicy, op func() error) func() error {
			r, err := retry.New(retry.Policy{
				MaxAttempts: p.MaxAttempts,
				Backoff:     backoff.Schedule{Base: p.BaseDelay, Cap: p.MaxDelay},
			})
			if err != nil {
				panic(err)
			}
			ctx := context.Background()
			fn := func(context.Context) error { return op() }
			return func() error { return r.Do(ctx, fn) }
		},
	})

	RegisterBackoff(Backoff{
		Lib: "yaoki",
		New: func(base, max time.Duration, attempt int) func() time.Duration {
			s := backoff.Schedule{Base: base, Cap: max} // exponential ×2, full jitter
			return func() time.Duration { return s.Delay(attempt, 0, rand.Float64()) }
		},
	})
}
