package retry_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// switchBreaker refuses every attempt while open is set.
type switchBreaker struct{ open atomic.Bool }

func (b *switchBreaker) AllowAt(time.Time, bool) (uint64, error) {
	if b.open.Load() {
		return 0, breaker.ErrOpen
	}
	return 0, nil
}
func (b *switchBreaker) DoneAt(time.Time, uint64, time.Duration, error) {}

// A call refused before its first attempt went (an open breaker, a
// throttle, a bulkhead: the dependency saw nothing of it) is not one of
// the calls that the Hedger's budget counts: the budget is a share of the
// requests sent. Here 90 calls are refused by an open breaker, then 10
// slow calls go: with a budget of 10 % they may be hedged once, not 10
// times (100 % more requests than were sent, as the budget counted 100
// calls).
func TestHedgeCallRefusedLocallyNotPlanned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hedge.New(hedge.Config{Delay: 50 * time.Millisecond, Budget: 0.1, MinPerSecond: hedge.Off, Brownout: hedge.Off})
		if err != nil {
			t.Fatal(err)
		}
		br := &switchBreaker{}
		br.open.Store(true)
		obs := &events{}
		p := retry.Policy{Env: &retry.Env{Hedger: h, Breaker: br, Observer: obs}}
		for range 90 {
			s := &script{lat: []time.Duration{time.Millisecond}}
			if _, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err == nil || s.n.Load() != 0 {
				t.Fatalf("HedgeValue = %v after %d attempts; want a refusal before any attempt", err, s.n.Load())
			}
		}
		if st := h.StatsAt(time.Now()); st.Calls != 0 || st.Seen != 0 {
			t.Errorf("after 90 calls refused before any attempt: Hedger stats %+v; want no call planned or observed", st)
		}
		br.open.Store(false)
		for range 10 {
			s := &script{lat: []time.Duration{100 * time.Millisecond, 10 * time.Millisecond}}
			if _, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil {
				t.Fatal(err)
			}
		}
		if n := obs.count(event.Hedge); n != 1 {
			t.Errorf("%d hedges for 10 calls sent with a 10 %% budget, want 1", n)
		}
		if st := h.StatsAt(time.Now()); st.Calls != 10 {
			t.Errorf("Hedger counted %d calls, want the 10 that were sent", st.Calls)
		}
	})
}
