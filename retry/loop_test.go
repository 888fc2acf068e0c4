package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// TestCallerGoneIsNotAFailure: an attempt that fails after the caller
// cancelled (with an error of its own, such as the EOF of a cut
// connection, not the context's error) says nothing about the dependency.
// The breaker must not count it, nor the throttle and the budget.
func TestCallerGoneIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.Config{ConsecutiveFailures: 1})
		if err != nil {
			t.Fatal(err)
		}
		bu, th := &fakeBudget{allow: true}, &fakeThrottle{}
		p := retry.Policy{Env: &retry.Env{Breaker: br, Budget: bu, Throttle: th}}
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			err := retry.Do(ctx, p, func(context.Context) error {
				cancel() // the caller gives up while the attempt runs
				return io.ErrUnexpectedEOF
			})
			if e := asError(t, err); e.Reason != retry.ReasonCancelled || e.Attempts != 1 {
				t.Fatalf("Do = %v, want cancelled after 1 attempt", err)
			}
		}
		if s := br.State(); s != breaker.Closed {
			t.Errorf("breaker %v after 3 attempts that failed once their callers had gone, want closed", s)
		}
		if len(bu.records) != 0 || len(th.throttled) != 0 {
			t.Errorf("budget told %v, throttle told %v; want neither told of attempts whose callers had gone", bu.records, th.throttled)
		}
		// The same failure while the caller waits trips it.
		_ = retry.Do(context.Background(), retry.Policy{MaxAttempts: 1, Env: p.Env}, func(context.Context) error {
			return io.ErrUnexpectedEOF
		})
		if s := br.State(); s != breaker.Open {
			t.Errorf("breaker %v after a failure, want open", s)
		}
	})
}

// The loop tells a budget that charges by class (budget.Bucket, the AWS
// quota) whether a retry follows a throttling answer: a call that is
// throttled twice then fails once more pays 5 + 5 for its two retries, not
// 14 + 14.
func TestClassBudgetChargesThrottledRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want float64
	}{
		{"throttled", retry.Throttling(errors.New("429")), 500 - 2*budget.DefaultThrottleCost},
		{"transient", errors.New("500"), 500 - 2*budget.DefaultRetryCost},
	} {
		b, err := budget.NewBucket(budget.BucketConfig{})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{MaxAttempts: 3, Env: &retry.Env{Budget: b, Sleep: func(context.Context, time.Duration) error { return nil }}}
		_ = retry.Do(context.Background(), p, func(context.Context) error { return tc.err })
		if got := b.Level(); got != tc.want {
			t.Errorf("%s: level %v after two retries, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHintFitsDeadline: a server hint that ends before the deadline is
// honoured, its jitter shrunk to the time left (the wait ends before the
// deadline, so that the attempt has some time); only a hint that itself
// ends at or after the deadline gives up.
func TestHintFitsDeadline(t *testing.T) {
	tests := []struct {
		name     string
		hint     time.Duration
		left     time.Duration
		draw     float64
		wantWait time.Duration // 0: gives up (Deadline)
	}{
		{"jitter fits: unchanged", time.Second, 2 * time.Second, 0.5, 1100 * time.Millisecond},
		{"jitter shrunk to the 100ms left", time.Second, 1100 * time.Millisecond, 0.9, 1090 * time.Millisecond},
		{"largest draw ends just before the deadline", time.Second, 1100 * time.Millisecond, 1, 1100*time.Millisecond - 1},
		{"hint ends exactly at the deadline: no time left for the attempt", time.Second, time.Second, 0.9, 0},
		{"hint ends after the deadline", 1200 * time.Millisecond, 1100 * time.Millisecond, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tt.left)
				defer cancel()
				var got retry.Wait
				p := retry.Policy{
					Env:     &retry.Env{Rand: func() float64 { return tt.draw }},
					OnRetry: func(w retry.Wait) { got = w },
				}
				calls := 0
				start := time.Now()
				err := retry.Do(ctx, p, func(context.Context) error {
					if calls++; calls == 1 {
						return retry.After(errFlaky, tt.hint)
					}
					return nil
				})
				if tt.wantWait == 0 {
					e := asError(t, err)
					if e.Reason != retry.ReasonDeadline || e.Wait != tt.hint || e.Limit != tt.left || calls != 1 {
						t.Fatalf("got %v after %d calls, want a deadline give-up naming the hint %v and the %v left", err, calls, tt.hint, tt.left)
					}
					return
				}
				if err != nil || calls != 2 {
					t.Fatalf("Do = %v after %d calls, want success at the second", err, calls)
				}
				if got.Delay != tt.wantWait || got.Source != event.ServerHint || time.Since(start) != tt.wantWait {
					t.Errorf("waited %v (%v, %v elapsed), want %v from the server", got.Delay, got.Source, time.Since(start), tt.wantWait)
				}
			})
		})
	}
}

// TestLoopSteps drives a Loop by hand, as a driver on virtual time does:
// the decisions come with no clock, no sleep and no goroutine.
func TestLoopSteps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := &fakeThrottle{wait: 30 * time.Millisecond}
	br := &fakeBreaker{refuseFrom: 3}
	p := retry.Policy{MaxAttempts: 5, Env: &retry.Env{Throttle: th, Breaker: br, Rand: half}}
	ctx := context.Background()
	var l retry.Loop
	l.Start(ctx, &p, t0)
	var tk retry.Ticket
	d := l.Before(ctx, t0, &tk)
	if d.Verdict != retry.Sleep || d.Wait != 30*time.Millisecond || d.Source != event.RateLimit {
		t.Fatalf("first Before = %+v, want the throttle's 30ms wait", d)
	}
	th.wait = time.Hour // not asked again for the same attempt
	now := t0.Add(30 * time.Millisecond)
	if d = l.Before(ctx, now, &tk); d.Verdict != retry.Send || tk.Attempt() != 1 {
		t.Fatalf("Before after the wait = %+v (attempt %d), want Send attempt 1", d, tk.Attempt())
	}
	now = now.Add(10 * time.Millisecond)
	d = l.After(ctx, now, &tk, errFlaky)
	if d.Verdict != retry.Sleep || d.Source != event.Backoff || d.Wait != 25*time.Millisecond {
		t.Fatalf("After a failure = %+v, want the backoff's 25ms (half of 50ms)", d)
	}
	th.wait = 0
	tk = retry.Ticket{}
	now = now.Add(d.Wait)
	if d = l.Before(ctx, now, &tk); d.Verdict != retry.Send || tk.Attempt() != 2 {
		t.Fatalf("second Before = %+v, want Send attempt 2", d)
	}
	d = l.After(ctx, now, &tk, errFlaky)
	tk = retry.Ticket{}
	now = now.Add(d.Wait)
	d = l.Before(ctx, now, &tk)
	if d.Verdict != retry.GiveUp || d.Reason != retry.ReasonBreakerOpen {
		t.Fatalf("third Before = %+v, want the breaker's refusal", d)
	}
	e := l.Err()
	if e.Attempts != 2 || e.Wait != 7*time.Second || !errors.Is(e, errFlaky) || e.Elapsed != now.Sub(t0) {
		t.Errorf("Err = %+v, want 2 attempts, the breaker's 7s and the last error", e)
	}
	if l.Err() != e {
		t.Error("Err returned a different *Error on its second call")
	}
}

// BenchmarkLoopGuardedSuccess measures a first attempt that succeeds
// through a breaker and a budget: the whole Loop, with its clock reads.
func BenchmarkLoopGuardedSuccess(b *testing.B) {
	br, _ := breaker.New(breaker.Config{})
	bu, _ := budget.NewShare(budget.ShareConfig{})
	p := retry.Policy{Env: &retry.Env{Breaker: br, Budget: bu}}
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		sink = retry.Do(ctx, p, fn)
	}
}

// TestLoopTicketsInFlight drives a Loop as a hedging driver would: two
// attempts of one call in flight, each through the guards on its own
// ticket; the second wins and the first is cancelled.
func TestLoopTicketsInFlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bh, br := &fakeBulkhead{max: 2}, &fakeBreaker{}
	bu := &fakeBudget{allow: true}
	p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Breaker: br, Budget: bu}}
	ctx := context.Background()
	var l retry.Loop
	l.Start(ctx, &p, t0)
	send := func(tk *retry.Ticket) {
		t.Helper()
		// A slot is free: Before takes it itself.
		if d := l.Before(ctx, t0, tk); d.Verdict != retry.Send {
			t.Fatalf("Before = %+v, want Send with a free bulkhead slot", d)
		}
	}
	var first, hedge retry.Ticket
	send(&first)
	send(&hedge)
	if first.Attempt() != 1 || hedge.Attempt() != 2 || bh.in != 2 || l.Attempts() != 2 {
		t.Fatalf("attempts %d and %d, %d slots held, %d sent; want 1 and 2, 2, 2", first.Attempt(), hedge.Attempt(), bh.in, l.Attempts())
	}
	if d := l.After(ctx, t0.Add(time.Millisecond), &hedge, nil); d.Verdict != retry.Done {
		t.Fatalf("After the hedge's success = %+v, want Done", d)
	}
	l.Cancelled(ctx, t0.Add(time.Millisecond), &first)
	if bh.in != 0 {
		t.Errorf("%d bulkhead slots still held, want 0", bh.in)
	}
	want := []string{"ticket=102 err=<nil>", "ticket=101 err=context canceled"}
	if fmt.Sprint(br.done) != fmt.Sprint(want) {
		t.Errorf("breaker told %q, want %q", br.done, want)
	}
	if want := []string{"first=false success=true"}; fmt.Sprint(bu.records) != fmt.Sprint(want) {
		t.Errorf("budget told %q, want only the hedge's success %q", bu.records, want)
	}
}

// BenchmarkLoopOneRetry measures the Loop's own decisions, as the
// simulator drives it: a call whose first attempt fails and second
// succeeds, on given instants, with no guard, clock, timer or driver.
func BenchmarkLoopOneRetry(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := retry.Policy{Env: &retry.Env{Rand: half}}
	ctx := context.Background()
	var l retry.Loop
	b.ReportAllocs()
	for b.Loop() {
		l.Start(ctx, &p, t0)
		var tk retry.Ticket
		l.Before(ctx, t0, &tk)
		d := l.After(ctx, t0, &tk, errFlaky)
		tk = retry.Ticket{}
		now := t0.Add(d.Wait)
		l.Before(ctx, now, &tk)
		if d = l.After(ctx, now, &tk, nil); d.Verdict != retry.Done {
			b.Fatal(d)
		}
	}
}
