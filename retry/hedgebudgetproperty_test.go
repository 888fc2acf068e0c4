package retry_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// Property: 8 goroutines make hedged calls through one Hedger at once,
// their first attempts slow at random (most slower than the delay, so
// that the calls ask for far more hedges than the budget allows). Within
// the budget's horizon the hedges sent (event.Hedge) are at most Budget of
// the calls, the Hedger counted exactly the hedges sent and the calls
// made, and no call sent more than MaxHedges.
func TestHedgeBudgetConcurrentCalls(t *testing.T) {
	for seed := range uint64(10) {
		synctest.Test(t, func(t *testing.T) {
			const (
				goroutines = 8
				perG       = 20
				budget     = 0.1
			)
			h, err := hedge.New(hedge.Config{Delay: 20 * time.Millisecond, MaxHedges: 2, Budget: budget,
				MinPerSecond: hedge.Off, Brownout: hedge.Off})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			perCall := map[int]int{} // hedges by call
			refused := 0             // by the Hedger's budget
			start := time.Now()
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for i := range perG {
						call := g*perG + i
						o := event.Func(func(_ context.Context, e event.Event) {
							mu.Lock()
							defer mu.Unlock()
							switch {
							case e.Kind == event.Hedge:
								perCall[call]++
							case e.Kind == event.HedgeRefused && e.Reason == "hedge_budget_exhausted":
								refused++
							}
						})
						lat := make([]time.Duration, 3)
						for k := range lat {
							lat[k] = time.Duration(1+r.IntN(60)) * time.Millisecond
						}
						s := &script{lat: lat}
						p := retry.Policy{Env: &retry.Env{Hedger: h, Observer: o}}
						if _, err := retry.HedgeValue(context.Background(), p, s.call, nil); err != nil {
							t.Errorf("call %d: %v", call, err)
						}
					}
				})
			}
			wg.Wait()
			synctest.Wait()
			if took := time.Since(start); took >= 2*time.Second {
				t.Fatalf("the calls took %v, longer than the budget's horizon (2 s)", took)
			}
			sent := 0
			for call, n := range perCall {
				sent += n
				if n > 2 {
					t.Errorf("call %d sent %d hedges, MaxHedges 2", call, n)
				}
			}
			calls := goroutines * perG
			if refused == 0 {
				t.Errorf("seed %d: no hedge refused for the budget; the calls did not ask for more than it", seed)
			}
			if float64(sent) > budget*float64(calls) {
				t.Errorf("seed %d: %d hedges for %d calls, budget %v", seed, sent, calls, budget)
			}
			if st := h.StatsAt(time.Now()); st.Hedges != sent || st.Calls != calls {
				t.Errorf("seed %d: the Hedger counted %d hedges and %d calls; %d sent, %d made", seed, st.Hedges, st.Calls, sent, calls)
			}
		})
	}
}
