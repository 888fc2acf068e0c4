package retry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// kindsOf lists the events r saw as kind#attempt.
func kindsOf(r *events) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.all {
		out = append(out, fmt.Sprintf("%v#%d", e.Kind, e.Attempt))
	}
	return strings.Join(out, " ")
}

// TestCancelledBeforeFirstAttempt: a call whose context has ended before
// its first attempt sends nothing, asks no guard, and its events and
// error agree: no attempt event, one give-up after 0 attempts, reason
// cancelled, matching the context's error. Every driver of the loop says
// the same (Do, DoValue, a Retrier, HedgeValue).
func TestCancelledBeforeFirstAttempt(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	drivers := map[string]func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error{
		"Do": retry.Do,
		"DoValue": func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error {
			_, err := retry.DoValue(ctx, p, func(ctx context.Context) (int, error) { return 1, fn(ctx) })
			return err
		},
		"Retrier": func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error {
			r, err := retry.New(p)
			if err != nil {
				return err
			}
			return r.Do(ctx, fn)
		},
		"HedgeValue": func(ctx context.Context, p retry.Policy, fn func(context.Context) error) error {
			env := *p.Env
			env.Hedger = fixedHedger(t, time.Hour, 1)
			p.Env = &env
			_, err := retry.HedgeValue(ctx, p, func(ctx context.Context) (int, error) { return 1, fn(ctx) }, nil)
			return err
		},
	}
	for name, do := range drivers {
		for _, ctx := range []context.Context{cancelled, expired} {
			t.Run(name+"/"+ctx.Err().Error(), func(t *testing.T) {
				var (
					obs   events
					calls int
				)
				br, bu, th := &fakeBreaker{}, &fakeBudget{allow: true}, &fakeThrottle{}
				p := retry.Policy{Env: &retry.Env{Observer: &obs, Breaker: br, Budget: bu, Throttle: th}}
				err := do(ctx, p, func(context.Context) error {
					calls++
					return ctx.Err()
				})
				e := asError(t, err)
				if calls != 0 || e.Attempts != 0 || e.Reason != retry.ReasonCancelled ||
					!errors.Is(err, ctx.Err()) || !errors.Is(err, retry.ErrCancelled) {
					t.Fatalf("got %v (Attempts %d, Reason %v) after %d calls; want cancelled after 0 attempts, matching %v",
						err, e.Attempts, e.Reason, calls, ctx.Err())
				}
				if !strings.Contains(err.Error(), "gave up after 0 attempts") {
					t.Errorf("message %q does not say 0 attempts", err)
				}
				if got := kindsOf(&obs); got != "gave_up#0" {
					t.Errorf("events %q, want gave_up#0 alone", got)
				}
				if g := obs.of(event.GaveUp); len(g) == 1 && (g[0].Reason != "cancelled" || !errors.Is(g[0].Err, ctx.Err())) {
					t.Errorf("gave_up reason %q err %v, want cancelled with %v", g[0].Reason, g[0].Err, ctx.Err())
				}
				if br.n != 0 || len(br.done) != 0 || len(bu.records) != 0 || bu.asked != 0 || len(th.throttled) != 0 {
					t.Errorf("breaker asked %d, told %v; budget asked %d, told %v; throttle told %v; want none asked or told",
						br.n, br.done, bu.asked, bu.records, th.throttled)
				}
			})
		}
	}
}

// TestCancelledAsWaitEnds: the caller's context ends as the wait before
// a retry ends (the wait reports that it is over). The retry is not sent:
// fn is not called with an ended context, no attempt 2 is reported, and
// the call gives up cancelled after the 1 attempt it made.
func TestCancelledAsWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var obs events
		p := retry.Policy{Env: &retry.Env{Observer: &obs, Rand: half,
			Sleep: func(_ context.Context, d time.Duration) error {
				time.Sleep(d)
				cancel() // the caller gives up at the very end of the wait
				return nil
			}}}
		var calls int
		err := retry.Do(ctx, p, func(ctx context.Context) error {
			calls++
			if err := ctx.Err(); err != nil {
				return err
			}
			return errFlaky
		})
		e := asError(t, err)
		if calls != 1 || e.Attempts != 1 || e.Reason != retry.ReasonCancelled || !errors.Is(err, errFlaky) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v (Attempts %d) after %d calls; want cancelled after 1 attempt, with its error and the context's", err, e.Attempts, calls)
		}
		if got, want := kindsOf(&obs), "attempt_start#1 attempt_end#1 retry_scheduled#1 gave_up#1"; got != want {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}
