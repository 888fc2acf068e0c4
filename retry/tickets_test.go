package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/retry"
)

// TestLoopReportsEachTicketOnce: the loop owns the breaker's tickets and
// reports each once, whatever ends the attempt: success, failures and
// retries, the caller's cancellation during an attempt or a wait, a panic,
// hedges that lose and are cancelled. A breaker with CheckTickets counts
// any second report; it counts none.
func TestLoopReportsEachTicketOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.Config{CheckTickets: true, MinCalls: 1000})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{MaxAttempts: 4, Env: &retry.Env{Breaker: br, Observer: &events{}}}
		ctx := context.Background()
		fn, _ := failing(2, errFlaky)
		if err := retry.Do(ctx, p, fn); err != nil {
			t.Fatalf("two failures then a success: %v", err)
		}
		fn, _ = failing(9, errFlaky)
		if err := retry.Do(ctx, p, fn); !errors.Is(err, retry.ErrExhausted) {
			t.Fatalf("always failing: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		_ = retry.Do(cctx, p, func(context.Context) error { cancel(); return errFlaky })
		cctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(time.Millisecond, cancel) // during the first wait
		_ = retry.Do(cctx, p, func(context.Context) error { return errFlaky })
		func() {
			defer func() { _ = recover() }()
			_ = retry.Do(ctx, p, func(context.Context) error { panic("attempt panics") })
		}()
		hp := p
		env := *p.Env
		env.Hedger = fixedHedger(t, 50*time.Millisecond, 2)
		hp.Env = &env
		s := &script{lat: []time.Duration{time.Second, 10 * time.Millisecond}, errs: []error{nil, errFlaky}}
		if _, err := retry.HedgeValue(ctx, hp, s.call, s.discard); err != nil {
			t.Fatalf("hedged: %v", err)
		}
		synctest.Wait() // the losing attempts return and are reported
		if n := br.DoubleReports(); n != 0 {
			t.Errorf("the breaker dropped %d tickets reported twice, want 0", n)
		}
		if s := br.State(); s != breaker.Closed {
			t.Errorf("breaker %v, want closed", s)
		}
	})
}
