package breaker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// TestTransitionsReportedOnce: 8 goroutines drive a breaker through
// failing and healthy phases on one virtual clock, with cancelled calls
// (ignored outcomes) and lost ones (no outcome), RetriesOnly on and off.
// Every transition is reported once, to the observer and to
// OnStateChange alike: into each state as often as out of it, but the
// final one, however the reports of racing transitions interleave.
func TestTransitionsReportedOnce(t *testing.T) {
	for round := range 6 {
		var mu sync.Mutex
		into, out := map[string]int{}, map[string]int{}
		hook := 0
		obs := event.Func(func(_ context.Context, e event.Event) {
			if e.Kind != event.BreakerStateChange {
				return
			}
			mu.Lock()
			into[e.To]++
			out[e.From]++
			mu.Unlock()
		})
		b := newB(t, Config{MinCalls: 5, Window: time.Second, OpenTimeout: 10 * time.Millisecond, HalfOpenProbes: 3,
			OpenBackoff: 1, OpenJitter: Disabled, Observer: obs, RetriesOnly: round%2 == 1,
			OnStateChange: func(string, State, State) { mu.Lock(); hook++; mu.Unlock() }})
		var clock atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for k := range 3000 {
					i := int(clock.Add(1)) / 8
					now := at(time.Duration(i) * 100 * time.Microsecond)
					tk, err := b.AllowAt(now, (k+g)%2 == 0)
					if err != nil {
						continue
					}
					var e error
					phase := (i / 500) % 2
					switch (i + g + k) % 11 {
					case 0, 1, 2, 3, 4, 5:
						if phase == 0 {
							e = boom
						}
					case 6:
						e = context.Canceled
					case 7:
						continue // lost
					}
					b.DoneAt(now, tk, 0, e)
				}
			})
		}
		wg.Wait()
		final := stateOf(b.word.Load()).String()
		n := 0
		for _, s := range []string{"closed", "open", "half_open"} {
			bal := into[s] - out[s]
			if s == "closed" {
				bal++
			}
			want := 0
			if s == final {
				want = 1
			}
			n += into[s]
			if bal != want {
				t.Errorf("round %d: %d transitions into %s, %d out of it, final state %s", round, into[s], s, out[s], final)
			}
		}
		if n != hook {
			t.Errorf("round %d: %d events, %d OnStateChange calls, want one each per transition", round, n, hook)
		}
		if into["closed"] == 0 || into["open"] == 0 || into["half_open"] == 0 {
			t.Errorf("round %d: transitions %v, want each state entered", round, into)
		}
	}
}
