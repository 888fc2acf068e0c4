package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// stall is an observer that holds the driver's goroutine for a while when
// attempt n's failure is reported, as a slow log write would.
type stall struct {
	events
	n int
	d time.Duration
}

func (s *stall) Observe(ctx context.Context, e event.Event) {
	s.events.Observe(ctx, e)
	if e.Kind == event.AttemptEnd && e.Attempt == s.n && e.Err != nil {
		time.Sleep(s.d)
	}
}

// An answer that is waiting when the next hedge falls due is taken first:
// no hedge is sent for a call that has its answer. Here the driver is held
// up (by its observer) while the first attempt answers and the second
// hedge's delay passes, so both are ready when it looks again.
func TestHedgeNotSentWhenAnswerIsDue(t *testing.T) {
	boom := errors.New("boom")
	for i := range 100 {
		synctest.Test(t, func(t *testing.T) {
			obs := &stall{n: 2, d: 100 * time.Millisecond}
			// The first attempt answers at 120ms; the hedge sent at 50ms
			// fails at 60ms and its report holds the driver until 160ms;
			// the second hedge fell due at 100ms.
			s := &script{lat: []time.Duration{120 * time.Millisecond, 10 * time.Millisecond, time.Millisecond}, errs: []error{nil, boom}}
			p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
			s.answers(t, p, 1, 160*time.Millisecond)
			synctest.Wait()
			if n := s.n.Load(); n != 2 || obs.count(event.Hedge) != 1 {
				t.Fatalf("run %d: %d attempts, %d hedges; want 2 attempts, 1 hedge: none once the answer is in", i, n, obs.count(event.Hedge))
			}
		})
	}
}

// Once the caller's context has ended, no hedge is sent, even when the
// attempt in flight is slow to return.
func TestHedgeNotSentAfterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		var n atomic.Int32
		slow := func(ctx context.Context) (int, error) {
			n.Add(1)
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // clean-up that ignores ctx
			return 0, ctx.Err()
		}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 10*time.Millisecond, 2), Observer: obs}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Millisecond, cancel)
		if _, err := retry.HedgeValue(ctx, p, slow, nil); err == nil {
			t.Fatal("HedgeValue succeeded on a cancelled context")
		}
		time.Sleep(time.Second) // the attempts in flight return
		if n.Load() != 1 || obs.count(event.Hedge) != 0 {
			t.Errorf("%d attempts, %d hedges after the call was cancelled; want 1 attempt, no hedge", n.Load(), obs.count(event.Hedge))
		}
	})
}
