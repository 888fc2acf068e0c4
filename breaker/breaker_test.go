package breaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

var (
	t0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	boom = errors.New("boom")
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// newB builds a breaker without jitter unless s says otherwise.
func newB(t *testing.T, s Config) *Breaker {
	t.Helper()
	if s.OpenJitter == 0 {
		s.OpenJitter = Disabled
	}
	b, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call makes one call at now with the given error, failing the test if the
// breaker refuses.
func call(t *testing.T, b *Breaker, now time.Time, err error) {
	t.Helper()
	tk, aerr := b.AllowAt(now, false)
	if aerr != nil {
		t.Fatalf("at %v: refused: %v", now.Sub(t0), aerr)
	}
	b.DoneAt(now, tk, time.Millisecond, err)
}

func wantState(t *testing.T, b *Breaker, now time.Time, want State) {
	t.Helper()
	if got := b.StateAt(now); got != want {
		t.Fatalf("at +%v: state %v, want %v", now.Sub(t0), got, want)
	}
}

func TestDefaultsTripOnRatioAfterMinCalls(t *testing.T) {
	b := newB(t, Config{})
	for i := 0; i < 19; i++ {
		call(t, b, at(time.Duration(i)*time.Second), boom)
	}
	wantState(t, b, at(19*time.Second), Closed) // 19 calls: below MinCalls 20
	call(t, b, at(19*time.Second), boom)        // 20 of 20 failed
	wantState(t, b, at(19*time.Second), Open)
	if got := b.Trips(); got != 1 {
		t.Fatalf("trips %d, want 1", got)
	}
}

func TestRatioBoundary(t *testing.T) {
	for _, c := range []struct {
		successes, failures int
		want                State
	}{
		{10, 10, Open},   // 50 % of 20: trips (≥)
		{11, 9, Closed},  // 45 %
		{30, 19, Closed}, // 38.8 % over 49 calls
		{0, 20, Open},
	} {
		b := newB(t, Config{})
		for i := 0; i < c.successes; i++ {
			call(t, b, at(0), nil)
		}
		for i := 0; i < c.failures; i++ {
			call(t, b, at(0), boom)
		}
		if got := b.StateAt(at(0)); got != c.want {
			t.Errorf("%d successes then %d failures: %v, want %v", c.successes, c.failures, got, c.want)
		}
	}
}

func TestTimeWindowSlides(t *testing.T) {
	b := newB(t, Config{Window: 10 * time.Second, MinCalls: 4})
	// Three failures at +0 s, then successes later: the window of 10 s in
	// steps of 1 s forgets the failures at +10 s.
	for i := 0; i < 3; i++ {
		call(t, b, at(0), boom)
	}
	// 3 of 4 failed, but a success never trips the breaker: the ratios
	// are evaluated when a failed or slow call is recorded.
	call(t, b, at(5*time.Second), nil)
	wantState(t, b, at(5*time.Second), Closed)
	// One more failure makes 4 of 5.
	call(t, b, at(9*time.Second), boom)
	wantState(t, b, at(9*time.Second), Open)

	b = newB(t, Config{Window: 10 * time.Second, MinCalls: 4})
	for i := 0; i < 3; i++ {
		call(t, b, at(0), boom)
	}
	for i := 0; i < 3; i++ {
		call(t, b, at(10*time.Second), nil)
	}
	// The failures of +0 s left the window at +10 s: 1 of 4 failed.
	call(t, b, at(10*time.Second), boom)
	wantState(t, b, at(10*time.Second), Closed)
}

func TestCountWindowExact(t *testing.T) {
	b := newB(t, Config{WindowCalls: 10}) // MinCalls defaults to 10
	// F S S S S S S F F F: 4 of 10.
	outcomes := []error{boom, nil, nil, nil, nil, nil, nil, boom, boom, boom}
	for _, err := range outcomes {
		call(t, b, at(0), err)
	}
	wantState(t, b, at(0), Closed)
	// The next failure pushes the first F out: still 4 of 10.
	call(t, b, at(time.Hour), boom)
	wantState(t, b, at(time.Hour), Closed)
	// Another: 5 of 10 → trips. Time plays no part in a count window.
	call(t, b, at(2*time.Hour), boom)
	wantState(t, b, at(2*time.Hour), Open)
}

func TestCountWindowBlocks(t *testing.T) {
	// 1000 calls in 125 buckets of 8: the window holds 993 to 1000 calls.
	b := newB(t, Config{WindowCalls: 1000, MinCalls: 100, FailureRatio: 0.1})
	for i := 0; i < 1000; i++ {
		err := error(nil)
		if i >= 901 {
			err = boom
		}
		call(t, b, at(0), err)
	}
	wantState(t, b, at(0), Closed) // 99 of 1000
	// Call 1001 starts a new block; the first block (8 successes) leaves:
	// 100 failures of 993 calls.
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)
}

func TestConsecutiveFailures(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 3, FailureRatio: Disabled})
	call(t, b, at(0), boom)
	call(t, b, at(0), boom)
	call(t, b, at(0), nil) // resets the streak
	call(t, b, at(0), boom)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Closed)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)
}

func TestSlowCalls(t *testing.T) {
	b := newB(t, Config{SlowCall: time.Second, MinCalls: 4, FailureRatio: Disabled})
	slowCall := func(now time.Time, d time.Duration) {
		tk, err := b.AllowAt(now, false)
		if err != nil {
			t.Fatal(err)
		}
		b.DoneAt(now, tk, d, nil)
	}
	slowCall(at(0), 10*time.Millisecond)
	slowCall(at(0), 10*time.Millisecond)
	slowCall(at(0), time.Second) // exactly the threshold counts as slow
	wantState(t, b, at(0), Closed)
	slowCall(at(0), 5*time.Second) // 2 of 4 slow: 50 %
	wantState(t, b, at(0), Open)
	_, err := b.AllowAt(at(0), false)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Cause != nil {
		t.Fatalf("refusal %v: want an *OpenError without a cause (tripped by slowness)", err)
	}
}

func TestOpenRefusesAndSaysWhenToProbe(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, OpenTimeout: 30 * time.Second, Name: "payments"})
	call(t, b, at(0), boom)
	_, err := b.AllowAt(at(12*time.Second), false)
	if !errors.Is(err, ErrOpen) {
		t.Fatalf("err %v, want ErrOpen", err)
	}
	var oe *OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("err %T, want *OpenError", err)
	}
	if oe.Wait != 18*time.Second || oe.RetryAfter() != 18*time.Second || oe.State != Open || oe.Trips != 1 {
		t.Fatalf("got %+v, want Wait 18s, Open, 1 trip", *oe)
	}
	if !errors.Is(err, boom) {
		t.Fatal("the refusal does not unwrap to the failure that tripped the breaker")
	}
	want := `breaker: "payments" open after 1 trip: call refused, next probe in 18s (tripped by: boom)`
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	// Retries are refused as well.
	if _, err := b.AllowAt(at(29*time.Second), true); err == nil {
		t.Fatal("retry allowed while open")
	}
}

func TestHalfOpenProbeClosesWithFreshCounts(t *testing.T) {
	b := newB(t, Config{MinCalls: 2})
	call(t, b, at(0), boom)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)
	wantState(t, b, at(30*time.Second), HalfOpen) // lazily, from now
	tk, err := b.AllowAt(at(30*time.Second), false)
	if err != nil {
		t.Fatalf("probe refused: %v", err)
	}
	// One probe at a time by default.
	_, err = b.AllowAt(at(31*time.Second), true)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.State != HalfOpen || oe.RetryAfter() != -1 {
		t.Fatalf("second probe: %v, want a half-open refusal without hint", err)
	}
	b.DoneAt(at(31*time.Second), tk, time.Millisecond, nil)
	wantState(t, b, at(31*time.Second), Closed)
	if b.Trips() != 0 {
		t.Fatalf("trips %d after closing, want 0", b.Trips())
	}
	// Counts start afresh: one failure is 1 of 1 call, below MinCalls.
	call(t, b, at(32*time.Second), boom)
	wantState(t, b, at(32*time.Second), Closed)
	call(t, b, at(32*time.Second), boom)
	wantState(t, b, at(32*time.Second), Open)
}

func TestFailedProbesLengthenTheOpenPeriod(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, OpenTimeout: 30 * time.Second, MaxOpenTimeout: 100 * time.Second})
	now := at(0)
	call(t, b, now, boom)
	for i, want := range []time.Duration{30, 60, 100, 100} { // ×2 each time, capped
		want *= time.Second
		if _, err := b.AllowAt(now.Add(want-1), false); err == nil {
			t.Fatalf("trip %d: allowed 1ns before %v", i+1, want)
		}
		now = now.Add(want)
		tk, err := b.AllowAt(now, false)
		if err != nil {
			t.Fatalf("trip %d: probe refused at +%v: %v", i+1, want, err)
		}
		b.DoneAt(now, tk, 0, boom)
		wantState(t, b, now, Open)
	}
	if b.Trips() != 5 {
		t.Fatalf("trips %d, want 5", b.Trips())
	}
}

func TestOpenJitter(t *testing.T) {
	b, err := New(Config{ConsecutiveFailures: 1, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	call(t, b, at(0), boom)
	// 30 s + 10 % × 0.5 = 31.5 s.
	_, err = b.AllowAt(at(0), false)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Wait != 31500*time.Millisecond {
		t.Fatalf("wait %v, want 31.5s", oe.Wait)
	}
}

func TestSeveralProbes(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, HalfOpenProbes: 3})
	call(t, b, at(0), boom)
	now := at(30 * time.Second)
	var tks []uint64
	for i := 0; i < 3; i++ {
		tk, err := b.AllowAt(now, false)
		if err != nil {
			t.Fatalf("probe %d refused: %v", i+1, err)
		}
		tks = append(tks, tk)
	}
	if _, err := b.AllowAt(now, false); err == nil {
		t.Fatal("fourth probe allowed")
	}
	b.DoneAt(now, tks[0], 0, nil)
	b.DoneAt(now, tks[1], 0, context.Canceled) // ignored: frees its slot
	wantState(t, b, now, HalfOpen)
	tk, err := b.AllowAt(now, false)
	if err != nil {
		t.Fatalf("the ignored probe's slot was not freed: %v", err)
	}
	b.DoneAt(now, tks[2], 0, nil)
	wantState(t, b, now, HalfOpen) // 2 of 3
	b.DoneAt(now, tk, 0, nil)
	wantState(t, b, now, Closed)

	// And one failure among them reopens it.
	call(t, b, now, boom)
	now = now.Add(30 * time.Second)
	tk1, _ := b.AllowAt(now, false)
	tk2, _ := b.AllowAt(now, false)
	b.DoneAt(now, tk1, 0, nil)
	b.DoneAt(now, tk2, 0, boom)
	wantState(t, b, now, Open)
}

func TestStaleOutcomesAreDropped(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 2})
	old, _ := b.AllowAt(at(0), false) // issued while closed
	call(t, b, at(0), boom)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)
	probe, err := b.AllowAt(at(30*time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	// The closed-state call finishes now, failing: it must not reopen the
	// half-open breaker nor count as the probe.
	b.DoneAt(at(30*time.Second), old, 0, boom)
	wantState(t, b, at(30*time.Second), HalfOpen)
	b.DoneAt(at(30*time.Second), probe, 0, nil)
	wantState(t, b, at(30*time.Second), Closed)
	// The probe's ticket reported again (a bug in the caller) is dropped.
	b.DoneAt(at(30*time.Second), probe, 0, boom)
	b.DoneAt(at(30*time.Second), 0, 0, boom) // a ticket never issued
	call(t, b, at(30*time.Second), boom)
	wantState(t, b, at(30*time.Second), Closed) // one failure since closing
}

type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("status %d", int(e)) }
func (e statusErr) StatusCode() int { return int(e) }

type attemptTimeout struct{ error }

func (attemptTimeout) AttemptTimeout() bool { return true }
func (e attemptTimeout) Unwrap() error      { return e.error }

func TestDefaultClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Outcome
	}{
		{nil, Success},
		{boom, Failure},
		{context.Canceled, Ignore},
		{fmt.Errorf("get: %w", context.Canceled), Ignore},
		{context.DeadlineExceeded, Ignore},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), Ignore},
		{attemptTimeout{fmt.Errorf("get: %w", context.DeadlineExceeded)}, Failure},
		{statusErr(404), Success},
		{fmt.Errorf("wrapped: %w", statusErr(400)), Success},
		{statusErr(408), Failure},
		{statusErr(429), Failure},
		{statusErr(500), Failure},
		{statusErr(503), Failure},
		{statusErr(301), Failure},
		{&PanicError{Value: 1}, Failure},
	} {
		if got := DefaultClassify(c.err); got != c.want {
			t.Errorf("DefaultClassify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestClassifyHook(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 2, Classify: func(err error) Outcome {
		if errors.Is(err, boom) {
			return Ignore
		}
		return Failure
	}})
	for i := 0; i < 5; i++ {
		call(t, b, at(0), boom)
	}
	wantState(t, b, at(0), Closed)
	call(t, b, at(0), errors.New("other"))
	call(t, b, at(0), errors.New("other"))
	wantState(t, b, at(0), Open)
}

func TestRetriesOnly(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 2, RetriesOnly: true})
	call(t, b, at(0), boom)
	call(t, b, at(0), boom)
	wantState(t, b, at(0), Open)
	// First attempts pass, retries do not.
	tk, err := b.AllowAt(at(time.Second), false)
	if err != nil {
		t.Fatalf("first attempt refused: %v", err)
	}
	b.DoneAt(at(time.Second), tk, 0, nil) // not counted while open
	wantState(t, b, at(time.Second), Open)
	if _, err := b.AllowAt(at(time.Second), true); !errors.Is(err, ErrOpen) {
		t.Fatalf("retry: %v, want ErrOpen", err)
	}
	// Half-open: a first attempt's success counts as the probe.
	tk, err = b.AllowAt(at(30*time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.StateAt(at(30*time.Second)), error(nil); err != nil {
		t.Fatal(err)
	}
	retryTk, err := b.AllowAt(at(30*time.Second), true) // the open→half-open move happens here
	if err != nil {
		t.Fatalf("retry probe refused: %v", err)
	}
	b.DoneAt(at(30*time.Second), tk, 0, nil) // ticket from the open state: dropped
	wantState(t, b, at(30*time.Second), HalfOpen)
	first, _ := b.AllowAt(at(30*time.Second), false)
	b.DoneAt(at(30*time.Second), first, 0, nil)
	wantState(t, b, at(30*time.Second), Closed)
	b.DoneAt(at(30*time.Second), retryTk, 0, boom) // stale now
	wantState(t, b, at(30*time.Second), Closed)
}

func TestHooksRunOutsideTheLock(t *testing.T) {
	var mu sync.Mutex
	var changes []string
	var events []event.Event
	var b *Breaker
	b = newB(t, Config{Name: "db", ConsecutiveFailures: 1,
		OnStateChange: func(name string, from, to State) {
			_ = b.Trips() // takes the breaker's lock: deadlocks if called under it
			mu.Lock()
			changes = append(changes, fmt.Sprintf("%s:%v->%v", name, from, to))
			mu.Unlock()
		},
		Observer: event.Func(func(_ context.Context, e event.Event) {
			_ = b.Trips()
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}),
	})
	call(t, b, at(0), boom)
	b.AllowAt(at(time.Second), false)
	tk, _ := b.AllowAt(at(30*time.Second), false)
	b.DoneAt(at(30*time.Second), tk, 0, nil)
	want := "db:closed->open db:open->half_open db:half_open->closed"
	if got := strings.Join(changes, " "); got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	var kinds []string
	for _, e := range events {
		s := e.Kind.String()
		if e.Kind == event.BreakerStateChange {
			s += ":" + e.From + "->" + e.To
		}
		if e.Kind == event.BreakerRejected {
			s += fmt.Sprintf(":%v", e.Wait)
		}
		if e.Component != "breaker" || e.Name != "db" {
			t.Errorf("event %+v: want Component breaker, Name db", e)
		}
		kinds = append(kinds, s)
	}
	want = "breaker_state_change:closed->open breaker_rejected:29s breaker_state_change:open->half_open breaker_state_change:half_open->closed"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestExecute(t *testing.T) {
	ctx := context.Background()
	b := newB(t, Config{ConsecutiveFailures: 2})
	if err := b.Execute(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The caller's own cancellation is not counted.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for i := 0; i < 3; i++ {
		if err := b.Execute(cctx, func(ctx context.Context) error { return ctx.Err() }); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	}
	if s := b.State(); s != Closed {
		t.Fatalf("state %v after cancellations, want closed", s)
	}
	// A panic counts as a failure and is raised again.
	for i := 0; i < 2; i++ {
		func() {
			defer func() {
				if r := recover(); r != "kaput" {
					t.Fatalf("recovered %v, want the original panic value", r)
				}
			}()
			b.Execute(ctx, func(context.Context) error { panic("kaput") })
		}()
	}
	if s := b.State(); s != Open {
		t.Fatalf("state %v after two panics, want open", s)
	}
	called := false
	err := b.Execute(ctx, func(context.Context) error { called = true; return nil })
	var oe *OpenError
	if called || !errors.As(err, &oe) {
		t.Fatalf("open breaker: called %v, err %v", called, err)
	}
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "kaput" {
		t.Fatalf("cause %v, want the *PanicError that tripped it", oe.Cause)
	}
}

func TestAllowPermit(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1})
	p, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Done(nil)
	p, _ = b.Allow()
	p.Done(boom)
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("err %v, want ErrOpen", err)
	}
	var zero Permit
	zero.Done(boom) // the zero Permit does nothing
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		s     Config
		field string
	}{
		{Config{FailureRatio: 1.5}, "FailureRatio"},
		{Config{FailureRatio: Disabled}, "FailureRatio"}, // no trip condition left
		{Config{MinCalls: -1}, "MinCalls"},
		{Config{WindowCalls: 10, MinCalls: 11}, "MinCalls"},
		{Config{Window: time.Millisecond}, "Window"},
		{Config{WindowCalls: -1}, "WindowCalls"},
		{Config{ConsecutiveFailures: -1}, "ConsecutiveFailures"},
		{Config{SlowCall: -1}, "SlowCall"},
		{Config{SlowRatio: 2}, "SlowRatio"},
		{Config{OpenTimeout: -time.Second}, "OpenTimeout"},
		{Config{OpenBackoff: 0.5}, "OpenBackoff"},
		{Config{OpenTimeout: time.Hour, MaxOpenTimeout: time.Minute}, "MaxOpenTimeout"},
		{Config{OpenJitter: 2}, "OpenJitter"},
		{Config{HalfOpenProbes: -1}, "HalfOpenProbes"},
	} {
		_, err := New(c.s)
		var se *configerr.Error
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("New(%+v): %v, want an error naming %s", c.s, err, c.field)
			continue
		}
		if !strings.HasPrefix(err.Error(), "breaker: invalid configuration: "+c.field+": ") || !strings.Contains(err.Error(), "want") {
			t.Errorf("message %q: want the field and the accepted range", err)
		}
	}
	// A gobreaker-like configuration is valid.
	if _, err := New(Config{ConsecutiveFailures: 5, OpenTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrent drives one breaker from many goroutines through every
// state; run with -race.
func TestConcurrent(t *testing.T) {
	var changes sync.Map
	b := newB(t, Config{MinCalls: 10, Window: time.Second, OpenTimeout: 10 * time.Millisecond, HalfOpenProbes: 2,
		SlowCall: 50 * time.Millisecond, OpenBackoff: 1.5, MaxOpenTimeout: 100 * time.Millisecond,
		OnStateChange: func(_ string, from, to State) {
			changes.Store(from.String()+"->"+to.String(), true)
		}})
	const goroutines, n = 16, 2000
	var wg sync.WaitGroup
	var clock atomic.Int64 // one virtual clock: 100 µs per call
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				i := int(clock.Add(1)) / 10
				now := at(time.Duration(i) * time.Millisecond)
				tk, err := b.AllowAt(now, i%3 == 0)
				if err != nil {
					if !errors.Is(err, ErrOpen) {
						t.Error(err)
					}
					continue
				}
				var out error
				if (i/200)%2 == 0 { // alternate healthy and failing phases
					out = boom
				}
				b.DoneAt(now, tk, time.Duration(i%60)*time.Millisecond, out)
				b.StateAt(now)
			}
		}()
	}
	wg.Wait()
	for _, c := range []string{"closed->open", "open->half_open", "half_open->closed"} {
		if _, ok := changes.Load(c); !ok {
			t.Errorf("transition %s never happened", c)
		}
	}
}

// TestNoAllocations: the closed success path (both window kinds, and the
// convenience forms) and a refusal while open allocate nothing.
func TestNoAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for _, s := range []Config{{}, {WindowCalls: 100}, {ConsecutiveFailures: 5, FailureRatio: Disabled}} {
		b := newB(t, s)
		if n := testing.AllocsPerRun(1000, func() {
			tk, _ := b.AllowAt(t0, false)
			b.DoneAt(t0, tk, time.Millisecond, nil)
		}); n != 0 {
			t.Errorf("%+v: AllowAt/DoneAt success: %v allocations, want 0", s, n)
		}
		if n := testing.AllocsPerRun(1000, func() { b.Execute(ctx, ok) }); n != 0 {
			t.Errorf("%+v: Execute success: %v allocations, want 0", s, n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			p, _ := b.Allow()
			p.Done(nil)
		}); n != 0 {
			t.Errorf("%+v: Allow/Done success: %v allocations, want 0", s, n)
		}
	}
	b := newB(t, Config{ConsecutiveFailures: 1})
	call(t, b, t0, boom)
	now := t0.Add(time.Second)
	if n := testing.AllocsPerRun(1000, func() { b.AllowAt(now, false) }); n != 0 {
		t.Errorf("refusal while open: %v allocations, want 0", n)
	}
}

// TestTripDelay measures how long the default breaker takes to trip when a
// dependency that was healthy for a minute starts failing every call, at
// several call rates: the figures quoted in docs/overload.md.
func TestTripDelay(t *testing.T) {
	for _, c := range []struct {
		perSecond int
		want      time.Duration // upper bound
	}{
		{1, 16 * time.Second},
		{10, 16 * time.Second},
		{1000, 16 * time.Second},
		{0, 0}, // one call every 2 s: below MinCalls per window, the ratio never trips
	} {
		b := newB(t, Config{})
		interval := 2 * time.Second
		if c.perSecond > 0 {
			interval = time.Second / time.Duration(c.perSecond)
		}
		outage := at(time.Minute)
		tripped := time.Duration(-1)
		for now := at(0); now.Before(at(3 * time.Minute)); now = now.Add(interval) {
			tk, err := b.AllowAt(now, false)
			if err != nil {
				tripped = now.Sub(outage)
				break
			}
			var out error
			if !now.Before(outage) {
				out = boom
			}
			b.DoneAt(now, tk, time.Millisecond, out)
		}
		if c.want == 0 {
			t.Logf(" 0.5 calls/s: tripped: %v (never: the window never holds MinCalls calls)", tripped >= 0)
			if tripped >= 0 {
				t.Errorf("one call every 2 s: tripped after %v, want never (MinCalls 20 in 30 s)", tripped)
			}
			continue
		}
		t.Logf("%4d calls/s: tripped %v after the outage began", c.perSecond, tripped)
		if tripped < 0 || tripped > c.want {
			t.Errorf("%d calls/s: tripped after %v, want within %v", c.perSecond, tripped, c.want)
		}
	}
}

// OpenUntil says when the open period ends, only while it runs; a failed
// probe starts a longer one.
func TestOpenUntil(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, OpenTimeout: 30 * time.Second})
	if u, ok := b.OpenUntil(at(0)); ok {
		t.Fatalf("closed: OpenUntil %v, true; want false", u)
	}
	call(t, b, at(time.Second), boom)
	for _, now := range []time.Time{at(time.Second), at(30 * time.Second), at(31*time.Second - 1)} {
		if u, ok := b.OpenUntil(now); !ok || !u.Equal(at(31*time.Second)) {
			t.Fatalf("at +%v: OpenUntil %v, %v; want +31s, true", now.Sub(t0), u.Sub(t0), ok)
		}
	}
	if _, ok := b.OpenUntil(at(31 * time.Second)); ok {
		t.Fatal("at the end of the open period: OpenUntil true, want false")
	}
	tk, err := b.AllowAt(at(31*time.Second), false) // the probe: half-open
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.OpenUntil(at(31 * time.Second)); ok {
		t.Fatal("half-open: OpenUntil true, want false")
	}
	b.DoneAt(at(32*time.Second), tk, 0, boom)
	if u, ok := b.OpenUntil(at(32 * time.Second)); !ok || !u.Equal(at(92*time.Second)) {
		t.Fatalf("after a failed probe: OpenUntil %v, %v; want +92s (60 s), true", u.Sub(t0), ok)
	}
}

// TestExecuteCallerGoneIsNotAFailure: an error that fn returns after the
// caller cancelled (here a cut connection's EOF, not the context's own
// error) says nothing about the dependency and must not trip the breaker.
func TestExecuteCallerGoneIsNotAFailure(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 3; i++ {
		if err := b.Execute(ctx, func(context.Context) error { return io.ErrUnexpectedEOF }); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Execute = %v, want fn's error", err)
		}
	}
	if s := b.State(); s != Closed {
		t.Fatalf("state %v after 3 failures returned once the caller had cancelled, want closed", s)
	}
	// The same errors while the caller still waits do trip it.
	for i := 0; i < 2; i++ {
		_ = b.Execute(context.Background(), func(context.Context) error { return io.ErrUnexpectedEOF })
	}
	if s := b.State(); s != Open {
		t.Fatalf("state %v after 2 failures, want open", s)
	}
}
