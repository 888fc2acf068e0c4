package redis_test

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// TestBudgetFleetCountsProperty: 8 processes (goroutines, each with its own
// redis.Budget and connection) record random outcomes on their own stepped
// clocks over 5 s of one 10 s window, ask for retries, cancel some, and
// sync every 100 to 300 ms, concurrently; half of them reach Redis through
// a link that loses a reply now and then (the script ran, the process saw
// an error). Once every process has synced, the fleet's totals are what
// one in-memory budget.Share fed the same outcomes counts: every success
// and every retry granted and not cancelled, none lost, none twice. Over
// several seeds.
func TestBudgetFleetCountsProperty(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t)
	const procs, steps = 8, 500 // 10 ms steps: 5 s
	for seed := range uint64(4) {
		name := "prop" + string(rune('a'+seed))
		bs := make([]*redis.Budget, procs)
		for i := range bs {
			addr := srv.Addr
			if i%2 == 1 {
				addr = link.Addr
			}
			c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 2, MaxRetries: -1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = c.Close() })
			var err error
			if bs[i], err = redis.NewBudget(redis.BudgetConfig{Client: c, Name: name, MinPerSecond: budget.DefaultMinPerSecond}); err != nil {
				t.Fatal(err)
			}
		}
		// The in-memory reference: a floor so high that it takes every
		// retry it is given, so that its level counts them all.
		ref, err := budget.NewShare(budget.ShareConfig{MinPerSecond: 1e5})
		if err != nil {
			t.Fatal(err)
		}
		var refMu sync.Mutex
		var wg sync.WaitGroup
		failed := make([]int, procs)
		for i, b := range bs {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				next := r.IntN(10)
				for s := range steps {
					now := t0.Add(time.Duration(s) * 10 * time.Millisecond)
					for range r.IntN(4) {
						ok := r.IntN(3) != 0
						b.RecordAt(now, true, ok)
						var granted, cancel bool
						if !ok {
							granted = b.AllowRetryAt(now, false)
							cancel = granted && r.IntN(5) == 0
							if cancel {
								b.CancelRetryAt(now, false, false)
							}
						}
						refMu.Lock()
						ref.RecordAt(now, true, ok)
						if granted && !ref.AllowRetryAt(now, false) {
							t.Error("the reference refused a retry")
						}
						if cancel {
							ref.CancelRetryAt(now, false, false)
						}
						refMu.Unlock()
					}
					if i == 1 && s%37 == 0 {
						link.DropNextReply() // the next reply on the link, whoever's
					}
					if s == next {
						if err := b.SyncAt(t.Context(), now); err != nil {
							failed[i]++
						}
						next += 10 + r.IntN(21)
					}
				}
			})
		}
		wg.Wait()
		link.Up()
		end := t0.Add(steps * 10 * time.Millisecond)
		for _, b := range bs {
			retrySync(t, "process", func() error { return b.SyncAt(t.Context(), end) })
		}
		st := fleetTotals(t, bs[0], end)
		refMu.Lock()
		want := ref.LevelAt(end)
		refMu.Unlock()
		got := 0.2*float64(st.Successes) + 1e5*10 - float64(st.Retries)
		t.Logf("seed %d: %d successes, %d retries in Redis; syncs failed per process %v", seed, st.Successes, st.Retries, failed)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("seed %d: the fleet's totals (%d successes, %d retries) give a level of %v, the in-memory budget fed the same outcomes %v",
				seed, st.Successes, st.Retries, got, want)
		}
	}
}
