package retry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// tally counts a Retrier's events from many goroutines.
type tally struct {
	starts, ends, gaveUpAttempts atomic.Int64
	mu                           sync.Mutex
	byReason                     map[string]int
}

func (c *tally) Observe(_ context.Context, e event.Event) {
	switch e.Kind {
	case event.AttemptStart:
		c.starts.Add(1)
	case event.AttemptEnd:
		c.ends.Add(1)
	case event.GaveUp:
		c.gaveUpAttempts.Add(int64(e.Attempt))
		c.mu.Lock()
		c.byReason[e.Reason]++
		c.mu.Unlock()
	}
}

// TestConcurrentCallsKeepGuardsConsistent: 40 goroutines share one
// Retrier and its guards (a bulkhead of 4 slots that waits, an adaptive
// throttle, a budget, a breaker that checks its tickets) and make 25 calls
// each against a dependency that fails half the time, some cancelled by
// their callers during an attempt or a wait. Run with -race. When they are
// done: no bulkhead slot is held, no breaker ticket was reported twice,
// every attempt started also ended, and the attempts the errors count are
// those the observer saw start.
func TestConcurrentCallsKeepGuardsConsistent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 4, MaxWait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		th, err := throttle.NewAdaptive(throttle.AdaptiveConfig{})
		if err != nil {
			t.Fatal(err)
		}
		bu, err := budget.NewShare(budget.ShareConfig{})
		if err != nil {
			t.Fatal(err)
		}
		br, err := breaker.New(breaker.Config{CheckTickets: true, MinCalls: 1000, OpenTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		obs := &tally{byReason: map[string]int{}}
		r, err := retry.New(retry.Policy{MaxAttempts: 4, Env: &retry.Env{Bulkhead: bh, Throttle: th, Budget: bu, Breaker: br, Observer: obs}})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg           sync.WaitGroup
			calls        atomic.Int64 // fn's calls
			errAttempts  atomic.Int64 // attempts counted by the errors
			succeeded    atomic.Int64
			successTries atomic.Int64
		)
		for g := range 40 {
			wg.Go(func() {
				for i := range 25 {
					ctx, cancel := context.WithCancel(context.Background())
					switch (g + i) % 5 {
					case 1:
						time.AfterFunc(3*time.Millisecond, cancel) // during an attempt or a wait
					case 2:
						cancel() // before the call
					}
					n := 0
					err := r.Do(ctx, func(ctx context.Context) error {
						n++
						calls.Add(1)
						select {
						case <-time.After(5 * time.Millisecond):
						case <-ctx.Done():
							return ctx.Err()
						}
						if (g*25+i+n)%2 == 0 {
							return errFlaky
						}
						return nil
					})
					cancel()
					var e *retry.Error
					switch {
					case err == nil:
						succeeded.Add(1)
						successTries.Add(int64(n))
					case errors.As(err, &e):
						errAttempts.Add(int64(e.Attempts))
					default:
						t.Errorf("Do = %v, want nil or a *retry.Error", err)
					}
				}
			})
		}
		wg.Wait()
		if n := bh.InUse(); n != 0 {
			t.Errorf("%d bulkhead slots held after every call returned, want 0", n)
		}
		if n := br.DoubleReports(); n != 0 {
			t.Errorf("%d breaker tickets reported twice, want 0", n)
		}
		starts, ends := obs.starts.Load(), obs.ends.Load()
		if starts != ends || starts != calls.Load() {
			t.Errorf("%d attempts started, %d ended, fn called %d times; want all equal", starts, ends, calls.Load())
		}
		if got := errAttempts.Load() + successTries.Load(); got != starts || obs.gaveUpAttempts.Load() != errAttempts.Load() {
			t.Errorf("errors count %d attempts and successes %d, give-up events %d; %d started",
				errAttempts.Load(), successTries.Load(), obs.gaveUpAttempts.Load(), starts)
		}
		t.Logf("%d calls succeeded; give-ups %v; %d attempts", succeeded.Load(), obs.byReason, starts)
	})
}
