package retry_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// starts counts the calls of an attempt function and how many of them
// began on a context that had not ended.
type starts struct {
	calls, live atomic.Int32
}

func (s *starts) begin(ctx context.Context) {
	s.calls.Add(1)
	if ctx.Err() == nil {
		s.live.Add(1)
	}
}

// A hedge that falls due at the instant the call's time is up (the
// caller's deadline, or MaxElapsed) is not sent and not reported: the
// context that ends then may not have been cancelled yet when the hedge's
// timer is seen (both fire at the same instant), and the hedge used to be
// reported started (AttemptStart, Hedge) and its attempt called on a
// context already over. The runs repeat because which of the two the
// driver sees first is up to the scheduler.
func TestHedgeNotStartedAtDeadline(t *testing.T) {
	for _, c := range []struct {
		name       string
		maxElapsed time.Duration
		timeout    time.Duration
	}{
		{"caller deadline", 0, 50 * time.Millisecond},
		{"MaxElapsed", 50 * time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range 30 {
				synctest.Test(t, func(t *testing.T) {
					obs := &events{}
					s := &starts{}
					fn := func(ctx context.Context) (int, error) {
						s.begin(ctx)
						<-ctx.Done()
						return 0, ctx.Err()
					}
					p := retry.Policy{MaxElapsed: c.maxElapsed,
						Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
					ctx := context.Background()
					if c.timeout > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, c.timeout)
						defer cancel()
					}
					if _, err := retry.HedgeValue(ctx, p, fn, nil); err == nil {
						t.Fatal("HedgeValue succeeded")
					}
					synctest.Wait()
					if n, h, st := s.calls.Load(), obs.count(event.Hedge), obs.count(event.AttemptStart); n != 1 || h != 0 || st != 1 {
						t.Fatalf("run %d: %d attempts called, %d hedge events, %d attempt starts; want 1, 0, 1: the hedge fell due as the call's time ran out", i, n, h, st)
					}
				})
			}
		})
	}
}

// A hedge reported started has begun: its attempt is called before the
// driver can cancel it, on a live context. Here the first attempt answers
// while the driver reports the hedge (its observer lets the answer in and
// waits for it), so the driver finds the answer as soon as the hedge has
// gone and cancels it: the hedge's attempt used to be called only then,
// on a context already cancelled (an HTTP hedge sent nothing), although
// the observer had been told that it started. One processor runs the
// goroutines, so that the scheduler's order is the same on every run:
// a goroutine that has just been started (or woken) runs when the one
// running blocks, and is not stolen by another processor meanwhile.
func TestHedgeReportedStartedBegan(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range 30 {
		synctest.Test(t, func(t *testing.T) {
			answer := make(chan struct{})
			var once sync.Once
			obs := &events{}
			o := event.Func(func(ctx context.Context, e event.Event) {
				obs.Observe(ctx, e)
				if e.Kind == event.Hedge {
					once.Do(func() { close(answer) })
					synctest.Wait() // the first attempt's answer is in
				}
			})
			s := &starts{}
			var n atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				s.begin(ctx)
				k := int(n.Add(1))
				if k == 1 {
					<-answer
					return 1, nil
				}
				<-ctx.Done()
				return k, ctx.Err()
			}
			p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Observer: o}}
			if v, err := retry.HedgeValue(context.Background(), p, fn, nil); err != nil || v != 1 {
				t.Fatalf("HedgeValue = %v, %v; want the first attempt's answer", v, err)
			}
			synctest.Wait()
			hedges, started := obs.count(event.Hedge), obs.count(event.AttemptStart)
			if c, l := s.calls.Load(), s.live.Load(); hedges != 1 || started != int(c) || l != c {
				t.Fatalf("run %d: %d hedge events, %d attempt starts; %d attempts called, %d of them on a live context; want 1 hedge, every attempt reported started called on a live context", i, hedges, started, c, l)
			}
		})
	}
}
