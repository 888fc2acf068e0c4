package budget

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault: many callers ask a Share for a retry at the same instant, with
// room for a few. The promise is a bound (retries ≤ Ratio × successes +
// the floor over the window): never more retries are granted than the
// allowance, however the callers interleave between reading the count and
// adding to it. Checking before counting granted up to one retry per
// concurrent caller beyond it.
func TestShareNeverOvergrantsUnderContention(t *testing.T) {
	const rounds, callers, successes = 1000, 16, 25 // 25 successes at 20 %: 5 retries
	over := 0
	for r := range rounds {
		s, err := NewShare(ShareConfig{MinPerSecond: NoFloor})
		if err != nil {
			t.Fatal(err)
		}
		now := at(time.Duration(r) * time.Hour)
		for range successes {
			s.RecordAt(now, true, true)
		}
		var granted atomic.Int32
		var start, wg sync.WaitGroup
		start.Add(1)
		for range callers {
			wg.Go(func() {
				start.Wait()
				for range 4 {
					if s.AllowRetryAt(now, false) {
						granted.Add(1)
					}
				}
			})
		}
		start.Done()
		wg.Wait()
		if g := granted.Load(); g > successes/5 {
			over++
			t.Logf("round %d: %d retries granted, allowance %d", r, g, successes/5)
		}
	}
	if over > 0 {
		t.Fatalf("%d of %d rounds granted more retries than the allowance", over, rounds)
	}
}
