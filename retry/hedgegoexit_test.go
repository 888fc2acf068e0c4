package retry_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// An attempt that calls runtime.Goexit (t.FailNow in a test's attempt
// function does) never returned: the hedged call does not take it for a
// success with a zero value. As under Do, where it runs on the caller's
// goroutine, the caller's goroutine exits (its deferred calls run) once
// the other attempts are cancelled; an attempt that does so after the
// call ended is reported as a failure that says so.
func TestHedgedAttemptGoexit(t *testing.T) {
	t.Run("during the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 {
					time.Sleep(80 * time.Millisecond) // virtual: the hedge is out
					runtime.Goexit()
				}
				<-ctx.Done()
				return 2, ctx.Err()
			}
			var discarded atomic.Int32
			p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
			var returned, exited atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() { exited.Store(!returned.Load()) }()
				v, err := retry.HedgeValue(context.Background(), p, fn, func(int) { discarded.Add(1) })
				returned.Store(true)
				t.Errorf("HedgeValue returned %v, %v; want the caller's goroutine to exit as the attempt's did", v, err)
			}()
			<-done
			synctest.Wait()
			if !exited.Load() || discarded.Load() != 1 {
				t.Errorf("caller exited %v, %d values discarded; want the caller's goroutine gone and the hedge's value discarded", exited.Load(), discarded.Load())
			}
		})
	})
	t.Run("after the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := &events{}
			var n atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				if n.Add(1) == 2 {
					return 2, nil
				}
				<-ctx.Done()
				runtime.Goexit()
				return 0, nil
			}
			p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Observer: obs}}
			if v, err := retry.HedgeValue(context.Background(), p, fn, nil); v != 2 || err != nil {
				t.Fatalf("HedgeValue = %v, %v; want the hedge's answer", v, err)
			}
			synctest.Wait()
			var found bool
			for _, e := range obs.of(event.AttemptEnd) {
				if e.Attempt == 1 && e.Err != nil && strings.Contains(e.Err.Error(), "Goexit") {
					found = true
				}
			}
			if !found {
				t.Errorf("no AttemptEnd says attempt 1 called runtime.Goexit: %+v", obs.of(event.AttemptEnd))
			}
		})
	})
}
