package retry_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// An attempt that panics after its call has ended (the call panicked with
// another attempt's panic, or returned another attempt's answer) panics on
// the goroutine that collects the losers, which no caller can recover: it
// would end the process that the caller's recover (net/http's, for a
// handler) protects, for a bug already surfaced, or one that only hedging's
// cancellation reaches. It is reported instead, as a failed attempt whose
// error says it panicked and with what, to the guards and the observer.
func TestHedgedLoserPanicReported(t *testing.T) {
	t.Run("BothPanic", func(t *testing.T) {
		// The same bad input makes every attempt panic: the first attempt's
		// panic reaches the caller; the hedge's, 50 ms later, must not end
		// the process.
		synctest.Test(t, func(t *testing.T) {
			bh := mustBulkhead(t, 2)
			br := &countingBreaker{}
			obs := &events{}
			fn := func(ctx context.Context) (int, error) {
				time.Sleep(100 * time.Millisecond) // virtual
				panic("bad input")
			}
			p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Breaker: br, Observer: obs, Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
			func() {
				defer func() {
					if v := recover(); v != "bad input" {
						t.Fatalf("HedgeValue recovered %v, want the first attempt's panic", v)
					}
				}()
				_, _ = retry.HedgeValue(context.Background(), p, fn, func(int) {})
			}()
			time.Sleep(time.Second) // virtual: the hedge panics meanwhile
			synctest.Wait()
			checkPanicReported(t, obs, 2, "bad input")
			if a, d := br.counts(); a != 2 || d != 2 || bh.InUse() != 0 {
				t.Errorf("breaker allowed %d and heard of %d ends, %d bulkhead slots in use; want 2, 2, 0", a, d, bh.InUse())
			}
		})
	})
	t.Run("LoserPanicsOnCancel", func(t *testing.T) {
		// The hedge wins; the first attempt, cancelled, panics as it
		// returns (code that no call through Do cancels mid-way).
		synctest.Test(t, func(t *testing.T) {
			br := &countingBreaker{}
			obs := &events{}
			var n atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				k := int(n.Add(1))
				if k == 2 {
					return k, nil
				}
				<-ctx.Done()
				panic("cancelled mid-way")
			}
			p := retry.Policy{Env: &retry.Env{Breaker: br, Observer: obs, Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
			if v, err := retry.HedgeValue(context.Background(), p, fn, func(int) {}); v != 2 || err != nil {
				t.Fatalf("HedgeValue = %v, %v; want the hedge's answer", v, err)
			}
			synctest.Wait()
			checkPanicReported(t, obs, 1, "cancelled mid-way")
			if a, d := br.counts(); a != 2 || d != 2 {
				t.Errorf("breaker allowed %d and heard of %d ends; want 2 and 2", a, d)
			}
		})
	})
}

// checkPanicReported fails t unless obs saw attempt n end with an error
// that says it panicked with what.
func checkPanicReported(t *testing.T, obs *events, n int, what string) {
	t.Helper()
	for _, e := range obs.of(event.AttemptEnd) {
		if e.Attempt == n {
			if e.Err == nil || !strings.Contains(e.Err.Error(), "panicked: "+what) || e.Outcome == event.Success {
				t.Errorf("attempt %d ended %v with %v; want a failure saying it panicked: %s", n, e.Outcome, e.Err, what)
			}
			return
		}
	}
	t.Errorf("no AttemptEnd for attempt %d, which panicked", n)
}
