package hedge_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// Property: 8 goroutines share one Hedger, planning calls and asking for
// hedges at random (none in calm times, more than the budget allows in
// others, and a burst of 3 for every call across every third step of the
// budget's window, as at the start of a brownout), at instants that move
// on as time.Now's do: in slices of 20 ms, each goroutine's instants
// anywhere in the current slice (callers a little behind or ahead of one
// another, across the steps of the budget's window). Whatever the
// interleaving, every budget horizon (each span of the ten 200 ms steps
// that the budget looks back over, with the default 10 s Window) holds no
// more granted hedges than Budget of its calls plus the floor
// (MinPerSecond × 2 s), and StatsAt agrees with what was granted. A caller
// whose instant fell just before a step, while others' had moved into
// the next, used to be granted hedges against its own horizon, in which
// the step that the others' had just replaced no longer counted, so that
// the room of the steps both horizons share went out twice.
func TestBudgetPropertyConcurrent(t *testing.T) {
	const (
		goroutines = 8
		slice      = 20 * time.Millisecond
		step       = 200 * time.Millisecond // the budget's: Window/5/10
		buckets    = 10
		slices     = 600 // 12 s
	)
	for seed := range uint64(12) {
		budget := []float64{0.05, 0.2, 1}[seed%3]
		perSecond := []float64{hedge.Off, 1, 5}[seed%3]
		floor := 0.0
		if perSecond > 0 {
			floor = perSecond * (buckets * step).Seconds()
		}
		h := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: budget, MinPerSecond: perSecond, Brownout: hedge.Off})
		var mu sync.Mutex
		calls, grants := map[int64]int{}, map[int64]int{} // by budget step
		for s := range slices {
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(s*goroutines+g)))
					for range 5 {
						// The slice of s is centred on s × 20 ms: one in 10 straddles a step.
						now := t0.Add(time.Duration(s)*slice - slice/2 + time.Duration(r.Int64N(int64(slice))))
						e := now.UnixNano() / int64(step)
						h.PlanAt(now)
						mu.Lock()
						calls[e]++
						mu.Unlock()
						// Up to 3 hedges of the call, a third of the time;
						// 3 for every call in a burst (the slices across every
						// third step), after calm steps that asked for none:
						// the horizons before and after the step both have
						// room.
						asks := 0
						switch {
						case s%30 == 0:
							asks = 3
						case s%30 >= 20:
							for asks < 3 && r.IntN(3) == 0 {
								asks++
							}
						}
						for range asks {
							if h.AllowAt(now) == nil {
								mu.Lock()
								grants[e]++
								mu.Unlock()
							}
						}
					}
				})
			}
			wg.Wait()
		}
		end := t0.Add(slices*slice - 1)
		first, last := t0.UnixNano()/int64(step), end.UnixNano()/int64(step)
		for e := first; e <= last; e++ {
			var c, g int
			for k := e - buckets + 1; k <= e; k++ {
				c, g = c+calls[k], g+grants[k]
			}
			if float64(g) > budget*float64(c)+floor {
				t.Fatalf("seed %d (budget %v, %v/s): the horizon ending at step %d holds %d hedges for %d calls, more than %v × %d + %v",
					seed, budget, perSecond, e-first, g, c, budget, c, floor)
			}
		}
		var g int
		for k := last - buckets + 1; k <= last; k++ {
			g += grants[k]
		}
		if s := h.StatsAt(end); s.Hedges != g {
			t.Errorf("seed %d: StatsAt counts %d hedges in the last horizon, %d were granted", seed, s.Hedges, g)
		}
	}
}

// A caller whose instant is just behind a step of the budget's window
// asks for hedges after callers past the step were granted the budget:
// its hedges count in their horizon too, which has no room left. Here 100
// calls planned before the step, none hedged; 50 hedges (the budget of
// 0.5) granted 1 ns after it; then one asked 1 ns before it. It used to be
// granted against the horizon that ends before the step, which holds
// none of the 50, and so were 49 more: the horizon after the step held
// twice the budget.
func TestBudgetCallerBehindStep(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: 0.5, MinPerSecond: hedge.Off, Brownout: hedge.Off})
	for range 100 {
		h.PlanAt(t0.Add(-100 * time.Millisecond))
	}
	granted := 0
	for h.AllowAt(t0) == nil {
		granted++
	}
	if granted != 50 {
		t.Fatalf("%d hedges granted after the step, want 50", granted)
	}
	if err := h.AllowAt(t0.Add(-time.Nanosecond)); err == nil {
		t.Fatalf("a hedge granted just before the step, with 50 granted just after it; want ErrBudget")
	}
	if s := h.StatsAt(t0); s.Hedges != 50 {
		t.Errorf("StatsAt counts %d hedges, want 50", s.Hedges)
	}
}

// Fault: the clock steps back by an hour. The budget counts the calls and
// hedges of the stepped clock, over its whole horizon: the hedges granted
// before the step do not hold back those after it, and the horizons of
// the instants before the step (the newest the Hedger has seen) are not
// asked about, which would hold the later hedges to a fraction of the
// horizon.
func TestBudgetClockSteppedBack(t *testing.T) {
	h := mustNew(t, hedge.Config{Delay: time.Millisecond, Budget: 0.5, MinPerSecond: hedge.Off, Brownout: hedge.Off})
	for range 100 {
		h.PlanAt(t0)
	}
	for h.AllowAt(t0) == nil {
	}
	back := t0.Add(-time.Hour)
	for i := range 100 {
		h.PlanAt(back.Add(time.Duration(i) * 19 * time.Millisecond)) // 100 calls over the 2 s horizon
	}
	now := back.Add(1900 * time.Millisecond)
	granted := 0
	for h.AllowAt(now) == nil {
		granted++
	}
	if granted != 50 {
		t.Errorf("after the clock stepped back 1 h: %d hedges granted for 100 calls, want 50 (the budget of 0.5)", granted)
	}
}
