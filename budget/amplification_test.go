package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

// The guard types implement retry's interfaces without importing retry.
var (
	_ retry.Budget = (*budget.Share)(nil)
	_ retry.Budget = (*budget.Bucket)(nil)
	_ retry.Budget = (*budget.GRPC)(nil)
)

// storm runs clients callers, each starting perSecond logical requests per
// second for d, against a dependency that fails every attempt, through
// retry loops with the default policy (3 attempts, full-jitter backoff) and
// the budget b made by mk (nil: no budget), shared by all callers as a
// client process shares its per-host budget. It runs on synctest's virtual
// clock and returns attempts per first try.
func storm(t *testing.T, clients, perSecond int, d time.Duration, mk func() retry.Budget) (ratio float64, firsts, attempts int64) {
	synctest.Test(t, func(t *testing.T) {
		var b retry.Budget
		if mk != nil {
			b = mk()
		}
		src := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		p := retry.Policy{Env: &retry.Env{Budget: b, Rand: func() float64 { mu.Lock(); defer mu.Unlock(); return src.Float64() }}}
		var nFirst, nAttempts atomic.Int64
		fail := errors.New("503 service unavailable")
		var wg sync.WaitGroup
		interval := time.Second / time.Duration(perSecond)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Spread the clients over one interval, as independent
				// clients would be.
				time.Sleep(time.Duration(c) * interval / time.Duration(clients))
				var calls sync.WaitGroup
				for start := time.Now(); time.Since(start) < d; time.Sleep(interval) {
					calls.Add(1)
					nFirst.Add(1)
					go func() {
						defer calls.Done()
						_ = retry.Do(context.Background(), p, func(context.Context) error {
							nAttempts.Add(1)
							return fail
						})
					}()
				}
				calls.Wait()
			}()
		}
		wg.Wait()
		firsts, attempts = nFirst.Load(), nAttempts.Load()
		ratio = float64(attempts) / float64(firsts)
	})
	return ratio, firsts, attempts
}

// TestStorm measures the load a failing dependency receives from 100
// clients sending 10 requests/s each for 5 s (virtual time), in attempts
// per first try: the figures quoted in docs/overload.md.
func TestStorm(t *testing.T) {
	share := func(c budget.ShareConfig) func() retry.Budget {
		return func() retry.Budget { b, _ := budget.NewShare(c); return b }
	}
	cases := []struct {
		name string
		mk   func() retry.Budget
		max  float64
	}{
		{"no budget", nil, 3.0},
		// The figure: ≤ 1.10 with the default budget. Nothing
		// succeeds, so the share earns nothing and grants the floor alone
		// (10/s over the 10 s window: 100 retries in this 5 s test): the
		// ceiling is 1 + floor/first tries = 1 + 100/5000 = 1.02.
		{"share default (20%, 10s, 10/s)", share(budget.ShareConfig{}), 1.10},
		// Without a floor nothing is retried at all: ceiling 1.
		{"share 10% no floor", share(budget.ShareConfig{Ratio: 0.1, MinPerSecond: budget.NoFloor}), 1.0},
		{"bucket default (AWS 500/14)", func() retry.Budget { b, _ := budget.NewBucket(budget.BucketConfig{}); return b }, 1 + 36.0/5000},
		{"grpc default (10, 0.1)", func() retry.Budget { b, _ := budget.NewGRPC(budget.GRPCConfig{}); return b }, 1.01},
		// The recommended bucket starts at 8: the first failures take it to
		// 5 after two retries, and nothing succeeds to earn more.
		{"grpc recommended (10, 0.2, start 8)", func() retry.Budget { b, _ := budget.NewGRPC(budget.Recommended()); return b }, 1 + 2.0/5000},
	}
	for _, c := range cases {
		ratio, firsts, attempts := storm(t, 100, 10, 5*time.Second, c.mk)
		t.Logf("%-32s %5d first tries, %5d attempts: %.3f attempts per first try", c.name, firsts, attempts, ratio)
		if firsts != 5000 {
			t.Errorf("%s: %d first tries, want 5000", c.name, firsts)
		}
		if ratio > c.max+1e-9 {
			t.Errorf("%s: %.3f attempts per first try, want ≤ %.3f", c.name, ratio, c.max)
		}
		if c.mk == nil && ratio != 3.0 {
			t.Errorf("no budget: %.3f attempts per first try, want exactly 3", ratio)
		}
	}
}

// TestStormPerClientBudgets shows what the floor costs when it is per
// client: 100 clients with a budget each and 10 requests/s each retry
// everything against a dependency that answers nothing, because the floor
// (10 retries/s, granted whether or not anything succeeds) covers all of a
// light client's retries. A shared budget, or a breaker, is what bounds
// many light clients.
func TestStormPerClientBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := budget.NewShare(budget.ShareConfig{})
		now := time.Now()
		granted := 0
		// One client's 50 requests over 5 s, each failing and wanting 2
		// retries (that fail too).
		for i := 0; i < 50; i++ {
			at := now.Add(time.Duration(i) * 100 * time.Millisecond)
			b.RecordAt(at, true, false)
			for r := 0; r < 2; r++ {
				if b.AllowRetryAt(at, false) {
					granted++
					b.RecordAt(at, false, false)
				}
			}
		}
		if granted != 100 {
			t.Fatalf("granted %d of 100 retries, want all: the floor covers a light client", granted)
		}
	})
}

// TestGRPCPermanentErrorsTakeNoTokens: as gRPC's retry throttling counts
// only the failures it would retry, the retry loop does not hand the budget
// a permanent failure. Forty permanent errors in a row (a client sending
// malformed requests) leave the recommended bucket as it started (8 of 10
// tokens, retries while above 5), so the transient failure after them is
// retried; then
// transient failures alone spend it as gRPC would: each takes a token for
// its first attempt, and the retry's success gives 0.2 back.
func TestGRPCPermanentErrorsTakeNoTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := budget.NewGRPC(budget.Recommended())
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{MaxAttempts: 2, Env: &retry.Env{Budget: g}}
		ctx := context.Background()
		attempts := func(fn func(int) error) (n int) {
			_ = retry.Do(ctx, p, func(context.Context) error { n++; return fn(n) })
			return n
		}
		full := g.Level()
		for range 40 {
			if n := attempts(func(int) error { return retry.Permanent(errors.New("400 bad request")) }); n != 1 {
				t.Fatalf("a permanent error: %d attempts, want 1", n)
			}
		}
		if l := g.Level(); l != full {
			t.Fatalf("level %v after forty permanent errors, want %v (none takes a token)", l, full)
		}
		transient := func(n int) error {
			if n == 1 {
				return errors.New("503")
			}
			return nil
		}
		if n := attempts(transient); n != 2 {
			t.Fatalf("a transient failure after forty permanent errors: %d attempts, want 2 (retried)", n)
		}
		// Each transient call: -1 for the failure, +TokenRatio for the
		// retry's success; retried while the level is above half.
		retried := 1
		for attempts(transient) == 2 {
			retried++
			if retried > 100 {
				t.Fatal("transient failures never exhausted the budget")
			}
		}
		if l := g.Level(); l*2 > budget.Recommended().MaxTokens {
			t.Fatalf("level %v when a transient failure was not retried, want at most half of %v", l, budget.Recommended().MaxTokens)
		}
	})
}
