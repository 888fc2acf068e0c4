package peersbench

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// yaoki: the toolkit this harness was copied into. The retrier is built
// once with retry.New (validated policy, shareable, like every other peer's
// executor); the backoff is the pure backoff.Schedule with a math/rand/v2
// draw per call.

func addYaoki(r *registry) {
	r.lib(Lib{Name: "yaoki", Module: "github.com/yaoki-go/yaoki"})

	r.retrier(Retrier{
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

	// "yaoki-do" is the package function with the policy passed by value on
	// every call (retry.Do(ctx, policy, fn)), the form of yaoki's quick
	// start; "yaoki" is the prepared Retrier its documentation recommends
	// for hot paths.
	r.retrier(Retrier{
		Lib: "yaoki-do",
		New: func(p RetryPolicy, op func() error) func() error {
			pol := retry.Policy{
				MaxAttempts: p.MaxAttempts,
				Backoff:     backoff.Schedule{Base: p.BaseDelay, Cap: p.MaxDelay},
			}
			if err := pol.Validate(); err != nil {
				panic(err)
			}
			ctx := context.Background()
			fn := func(context.Context) error { return op() }
			return func() error { return retry.Do(ctx, pol, fn) }
		},
	})

	r.backoff(Backoff{
		Lib: "yaoki",
		New: func(base, max time.Duration, attempt int) func() time.Duration {
			s := backoff.Schedule{Base: base, Cap: max} // exponential ×2, full jitter
			return func() time.Duration { return s.Delay(attempt, 0, rand.Float64()) }
		},
	})

	// The HTTP client is httpretry.Transport over the shared transport, with
	// library defaults apart from the attempts, the delays and the retry
	// budget. Zero delays (the benchmarks) are a full-jitter schedule whose
	// draws are all 0. The default per-host budget (retries ≤ 20 % of
	// successful requests + 10/s) is off: HTTPRetry503 retries every request, which a
	// budget refuses by design after its share, and no peer has one.
	r.httpClient(HTTPClient{
		Lib: "yaoki",
		New: func(rt http.RoundTripper, p HTTPPolicy) func(*http.Request) (*http.Response, error) {
			pol := retry.Policy{MaxAttempts: p.MaxAttempts}
			if p.MinDelay == 0 && p.MaxDelay == 0 {
				pol.Env = &retry.Env{Rand: func() float64 { return 0 }}
			} else {
				pol.Backoff = backoff.Schedule{Base: p.MinDelay, Cap: p.MaxDelay}
				pol.ThrottleBase = p.MinDelay
			}
			tr := &httpretry.Transport{Base: rt, Policy: pol, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
			c := &http.Client{Transport: tr}
			return c.Do
		},
	})

	// The breaker trips on consecutive failures only (the ratio trip is
	// disabled), like every other peer here. "yaoki" is the closure form
	// (Execute); "yaoki-permit" the two-step form (Allow, then Done), the
	// one a RoundTripper uses.
	newBreaker := func(p BreakerPolicy) *breaker.Breaker {
		b, err := breaker.New(breaker.Config{
			Name:                "bench",
			FailureRatio:        -1,
			ConsecutiveFailures: p.FailureThreshold,
			OpenTimeout:         p.OpenTimeout,
		})
		if err != nil {
			panic(err)
		}
		return b
	}
	forceOpen := func(b *breaker.Breaker, p BreakerPolicy) func() {
		return func() {
			ctx := context.Background()
			fail := func(context.Context) error { return ErrTransient }
			for i := 0; i < p.FailureThreshold; i++ {
				_ = b.Execute(ctx, fail)
			}
		}
	}
	r.breaker(Breaker{
		Lib: "yaoki",
		New: func(p BreakerPolicy, op func() error) (func() error, func()) {
			b := newBreaker(p)
			ctx := context.Background()
			fn := func(context.Context) error { return op() }
			return func() error { return b.Execute(ctx, fn) }, forceOpen(b, p)
		},
	})
	r.breaker(Breaker{
		Lib: "yaoki-permit",
		New: func(p BreakerPolicy, op func() error) (func() error, func()) {
			b := newBreaker(p)
			call := func() error {
				permit, err := b.Allow()
				if err != nil {
					return err
				}
				err = op()
				permit.Done(err)
				return err
			}
			return call, forceOpen(b, p)
		},
	})
}
