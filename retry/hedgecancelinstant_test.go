package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// The caller cancels its context at the very instant the hedge falls due
// (a cancel func, not a deadline: the loop cannot see it coming). Which of
// the two the driver sees first is up to the scheduler, so the runs
// repeat; whichever it is, the accounts agree: the Hedger counted exactly
// the hedges reported sent (event.Hedge), every attempt reported started
// was called, the call ends with context.Canceled, the value of every
// attempt but the one returned is discarded, and no goroutine is left
// (TestMain).
func TestHedgeCancelledAsHedgeFallsDue(t *testing.T) {
	for i := range 40 {
		synctest.Test(t, func(t *testing.T) {
			h, err := hedge.New(hedge.Config{Delay: 50 * time.Millisecond, MaxHedges: 2, Brownout: hedge.Off})
			if err != nil {
				t.Fatal(err)
			}
			obs := &events{}
			s := &starts{}
			var mu sync.Mutex
			var discarded int
			fn := func(ctx context.Context) (int, error) {
				s.begin(ctx)
				<-ctx.Done()
				return 1, ctx.Err()
			}
			p := retry.Policy{Env: &retry.Env{Hedger: h, Observer: obs}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err = retry.HedgeValue(ctx, p, fn, func(int) { mu.Lock(); discarded++; mu.Unlock() })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run %d: HedgeValue = %v, want context.Canceled", i, err)
			}
			synctest.Wait()
			hedges, started := obs.count(event.Hedge), obs.count(event.AttemptStart)
			st := h.StatsAt(time.Now())
			mu.Lock()
			defer mu.Unlock()
			if st.Hedges != hedges || started != int(s.calls.Load()) || started != hedges+1 || discarded != started-1 {
				t.Fatalf("run %d: the Hedger counted %d hedges, %d reported; %d attempts reported started, %d called; %d values discarded; want them to agree",
					i, st.Hedges, hedges, started, s.calls.Load(), discarded)
			}
		})
	}
}
