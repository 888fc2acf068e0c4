package budget

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestShareRatioProperty drives a Share through random sequences of
// successes, failures, retry requests and cancellations at instants that
// move on by nothing, a few milliseconds, a bucket, or several windows, and
// checks it against a model that counts every event exactly per bucket:
//
//   - each decision is the model's: a retry is granted exactly when the
//     retries over the window, this one included, fit within Ratio ×
//     successes over the window + the floor;
//   - after every grant the retries over the window are within that
//     allowance (the promise of ShareConfig; successes that leave the
//     window before the retries they earned do not take the retries back);
//   - the level is the allowance left;
//   - over the whole sequence, the retries granted (net of those taken
//     back) are at most Ratio × every success + the floor once per window
//     the sequence spans, plus one.
func TestShareRatioProperty(t *testing.T) {
	configs := []ShareConfig{
		{},
		{Ratio: 0.1, MinPerSecond: NoFloor},
		{Ratio: 1, Window: time.Second, MinPerSecond: 2},
		{Ratio: 0.05, Window: 100 * time.Millisecond, MinPerSecond: 50},
	}
	src := rand.New(rand.NewPCG(11, 17))
	for ci, c := range configs {
		for seq := range 30 {
			checkShareSequence(t, c, src, ci, seq)
		}
	}
}

func checkShareSequence(t *testing.T, c ShareConfig, src *rand.Rand, ci, seq int) {
	t.Helper()
	s, err := NewShare(c)
	if err != nil {
		t.Fatal(err)
	}
	ratio, window, perSecond := c.Ratio, c.Window, c.MinPerSecond
	if ratio == 0 {
		ratio = DefaultRatio
	}
	if window == 0 {
		window = DefaultWindow
	}
	if perSecond == 0 {
		perSecond = DefaultMinPerSecond
	}
	floor := max(0, perSecond*window.Seconds())
	width := int64(window / shareBuckets)
	epoch := func(now time.Time) int64 { return now.UnixNano() / width }

	successes := map[int64]int{}
	retries := map[int64]int{}
	sum := func(m map[int64]int, e int64) (n int) {
		for k, v := range m {
			if k > e-shareBuckets && k <= e {
				n += v
			}
		}
		return n
	}
	var granted []time.Time // grants not taken back
	totalRetries, totalSuccesses := 0, 0
	now := t0.Add(time.Duration(src.Int64N(int64(time.Hour))))
	first := epoch(now)
	steps := []time.Duration{0, 0, time.Millisecond, 7 * time.Millisecond, window / shareBuckets, window / 3, 3 * window}
	for i := range 2000 {
		now = now.Add(steps[src.IntN(len(steps))] / time.Duration(1+src.IntN(4)))
		e := epoch(now)
		for _, m := range []map[int64]int{successes, retries} {
			for k := range m {
				if k <= e-shareBuckets {
					delete(m, k) // left the window for good: time only moves on
				}
			}
		}
		switch op := src.IntN(10); {
		case op < 4: // a success
			s.RecordAt(now, src.IntN(2) == 0, true)
			successes[e]++
			totalSuccesses++
		case op < 5: // a failure: counts nothing
			s.RecordAt(now, src.IntN(2) == 0, false)
		case op < 9: // a retry asked for
			want := float64(sum(retries, e)+1) <= ratio*float64(sum(successes, e))+floor
			got := s.AllowRetryAt(now, false)
			if got != want {
				t.Fatalf("config %d, sequence %d, step %d: retry granted %v, want %v (window: %d retries, %d successes, floor %v)",
					ci, seq, i, got, want, sum(retries, e), sum(successes, e), floor)
			}
			if got {
				retries[e]++
				granted = append(granted, now)
				totalRetries++
				if r, a := float64(sum(retries, e)), ratio*float64(sum(successes, e))+floor; r > a {
					t.Fatalf("config %d, sequence %d, step %d: %v retries over the window after a grant, allowance %v", ci, seq, i, r, a)
				}
			}
		default: // a granted retry taken back
			if len(granted) == 0 {
				continue
			}
			j := src.IntN(len(granted))
			g := granted[j]
			granted = append(granted[:j], granted[j+1:]...)
			s.CancelRetryAt(g, false, false)
			if ge := epoch(g); ge > e-shareBuckets {
				retries[ge]-- // still in the window: no longer counted
			}
			totalRetries--
		}
		if l, want := s.LevelAt(now), max(0, ratio*float64(sum(successes, e))+floor-float64(sum(retries, e))); l != want {
			t.Fatalf("config %d, sequence %d, step %d: level %v, want %v", ci, seq, i, l, want)
		}
	}
	windows := float64((epoch(now)-first)/shareBuckets + 2)
	if bound := ratio*float64(totalSuccesses) + floor*windows; float64(totalRetries) > bound+1e-9 {
		t.Errorf("config %d, sequence %d: %d retries granted over %v windows, %d successes: more than %v",
			ci, seq, totalRetries, windows, totalSuccesses, bound)
	}
}

// TestGRPCRetriesBoundedProperty runs calls shaped as the retry loop makes
// them (an attempt, its outcome recorded, a retry asked for after a
// failure) against GRPC budgets, in random sequences and from 8 goroutines
// at once, and checks gRPC's promise in numbers: a retry follows a failure
// that took a whole token, and is granted only while more than half of
// MaxTokens is left, so the retries granted stay below Start − MaxTokens/2
// + TokenRatio × successes, whatever the order of the outcomes.
func TestGRPCRetriesBoundedProperty(t *testing.T) {
	configs := []GRPCConfig{
		Recommended(),
		{},
		{MaxTokens: 3, TokenRatio: 0.5},
		{MaxTokens: 1000, TokenRatio: 0.001, Start: 700},
		{MaxTokens: 0.001, TokenRatio: 1},
	}
	src := rand.New(rand.NewPCG(3, 5))
	for ci, c := range configs {
		for _, goroutines := range []int{1, 8} {
			for seq := range 20 {
				g, err := NewGRPC(c)
				if err != nil {
					t.Fatal(err)
				}
				start := g.Level()
				half := math.Round(c.MaxTokens*1000) / 2000
				if c.MaxTokens == 0 {
					half = DefaultMaxTokens / 2.0
				}
				ratio := c.TokenRatio
				if ratio == 0 {
					ratio = DefaultTokenRatio
				}
				bound := func(successes int64) float64 { return start - half + ratio*float64(successes) }
				var granted, successes atomic.Int64
				failRate := loopCalls(src, seq, goroutines, func(r *rand.Rand, failRate float64) {
					for attempt := 0; attempt < 3; attempt++ {
						if r.Float64() >= failRate {
							successes.Add(1) // counted first: never fewer than the bucket saw
							g.RecordAt(t0, attempt == 0, true)
							return
						}
						g.RecordAt(t0, attempt == 0, false)
						if attempt == 2 || !g.AllowRetryAt(t0, false) {
							return
						}
						// Sequentially the bound holds at every grant.
						if n, b := float64(granted.Add(1)), bound(successes.Load()); goroutines == 1 && !(n < b) {
							t.Errorf("config %d, sequence %d (failure rate %.2f): retry %v granted after %d successes; want fewer than %v",
								ci, seq, failRate, n, successes.Load(), b)
						}
					}
				})
				bound0 := bound(successes.Load())
				if gr := float64(granted.Load()); !(gr < bound0) && gr > 0 {
					t.Errorf("config %d, %d goroutines, sequence %d (failure rate %.2f): %v retries granted, %d successes; want fewer than %v",
						ci, goroutines, seq, failRate, gr, successes.Load(), bound0)
				}
			}
		}
	}
}

// TestBucketRetriesBoundedProperty runs calls shaped as the retry loop makes
// them against Buckets, in random sequences and from 8 goroutines, and
// checks the AWS SDKs' quota in numbers: what the granted retries cost
// never exceeds Capacity plus what successes gave back (RetryCost per
// successful retry, NoRetryIncrement per success at the first attempt), and
// a bucket whose dependency only fails is left with less than the cheapest
// retry.
func TestBucketRetriesBoundedProperty(t *testing.T) {
	configs := []BucketConfig{{}, {Capacity: 50, RetryCost: 7, ThrottleCost: 3, TimeoutCost: 10, NoRetryIncrement: 2}, {Capacity: 1, RetryCost: 1}}
	src := rand.New(rand.NewPCG(5, 3))
	for ci, c := range configs {
		for _, goroutines := range []int{1, 8} {
			for seq := range 20 {
				b, err := NewBucket(c)
				if err != nil {
					t.Fatal(err)
				}
				capacity := b.Level()
				var spent, earned atomic.Int64
				failRate := loopCalls(src, seq, goroutines, func(r *rand.Rand, failRate float64) {
					for attempt := 0; attempt < 3; attempt++ {
						if r.Float64() >= failRate {
							n := b.increment
							if attempt > 0 {
								n = b.cost
							}
							earned.Add(n) // counted first: never less than the bucket got
							b.RecordAt(t0, attempt == 0, true)
							return
						}
						b.RecordAt(t0, attempt == 0, false)
						throttled, timeout := r.IntN(3) == 0, r.IntN(3) == 0
						if attempt == 2 || !b.AllowRetryClassAt(t0, throttled, timeout) {
							return
						}
						spent.Add(b.costOf(throttled, timeout))
						if r.IntN(10) == 0 { // its breaker refused it: the cost comes back
							b.CancelRetryAt(t0, throttled, timeout)
							spent.Add(-b.costOf(throttled, timeout))
							return
						}
					}
				})
				if s, bound := float64(spent.Load()), capacity+float64(earned.Load()); s > bound {
					t.Errorf("config %d, %d goroutines, sequence %d (failure rate %.2f): granted retries cost %v, more than Capacity + what successes gave back, %v",
						ci, goroutines, seq, failRate, s, bound)
				}
				if failRate == 1 && goroutines == 1 {
					if l := b.Level(); l < 0 || l >= float64(min(b.cost, b.throttleCost, b.timeoutCost)) {
						t.Errorf("config %d, sequence %d: level %v after a dependency that only fails, want less than the cheapest retry", ci, seq, l)
					}
				}
			}
		}
	}
}

// loopCalls makes 500 calls in each of goroutines goroutines at once, each
// goroutine drawing from its own source seeded from src, and returns the
// share of attempts that fail, which call is given: 1, 0.9 and 0.5 for
// sequences 0 to 2, a random share after them.
func loopCalls(src *rand.Rand, seq, goroutines int, call func(r *rand.Rand, failRate float64)) float64 {
	failRate := []float64{1, 0.9, 0.5}[min(seq, 2)]
	if seq >= 3 {
		failRate = src.Float64()
	}
	seed := src.Uint64()
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 500 {
				call(r, failRate)
			}
		})
	}
	wg.Wait()
	return failRate
}
