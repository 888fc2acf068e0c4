package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// paidBudget grants retries at random and counts what it granted and got
// back.
type paidBudget struct {
	mu                sync.Mutex
	r                 *rand.Rand
	granted, refunded int
}

func (b *paidBudget) AllowRetryAt(time.Time, bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r.IntN(5) == 0 {
		return false
	}
	b.granted++
	return true
}
func (b *paidBudget) RecordAt(time.Time, bool, bool) {}
func (b *paidBudget) CancelRetryAt(time.Time, bool, bool) {
	b.mu.Lock()
	b.refunded++
	b.mu.Unlock()
}

// startsAndEnds counts each attempt's starts and ends.
type startsAndEnds struct {
	mu           sync.Mutex
	starts, ends map[int]int
	later        int // attempts started after the first: retries and hedges
	cancelled    int // attempts ended cancelled: not answered
}

func (o *startsAndEnds) Observe(_ context.Context, e event.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e.Kind {
	case event.AttemptStart:
		o.starts[e.Attempt]++
		if e.Attempt > 1 {
			o.later++
		}
	case event.AttemptEnd:
		o.ends[e.Attempt]++
		if e.Outcome == event.Cancelled {
			o.cancelled++
		}
	}
}

// turnsKept is a throttle that keeps turns and gives one at random after
// a wait, which a hedge refuses.
type turnsKept struct {
	turns
	r *rand.Rand
}

func (t *turnsKept) AdmitAt(now time.Time) (time.Duration, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.r.IntN(6) {
	case 0:
		return 0, errors.New("throttle: rejected locally")
	case 1:
		t.admitted++
		return 5 * time.Millisecond, nil
	}
	t.admitted++
	return 0, nil
}

// TestHedgedCallsBalanced runs hedged calls with random latencies, errors,
// server hints, deadlines and cancellations through real goroutines and
// timers (under synctest), and checks, once every attempt has returned,
// that each bulkhead slot went back, each breaker ticket was reported
// once, each throttle turn was handed back or answered (or its attempt
// ended cancelled), each retry or hedge the budget paid for was sent or
// given back, and each attempt started ended once.
func TestHedgedCallsBalanced(t *testing.T) {
	for seed := range uint64(60) {
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			var mu sync.Mutex // r is used by the attempts' goroutines
			draw := func(n int) int { mu.Lock(); defer mu.Unlock(); return r.IntN(n) }
			bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 2 + draw(3)})
			if err != nil {
				t.Fatal(err)
			}
			br, err := breaker.New(breaker.Config{CheckTickets: true, MinCalls: 1000})
			if err != nil {
				t.Fatal(err)
			}
			bu := &paidBudget{r: rand.New(rand.NewPCG(seed, 12))}
			obs := &startsAndEnds{starts: map[int]int{}, ends: map[int]int{}}
			th := &turnsKept{r: rand.New(rand.NewPCG(seed, 13))}
			env := &retry.Env{Bulkhead: bh, Breaker: br, Budget: bu, Observer: obs, Throttle: th,
				Hedger: fixedHedger(t, 20*time.Millisecond, 2)}
			for call := range 10 {
				p := retry.Policy{MaxAttempts: 2 + draw(4), Env: env}
				if draw(3) == 0 {
					p.MaxElapsed = time.Duration(10+draw(300)) * time.Millisecond
				}
				ctx, cancel := context.WithCancel(context.Background())
				if draw(3) == 0 {
					time.AfterFunc(time.Duration(draw(200))*time.Millisecond, cancel)
				}
				fn := func(ctx context.Context) (int, error) {
					lat := time.Duration(draw(80)) * time.Millisecond
					var err error
					switch draw(5) {
					case 0:
						err = retry.After(errors.New("503"), time.Duration(draw(100))*time.Millisecond)
					case 1, 2:
						err = errors.New("500")
					case 3:
						if draw(4) == 0 {
							err = retry.Permanent(errors.New("400"))
						}
					}
					select {
					case <-time.After(lat):
						return 0, err
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				}
				_, _ = retry.HedgeValue(ctx, p, fn, nil)
				synctest.Wait() // the attempts left behind return and are reported
				cancel()
				step := fmt.Sprintf("seed %d call %d", seed, call)
				if n := bh.InUse(); n != 0 {
					t.Fatalf("%s: %d bulkhead slots held once every attempt returned", step, n)
				}
				if n := br.DoubleReports(); n != 0 {
					t.Fatalf("%s: %d breaker tickets reported twice", step, n)
				}
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if bu.granted != bu.refunded+obs.later {
				t.Fatalf("seed %d: budget granted %d retries and hedges, got %d back, %d sent", seed, bu.granted, bu.refunded, obs.later)
			}
			// Every turn the throttle gave was handed back, answered, or
			// belongs to an attempt that ended cancelled (not answered).
			if th.admitted != th.cancelled+th.record+obs.cancelled {
				t.Fatalf("seed %d: throttle gave %d turns, got %d back, heard %d answers, %d attempts ended cancelled",
					seed, th.admitted, th.cancelled, th.record, obs.cancelled)
			}
			for n, s := range obs.starts {
				if obs.ends[n] != s {
					t.Fatalf("seed %d: attempt %d started %d times, ended %d times", seed, n, s, obs.ends[n])
				}
			}
		})
	}
}
