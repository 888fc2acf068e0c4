package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// TestMaxElapsedCutIsNotAFailure: an attempt that is still running when
// Policy.MaxElapsed passes fails because the call's own deadline ended its
// context, as an attempt cut short by the caller's deadline does. Neither
// is the dependency's failure: the budget (gRPC's, which takes a token per
// failure) and the throttle are not told, the breaker is told the
// context's error, and the observer sees the attempt cancelled, with
// MaxElapsed as with a context deadline of the same length. MaxElapsed's
// cut took a token and counted as a failure.
func TestMaxElapsedCutIsNotAFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		p    retry.Policy
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"context deadline", retry.Policy{}, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Second)
		}},
		{"MaxElapsed", retry.Policy{MaxElapsed: time.Second}, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}},
	} {
		synctest.Test(t, func(t *testing.T) {
			g, err := budget.NewGRPC(budget.GRPCConfig{})
			if err != nil {
				t.Fatal(err)
			}
			br, err := breaker.New(breaker.Config{ConsecutiveFailures: 1})
			if err != nil {
				t.Fatal(err)
			}
			th, obs := &fakeThrottle{}, &events{}
			c.p.Env = &retry.Env{Budget: g, Breaker: br, Throttle: th, Observer: obs}
			ctx, cancel := c.ctx()
			defer cancel()
			err = retry.Do(ctx, c.p, func(ctx context.Context) error {
				<-ctx.Done() // a dependency slower than the call's time
				return errors.Join(errors.New("read: connection reset"), ctx.Err())
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s: Do = %v, want the deadline", c.name, err)
			}
			if lv := g.Level(); lv != budget.DefaultMaxTokens {
				t.Errorf("%s: budget level %v, want %v (nothing taken for an attempt the call's deadline cut)", c.name, lv, float64(budget.DefaultMaxTokens))
			}
			if len(th.throttled) != 0 {
				t.Errorf("%s: throttle told %v, want nothing", c.name, th.throttled)
			}
			if s := br.State(); s != breaker.Closed {
				t.Errorf("%s: breaker %v, want closed", c.name, s)
			}
			if ends := obs.of(event.AttemptEnd); len(ends) != 1 || ends[0].Outcome != event.Cancelled {
				t.Errorf("%s: attempt ends %+v, want one, cancelled", c.name, ends)
			}
		})
	}
}
