package retry_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// TestHedgedObserverPanicDiscardsValues: the Observer panics while the
// driver handles an attempt's value (a winner's AttemptEnd or HedgeWon, a
// failure reported while a hedge is in flight, the retry scheduled after a
// round failed). HedgeValue panics with the observer's value, and every
// value that it will not return is discarded, the one being handled
// included, as the contract of discard says: an HTTP response in hand when
// the observer panicked was neither returned nor closed.
func TestHedgedObserverPanicDiscardsValues(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		lat     []time.Duration
		errs    []error
		panicOn func(e event.Event) bool
		want    []int // discarded values, sorted
	}{
		{"first attempt's success", []time.Duration{10 * time.Millisecond}, nil,
			func(e event.Event) bool { return e.Kind == event.AttemptEnd && e.Outcome == event.Success }, []int{1}},
		{"hedge won", []time.Duration{time.Second, 10 * time.Millisecond}, nil,
			func(e event.Event) bool { return e.Kind == event.HedgeWon }, []int{1, 2}},
		{"failure while a hedge is in flight", []time.Duration{60 * time.Millisecond, time.Second}, []error{boom},
			func(e event.Event) bool { return e.Kind == event.AttemptEnd && e.Attempt == 1 }, []int{1, 2}},
		{"retry after the round", []time.Duration{10 * time.Millisecond}, []error{boom},
			func(e event.Event) bool { return e.Kind == event.RetryScheduled }, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{lat: c.lat, errs: c.errs}
				obs := event.Func(func(_ context.Context, e event.Event) {
					if c.panicOn(e) {
						panic("observer")
					}
				})
				p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Observer: obs}}
				func() {
					defer func() {
						if v := recover(); v != "observer" {
							t.Fatalf("HedgeValue recovered %v, want the observer's panic", v)
						}
					}()
					_, _ = retry.HedgeValue(context.Background(), p, s.call, s.discard)
				}()
				synctest.Wait() // attempts left in flight return
				s.mu.Lock()
				defer s.mu.Unlock()
				slices.Sort(s.discarded)
				if !slices.Equal(s.discarded, c.want) {
					t.Errorf("discarded %v, want %v: every value not returned", s.discarded, c.want)
				}
			})
		})
	}
}

// hugeHedger is a Hedger whose MaxHedges says "no limit" (the largest
// int): the call's attempt limit bounds its hedges.
type hugeHedger struct{ delay time.Duration }

func (h hugeHedger) PlanAt(time.Time) (time.Duration, bool) { return h.delay, true }
func (hugeHedger) AllowAt(time.Time) error                  { return nil }
func (hugeHedger) ObserveAt(time.Time, time.Duration, bool) {}
func (hugeHedger) MaxHedges() int                           { return math.MaxInt }

// TestHedgerMaxHedgesUnbounded: a Hedger (one of the caller's, not package
// hedge's, which allows at most 10) whose MaxHedges is the largest int
// hedges as the attempt limit allows. The driver sized a buffer by it and
// panicked (makechan: size out of range) before the first attempt; a
// MaxHedges of a million allocated tens of megabytes per call.
func TestHedgerMaxHedgesUnbounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{time.Second, time.Second, 30 * time.Millisecond}}
		p := retry.Policy{MaxAttempts: 4, Env: &retry.Env{Hedger: hugeHedger{10 * time.Millisecond}}}
		// Hedges at 10, 20 and 30ms (the attempt limit); the third
		// attempt, sent at 20ms, answers at 50ms.
		s.answers(t, p, 3, 50*time.Millisecond)
		synctest.Wait()
		if n := s.n.Load(); n != 4 {
			t.Errorf("%d attempts, want 4 (the attempt limit)", n)
		}
	})
}

// TestHedgedAttemptPanics: a hedge panics while the first attempt is still
// in flight. HedgeValue panics with its value on the caller's goroutine;
// the first attempt is cancelled, and when it returns its value is
// discarded and its bulkhead slot handed back; the hedge's slot goes back
// as it panics, and the breaker hears of both attempts' ends.
func TestHedgedAttemptPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bh := mustBulkhead(t, 2)
		br := &countingBreaker{}
		var n atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			k := int(n.Add(1))
			if k == 2 {
				time.Sleep(10 * time.Millisecond)
				panic("attempt 2")
			}
			<-ctx.Done()
			return k, ctx.Err()
		}
		var discarded []int
		var mu sync.Mutex
		discard := func(v int) { mu.Lock(); discarded = append(discarded, v); mu.Unlock() }
		p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Breaker: br, Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		func() {
			defer func() {
				if v := recover(); v != "attempt 2" {
					t.Fatalf("HedgeValue recovered %v, want the attempt's panic", v)
				}
			}()
			_, _ = retry.HedgeValue(context.Background(), p, fn, discard)
		}()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if bh.InUse() != 0 || !slices.Equal(discarded, []int{1}) {
			t.Errorf("%d slots in use, discarded %v; want 0, the first attempt's value", bh.InUse(), discarded)
		}
		if a, d := br.counts(); a != 2 || d != 2 {
			t.Errorf("breaker allowed %d attempts and heard of %d ends, want 2 and 2", a, d)
		}
	})
}

// countingBreaker allows every attempt and counts tickets given and ended.
type countingBreaker struct {
	mu             sync.Mutex
	allowed, ended int
}

func (b *countingBreaker) AllowAt(time.Time, bool) (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed++
	return uint64(b.allowed), nil
}

func (b *countingBreaker) DoneAt(time.Time, uint64, time.Duration, error) {
	b.mu.Lock()
	b.ended++
	b.mu.Unlock()
}

func (b *countingBreaker) counts() (allowed, ended int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allowed, b.ended
}

func mustBulkhead(t *testing.T, limit int) *throttle.Bulkhead {
	t.Helper()
	bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return bh
}
