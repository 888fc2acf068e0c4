package retry_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// stall is an observer that holds the driver's goroutine for a while when
// attempt n's failure is reported, as a slow log write would.
type stall struct {
	events
	n int
	d time.Duration
}

func (s *stall) Observe(ctx context.Context, e event.Event) {
	s.events.Observe(ctx, e)
	if e.Kind == event.AttemptEnd && e.Attempt == s.n && e.Err != nil {
		time.Sleep(s.d)
	}
}

// An answer that is waiting when the next hedge falls due is taken first:
// no hedge is sent for a call that has its answer. Here the driver is held
// up (by its observer) while the first attempt answers and the second
// hedge's delay passes, so both are ready when it looks again.
func TestHedgeNotSentWhenAnswerIsDue(t *testing.T) {
	boom := errors.New("boom")
	for i := range 100 {
		synctest.Test(t, func(t *testing.T) {
			obs := &stall{n: 2, d: 100 * time.Millisecond}
			// The first attempt answers at 120ms; the hedge sent at 50ms
			// fails at 60ms and its report holds the driver until 160ms;
			// the second hedge fell due at 100ms.
			s := &script{lat: []time.Duration{120 * time.Millisecond, 10 * time.Millisecond, time.Millisecond}, errs: []error{nil, boom}}
			p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
			s.answers(t, p, 1, 160*time.Millisecond)
			synctest.Wait()
			if n := s.n.Load(); n != 2 || obs.count(event.Hedge) != 1 {
				t.Fatalf("run %d: %d attempts, %d hedges; want 2 attempts, 1 hedge: none once the answer is in", i, n, obs.count(event.Hedge))
			}
		})
	}
}

// Once the caller's context has ended, no hedge is sent, even when the
// attempt in flight is slow to return.
func TestHedgeNotSentAfterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		var n atomic.Int32
		slow := func(ctx context.Context) (int, error) {
			n.Add(1)
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // clean-up that ignores ctx
			return 0, ctx.Err()
		}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 10*time.Millisecond, 2), Observer: obs}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Millisecond, cancel)
		if _, err := retry.HedgeValue(ctx, p, slow, nil); err == nil {
			t.Fatal("HedgeValue succeeded on a cancelled context")
		}
		time.Sleep(time.Second) // on synctest's virtual clock: the attempts in flight return
		if n.Load() != 1 || obs.count(event.Hedge) != 0 {
			t.Errorf("%d attempts, %d hedges after the call was cancelled; want 1 attempt, no hedge", n.Load(), obs.count(event.Hedge))
		}
	})
}

// countBudget allows up to n retries and counts what it is asked.
type countBudget struct {
	mu    sync.Mutex
	left  int
	asked int
}

func (b *countBudget) AllowRetryAt(time.Time, bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked++
	if b.left == 0 {
		return false
	}
	b.left--
	return true
}

func (b *countBudget) RecordAt(time.Time, bool, bool) {}

// A hedge is charged to the retry budget as a retry is; a hedge it refuses
// leaves the call to its first attempt. After a round whose attempts all
// failed, the retry waits its backoff before it is sent.
func TestHedgeRetryBudgetAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &countBudget{left: 0}
		obs := &events{}
		s := &script{lat: []time.Duration{200 * time.Millisecond, time.Millisecond}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Budget: b, Observer: obs}}
		s.answers(t, p, 1, 200*time.Millisecond)
		if b.asked != 1 || s.n.Load() != 1 || obs.count(event.HedgeRefused) != 1 {
			t.Errorf("empty retry budget: asked %d times, %d attempts, %d refused; want 1, 1, 1", b.asked, s.n.Load(), obs.count(event.HedgeRefused))
		}

		boom := errors.New("boom")
		b = &countBudget{left: 5}
		s = &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}, errs: []error{boom, boom}}
		p = retry.Policy{MaxAttempts: 3, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.None},
			Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Budget: b}}
		// The hedge (sent at 50ms) fails at 70ms, the first attempt at
		// 60ms; the retry goes at 70ms + 1s and answers 10ms later.
		s.answers(t, p, 3, 1080*time.Millisecond)
		if b.asked != 2 {
			t.Errorf("retry budget asked %d times, want 2 (the hedge and the retry)", b.asked)
		}
	})
}

// Cancelling the call cancels every attempt in flight, first attempt and
// hedges, and the call returns at once; nothing is left running (the
// bubble would not end otherwise, and leakcheck checks the package).
func TestHedgeCancelEndsEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{time.Hour}}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(120*time.Millisecond, cancel)
		start := time.Now()
		_, err := retry.HedgeValue(ctx, p, s.call, s.discard)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
		if took := time.Since(start); took != 120*time.Millisecond {
			t.Errorf("returned after %v, want 120ms", took)
		}
		synctest.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n.Load() != 3 || len(s.cancelled) != 3 {
			t.Errorf("%d attempts, cancelled %v; want all 3 cancelled", s.n.Load(), s.cancelled)
		}
	})
}

// The Hedger learns latencies from first attempts that the dependency
// answered or kept past the delay: a call whose context has ended before
// it starts is not planned (not counted among the budget's calls), and a
// first attempt that the caller's context cut short before the delay is
// not observed (its short run says nothing of the dependency's latency);
// one cut after the delay is, as slow.
func TestHedgerIgnoresCallsCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name                    string
			cancelAt                time.Duration // 0: before the call
			calls, seen, slow, sent int
		}{
			{"ended before", 0, 0, 0, 0, 0}, // nothing is sent, as by Do
			{"cut before the delay", 20 * time.Millisecond, 1, 0, 0, 1},
			{"cut after the delay", 70 * time.Millisecond, 1, 1, 1, 2},
		} {
			h := fixedHedger(t, 50*time.Millisecond, 1)
			s := &script{lat: []time.Duration{time.Hour}}
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancelAt == 0 {
				cancel()
			} else {
				time.AfterFunc(c.cancelAt, cancel)
			}
			_, err := retry.HedgeValue(ctx, retry.Policy{Env: &retry.Env{Hedger: h}}, s.call, s.discard)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: err %v, want context.Canceled", c.name, err)
			}
			synctest.Wait()
			st := h.StatsAt(time.Now())
			if st.Calls != c.calls || st.Seen != c.seen || st.Slow != c.slow || int(s.n.Load()) != c.sent {
				t.Errorf("%s: Hedger counted %d calls, %d first attempts seen, %d slow; %d attempts made; want %d, %d, %d; %d",
					c.name, st.Calls, st.Seen, st.Slow, s.n.Load(), c.calls, c.seen, c.slow, c.sent)
			}
		}
	})
}

// A hedge that a guard refuses is not charged: the bulkhead is full (the
// call's first attempt holds its one slot), so the hedge is refused, and
// neither the retry budget (a token bucket: 14 tokens a retry) nor the
// Hedger's budget counts it. Each refused hedge took a retry's cost from the
// bucket and a hedge from the Hedger's budget: a service whose bulkhead is
// full drained its retry budget without sending a single retry.
func TestHedgeRefusedByGuardNotCharged(t *testing.T) {
	bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := budget.NewBucket(budget.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, Brownout: hedge.Off})
	if err != nil {
		t.Fatal(err)
	}
	p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Budget: bk, Hedger: h}}
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		var l retry.Loop
		l.Start(ctx, &p, now)
		h.PlanAt(now)
		var first retry.Ticket
		if d := l.Before(ctx, now, &first); d.Verdict != retry.Send || bh.InUse() != 1 {
			t.Fatalf("call %d: first attempt: %+v, %d slots in use; want Send, holding the free slot", i, d, bh.InUse())
		}
		var hd retry.Ticket
		if d := l.Hedge(ctx, now.Add(10*time.Millisecond), &hd); d.Verdict != retry.GiveUp || d.Reason != retry.ReasonRejectedLocally {
			t.Fatalf("call %d: hedge with the bulkhead full: %+v, want refused (rejected locally)", i, d)
		}
		if d := l.After(ctx, now.Add(20*time.Millisecond), &first, nil); d.Verdict != retry.Done {
			t.Fatalf("call %d: %+v, want Done", i, d)
		}
		now = now.Add(100 * time.Millisecond)
	}
	if lv := bk.Level(); lv != budget.DefaultCapacity {
		t.Errorf("retry budget after 10 hedges refused by the bulkhead: %v tokens, want %v (none spent)", lv, budget.DefaultCapacity)
	}
	if st := h.StatsAt(now); st.Hedges != 0 {
		t.Errorf("the Hedger counts %d hedges sent, want 0", st.Hedges)
	}
}

// Between the two budgets of a hedge, neither counts one the other
// refused: the retry budget refuses (it is empty), and the Hedger does not
// count a hedge sent; the Hedger refuses (its own budget is spent), and the
// retry budget gets back what it took.
func TestHedgeBudgetsChargeOnlySentHedges(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hedgeOnce := func(p *retry.Policy, h *hedge.Hedger) retry.Decision {
		var l retry.Loop
		l.Start(ctx, p, now)
		h.PlanAt(now)
		var first, hd retry.Ticket
		if d := l.Before(ctx, now, &first); d.Verdict != retry.Send {
			t.Fatalf("first attempt: %+v, want Send", d)
		}
		return l.Hedge(ctx, now.Add(10*time.Millisecond), &hd)
	}

	h, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, Brownout: hedge.Off})
	if err != nil {
		t.Fatal(err)
	}
	empty := &countBudget{left: 0}
	if d := hedgeOnce(&retry.Policy{Env: &retry.Env{Budget: empty, Hedger: h}}, h); d.Reason != retry.ReasonBudgetExhausted {
		t.Fatalf("hedge with the retry budget empty: %+v, want refused (budget exhausted)", d)
	}
	if st := h.StatsAt(now.Add(10 * time.Millisecond)); st.Hedges != 0 {
		t.Errorf("the retry budget refused the hedge, the Hedger counts %d hedges sent, want 0", st.Hedges)
	}

	spent, err := hedge.New(hedge.Config{Delay: 10 * time.Millisecond, Brownout: hedge.Off, MinPerSecond: hedge.Off, Budget: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := budget.NewBucket(budget.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if d := hedgeOnce(&retry.Policy{Env: &retry.Env{Budget: bk, Hedger: spent}}, spent); d.Reason != retry.ReasonRejectedLocally {
		t.Fatalf("hedge with the Hedger's budget spent: %+v, want refused (rejected locally)", d)
	}
	if lv := bk.Level(); lv != budget.DefaultCapacity {
		t.Errorf("the Hedger refused the hedge, the retry budget holds %v, want %v", lv, budget.DefaultCapacity)
	}
}
