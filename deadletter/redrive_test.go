package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newMemory(t *testing.T) *deadletter.Memory {
	t.Helper()
	m, err := deadletter.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memoryWith returns a Memory holding a letter of each ID, due at t0.
func memoryWith(t *testing.T, ids ...string) *deadletter.Memory {
	t.Helper()
	m := newMemory(t)
	for _, id := range ids {
		put(t, m, id, t0)
	}
	return m
}

func put(t *testing.T, s deadletter.Store, id string, due time.Time) {
	t.Helper()
	l := deadletter.Letter{ID: id, Queue: "payments", Key: "key-" + id, Payload: []byte(id), Reason: "attempts exhausted", Attempts: 3, Created: t0.Add(-time.Hour), Due: due}
	if err := s.Put(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s deadletter.Store, id string) deadletter.Letter {
	t.Helper()
	l, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return l
}

func newRedriver(t *testing.T, c deadletter.Config) *deadletter.Redriver {
	t.Helper()
	if c.Queue == "" {
		c.Queue = "payments"
	}
	if c.Rand == nil {
		c.Rand = func() float64 { return 0.5 }
	}
	r, err := deadletter.NewRedriver(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRedriverRefuses(t *testing.T) {
	m := newMemory(t)
	h := func(context.Context, deadletter.Letter) error { return nil }
	for _, tc := range []struct {
		name string
		c    deadletter.Config
		want string
	}{
		{"no store", deadletter.Config{Queue: "q", Handler: h}, "Store: missing"},
		{"no handler", deadletter.Config{Store: m, Queue: "q"}, "Handler: missing"},
		{"no queue", deadletter.Config{Store: m, Handler: h}, "Queue: missing"},
		{"negative batch", deadletter.Config{Store: m, Queue: "q", Handler: h, Batch: -1}, "Batch: -1"},
		{"negative lease", deadletter.Config{Store: m, Queue: "q", Handler: h, Lease: -time.Second}, "Lease: -1s"},
		{"max redrives -2", deadletter.Config{Store: m, Queue: "q", Handler: h, MaxRedrives: -2}, "MaxRedrives: -2"},
		{"negative interval", deadletter.Config{Store: m, Queue: "q", Handler: h, Interval: -1}, "Interval: -1ns"},
		{"bad backoff", deadletter.Config{Store: m, Queue: "q", Handler: h, Backoff: backoff.Schedule{Multiplier: 0.5}}, "Multiplier"},
	} {
		_, err := deadletter.NewRedriver(tc.c)
		if !errors.Is(err, deadletter.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidConfig naming %q", tc.name, err, tc.want)
		}
	}
}

func TestRedriveOutcomes(t *testing.T) {
	// In a bubble, so that the pass takes no time and the Due times are
	// exact.
	synctest.Test(t, testRedriveOutcomes)
}

func testRedriveOutcomes(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t)
	for _, id := range []string{"ok", "flaky", "perm", "hinted", "inner"} {
		put(t, m, id, t0)
	}
	innerCalls := 0
	transient := errors.New("partner: 503")
	r := newRedriver(t, deadletter.Config{Store: m, Handler: func(ctx context.Context, l deadletter.Letter) error {
		switch l.ID {
		case "ok":
			return nil
		case "perm":
			return retry.Permanent(errors.New("partner: 404 no such order"))
		case "hinted":
			return retry.After(transient, 3*time.Hour)
		case "inner":
			// A retry loop inside the handler makes one attempt: the
			// redriver is the retrying layer.
			return retry.Do(ctx, retry.Policy{MaxAttempts: 5}, func(context.Context) error {
				innerCalls++
				return transient
			})
		}
		return transient
	}})
	rep, err := r.RedriveAt(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (deadletter.Report{Claimed: 5, Done: 1, Failed: 3, Parked: 1}); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	if _, err := m.Get(ctx, "ok"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("the redriven letter: %v, want deleted", err)
	}
	// Equal jitter at a draw of 0.5 after the first failure: 5 min · 3/4.
	flaky := get(t, m, "flaky")
	if !flaky.Due.Equal(t0.Add(3*time.Minute+45*time.Second)) || flaky.Redrives != 1 || flaky.Attempts != 4 ||
		flaky.Reason != deadletter.ReasonRedriveFailed || flaky.Error != "partner: 503" || flaky.Parked || flaky.Token != "" {
		t.Fatalf("after a failed redrive: %+v", flaky)
	}
	if h := get(t, m, "hinted"); !h.Due.Equal(t0.Add(3 * time.Hour)) {
		t.Fatalf("a 3 h server hint: due %v, want %v", h.Due, t0.Add(3*time.Hour))
	}
	if p := get(t, m, "perm"); !p.Parked || p.Reason != deadletter.ReasonPermanent {
		t.Fatalf("a permanent error: %+v, want parked with reason %q", p, deadletter.ReasonPermanent)
	}
	if in := get(t, m, "inner"); innerCalls != 1 || in.Attempts != 4 {
		t.Fatalf("inner retry loop: %d calls and Attempts %d, want 1 call (one retrying layer) and 3+1", innerCalls, in.Attempts)
	}
	if rep, _ := r.RedriveAt(ctx, t0.Add(3*time.Minute)); rep.Claimed != 0 {
		t.Fatalf("a pass before any letter is due again claimed %d", rep.Claimed)
	}
}

func TestRedriveParksAfterMaxRedrives(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		max    int
		passes int
		parked bool
	}{{3, 3, true}, {retry.Unlimited, 12, false}} {
		m := memoryWith(t, "x")
		r := newRedriver(t, deadletter.Config{Store: m, MaxRedrives: tc.max, Handler: func(context.Context, deadletter.Letter) error {
			return errors.New("still down")
		}})
		now := t0
		for pass := 1; pass <= tc.passes; pass++ {
			if rep, err := r.RedriveAt(ctx, now); err != nil || rep.Claimed != 1 {
				t.Fatalf("MaxRedrives %d, pass %d at %v: %+v %v, want the letter claimed", tc.max, pass, now, rep, err)
			}
			now = get(t, m, "x").Due
		}
		l := get(t, m, "x")
		if l.Parked != tc.parked || l.Redrives != tc.passes {
			t.Fatalf("MaxRedrives %d after %d failed passes: parked %v, redrives %d", tc.max, tc.passes, l.Parked, l.Redrives)
		}
		if tc.parked && l.Reason != deadletter.ReasonRedrivesExhausted {
			t.Fatalf("reason %q, want %q", l.Reason, deadletter.ReasonRedrivesExhausted)
		}
		// The cap holds whatever the count: 6 h at most between redrives.
		if !tc.parked && l.Due.Sub(t0) > 12*6*time.Hour {
			t.Fatalf("due %v after %d redrives", l.Due.Sub(t0), tc.passes)
		}
	}
}

func TestRedriveEvents(t *testing.T) {
	ctx := context.Background()
	m := memoryWith(t, "ok", "flaky", "perm")
	var got []event.Event
	r := newRedriver(t, deadletter.Config{Store: m,
		Observer: event.Func(func(_ context.Context, e event.Event) { got = append(got, e) }),
		Handler: func(_ context.Context, l deadletter.Letter) error {
			switch l.ID {
			case "ok":
				return nil
			case "perm":
				return retry.Permanent(errors.New("404"))
			}
			return errors.New("503")
		}})
	if _, err := r.RedriveAt(ctx, t0); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		outcome event.Outcome
		reason  string
	}{
		"key-ok":    {event.Success, ""},
		"key-flaky": {event.Failure, "redrive_failed"},
		"key-perm":  {event.Rejected, "permanent_error"},
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3", len(got))
	}
	for _, e := range got {
		w := want[e.Key]
		if e.Kind != event.Redrive || e.Component != "deadletter" || e.Name != "payments" || e.Attempt != 1 ||
			e.Outcome != w.outcome || e.Reason != w.reason || (e.Outcome == event.Success) != (e.Err == nil) {
			t.Errorf("event %+v, want redrive 1 of queue payments with outcome %v and reason %q", e, w.outcome, w.reason)
		}
	}
	// The second redrive of the flaky letter is number 2.
	got = nil
	if _, err := r.RedriveAt(ctx, get(t, m, "flaky").Due); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("second redrive: events %+v, want one with Attempt 2", got)
	}
}

func TestRedriveBatches(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t)
	for i := range 25 {
		put(t, m, string(rune('a'+i)), t0)
	}
	r := newRedriver(t, deadletter.Config{Store: m, Handler: func(context.Context, deadletter.Letter) error { return nil }})
	var got []int
	for range 4 {
		rep, err := r.RedriveAt(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rep.Done)
	}
	if want := []int{10, 10, 5, 0}; !equalInts(got, want) {
		t.Fatalf("done per pass: %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRedriveLeaseLost(t *testing.T) {
	ctx := context.Background()
	m := memoryWith(t, "x")
	r := newRedriver(t, deadletter.Config{Store: m, Handler: func(ctx context.Context, l deadletter.Letter) error {
		// An operator requeues the letter while its redrive runs.
		if err := m.Requeue(ctx, l.ID, t0); err != nil {
			t.Error(err)
		}
		return errors.New("down")
	}})
	rep, err := r.RedriveAt(ctx, t0)
	if err != nil || rep != (deadletter.Report{Claimed: 1, LeaseLost: 1}) {
		t.Fatalf("%+v %v, want one letter whose outcome was not stored (lease lost)", rep, err)
	}
	if l := get(t, m, "x"); l.Redrives != 0 || !l.Due.Equal(t0) {
		t.Fatalf("the operator's requeue was overwritten: %+v", l)
	}
}

func TestRedriveCallerCancels(t *testing.T) {
	m := memoryWith(t, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	r := newRedriver(t, deadletter.Config{Store: m, Handler: func(ctx context.Context, l deadletter.Letter) error {
		calls++
		cancel()
		return ctx.Err()
	}})
	rep, err := r.RedriveAt(ctx, t0)
	if !errors.Is(err, context.Canceled) || calls != 1 || rep.Failed+rep.Done+rep.Parked != 0 {
		t.Fatalf("%+v, %v, %d calls: want context.Canceled after one call, no outcome stored", rep, err, calls)
	}
	// The outcome of a is unknown: it stays held until the lease ends. b was
	// not started: its claim is ended at once, uncounted.
	if l := get(t, m, "a"); l.Redrives != 0 || l.Token == "" {
		t.Fatalf("a after the caller cancelled: %+v, want unchanged and still held", l)
	}
	if l := get(t, m, "b"); l.Redrives != 0 || l.Attempts != 3 || l.Token != "" {
		t.Fatalf("b after the caller cancelled: %+v, want unchanged and not held", l)
	}
	r2 := newRedriver(t, deadletter.Config{Store: m, Handler: func(context.Context, deadletter.Letter) error { return nil }})
	if rep, _ := r2.RedriveAt(context.Background(), t0); rep.Done != 1 {
		t.Fatalf("right after: %+v, want b redriven", rep)
	}
	var attempts int
	r3 := newRedriver(t, deadletter.Config{Store: m, Handler: func(_ context.Context, l deadletter.Letter) error { attempts = l.Attempts; return nil }})
	if rep, _ := r3.RedriveAt(context.Background(), t0.Add(deadletter.DefaultLease)); rep.Done != 1 || attempts != 4 {
		t.Fatalf("when the lease ended: %+v, a's attempts %d: want a redriven, its cancelled attempt counted (4)", rep, attempts)
	}
}

func TestRedriveStoresASuccessDuringShutdown(t *testing.T) {
	m := memoryWith(t, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRedriver(t, deadletter.Config{Store: ctxStore{m}, Handler: func(context.Context, deadletter.Letter) error {
		cancel() // the process is told to stop while the work completes
		return nil
	}})
	rep, err := r.RedriveAt(ctx, t0)
	if !errors.Is(err, context.Canceled) || rep.Done != 1 {
		t.Fatalf("%+v %v: want the finished redrive stored (Done 1), then context.Canceled", rep, err)
	}
	if _, err := m.Get(context.Background(), "a"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("the letter whose redrive worked: %v, want deleted", err)
	}
	if l := get(t, m, "b"); l.Token != "" || l.Redrives != 0 || l.Attempts != 3 {
		t.Fatalf("the letter not yet redriven: %+v, want its claim ended, nothing counted", l)
	}
}

// ctxStore refuses a call whose context has ended, as a database client
// does.
type ctxStore struct{ deadletter.Store }

func (s ctxStore) Done(ctx context.Context, id, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.Done(ctx, id, token)
}

func TestHandlerBoundByLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memoryWith(t, "x")
		r := newRedriver(t, deadletter.Config{Store: m, Lease: 10 * time.Second, Handler: func(ctx context.Context, l deadletter.Letter) error {
			<-ctx.Done() // a partner that never answers
			return ctx.Err()
		}})
		start := time.Now()
		rep, err := r.RedriveAt(context.Background(), t0)
		if err != nil || rep.Failed != 1 {
			t.Fatalf("%+v %v, want one failed redrive", rep, err)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("the handler ran %v, want the lease, 10s", d)
		}
		if l := get(t, m, "x"); l.Error != context.DeadlineExceeded.Error() {
			t.Fatalf("error %q, want %q", l.Error, context.DeadlineExceeded)
		}
	})
}

// flakyStore fails its first Claims, as an unreachable database would.
type flakyStore struct {
	deadletter.Store
	mu    sync.Mutex
	fails int
}

func (s *flakyStore) Claim(ctx context.Context, q string, now time.Time, n int, lease time.Duration) ([]deadletter.Letter, error) {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	s.mu.Unlock()
	if fail {
		return nil, errors.New("connection refused")
	}
	return s.Store.Claim(ctx, q, now, n, lease)
}

func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := newMemory(t)
		for i := range 25 {
			put(t, m, string(rune('a'+i)), start)
		}
		s := &flakyStore{Store: m, fails: 1}
		var (
			mu      sync.Mutex
			handled = map[string]time.Duration{}
			passes  []deadletter.Report
			errs    int
		)
		r := newRedriver(t, deadletter.Config{Store: s, Interval: 30 * time.Second,
			Handler: func(ctx context.Context, l deadletter.Letter) error {
				mu.Lock()
				defer mu.Unlock()
				handled[l.ID] = time.Since(start)
				return nil
			},
			OnPass: func(rep deadletter.Report, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs++
				}
				passes = append(passes, rep)
			}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		mu.Lock()
		if errs != 1 || len(handled) != 0 {
			t.Fatalf("at 0s: %d errors, %d handled; want the failed claim reported and nothing handled", errs, len(handled))
		}
		mu.Unlock()
		put(t, m, "late", start.Add(45*time.Second))
		time.Sleep(30 * time.Second) // virtual time: this runs in a synctest bubble
		synctest.Wait()
		mu.Lock()
		// At 30 s: three passes back to back (10, 10, then 5: not a full
		// batch, so Run waits).
		if len(handled) != 25 || len(passes) != 4 || passes[1].Done != 10 || passes[2].Done != 10 || passes[3].Done != 5 {
			t.Fatalf("at 30s: %d handled, passes %+v", len(handled), passes)
		}
		mu.Unlock()
		time.Sleep(30 * time.Second) // virtual time
		synctest.Wait()
		mu.Lock()
		if d, ok := handled["late"]; !ok || d != 60*time.Second {
			t.Fatalf("the letter due at 45 s was handled at %v (%v), want 60s: the pass after it was due", d, ok)
		}
		mu.Unlock()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	})
}

// TestFaultRedriveLeaseExpiry: two redrivers (Batch 5 and 1, Lease 300
// ms) serve ten letters whose handler takes 200 ms. A pass of five letters
// outlives its lease: the redriver must not start a letter whose lease has
// ended (another redriver may hold it by then), and a handler's deadline is
// its claim's lease end. Each letter's work is done once, never in two
// handlers at once (a handler cut at its lease end and one started by the
// next claim at that instant meet, but do not overlap).
func TestFaultRedriveLeaseExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		for i := range 10 {
			put(t, m, fmt.Sprintf("l%d", i), time.Now())
		}
		type run struct{ start, end time.Time }
		var (
			mu        sync.Mutex
			runs      = map[string][]run{}
			completed = map[string]int{}
			late      []string // started at or after its lease end
			overrun   []string // ran past its lease end
		)
		handler := func(ctx context.Context, l deadletter.Letter) error {
			start := time.Now()
			if !start.Before(l.LeaseEnd) {
				mu.Lock()
				late = append(late, l.ID)
				mu.Unlock()
			}
			defer func() {
				end := time.Now()
				mu.Lock()
				runs[l.ID] = append(runs[l.ID], run{start, end})
				if end.After(l.LeaseEnd) {
					overrun = append(overrun, l.ID)
				}
				mu.Unlock()
			}()
			work := time.NewTimer(200 * time.Millisecond)
			defer work.Stop()
			select {
			case <-work.C:
				mu.Lock()
				completed[l.ID]++
				mu.Unlock()
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, batch := range []int{5, 1} {
			r := newRedriver(t, deadletter.Config{Store: m, Handler: handler, Batch: batch, Lease: 300 * time.Millisecond,
				Interval: 100 * time.Millisecond, MaxRedrives: retry.Unlimited,
				Backoff: backoff.Schedule{Base: time.Millisecond, Cap: time.Millisecond}})
			wg.Go(func() { _ = r.Run(ctx) })
		}
		time.Sleep(10 * time.Second) // virtual time: this runs in a synctest bubble
		synctest.Wait()
		cancel()
		wg.Wait()
		var overlaps []string
		for id, rs := range runs {
			for i, a := range rs {
				for _, b := range rs[i+1:] {
					if a.start.Before(b.end) && b.start.Before(a.end) {
						overlaps = append(overlaps, id)
					}
				}
			}
		}
		if len(overlaps) > 0 || len(late) > 0 || len(overrun) > 0 {
			t.Errorf("letters in two handlers at once: %v; started after their lease end: %v; run past it: %v", overlaps, late, overrun)
		}
		for i := range 10 {
			if id := fmt.Sprintf("l%d", i); completed[id] != 1 {
				t.Errorf("%s's work done %d times, want 1", id, completed[id])
			}
		}
		if n := m.Len(); n != 0 {
			t.Errorf("%d letters left, want every letter redriven and deleted", n)
		}
	})
}

// A pass whose lease ends before its last letters' turn leaves them
// unstarted and says so; the first letter's handler gets the lease's end
// as its deadline, whatever now the pass was given.
func TestRedriveExpiredLettersNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		for _, id := range []string{"a", "b", "c"} {
			put(t, m, id, t0)
		}
		var started []string
		var deadlines []time.Duration
		begin := time.Now()
		r := newRedriver(t, deadletter.Config{Store: m, Batch: 3, Lease: 10 * time.Second, Handler: func(ctx context.Context, l deadletter.Letter) error {
			started = append(started, l.ID)
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, d.Sub(begin))
			time.Sleep(6 * time.Second) // virtual time: work that ignores its context
			return nil
		}})
		rep, err := r.RedriveAt(context.Background(), t0)
		if err != nil || rep != (deadletter.Report{Claimed: 3, Done: 2, Expired: 1}) {
			t.Fatalf("%+v %v, want 3 claimed, 2 done, 1 expired", rep, err)
		}
		if strings.Join(started, ",") != "a,b" || deadlines[0] != 10*time.Second || deadlines[1] != 10*time.Second {
			t.Fatalf("started %v with deadlines %v after the pass began, want a and b, both with the lease end, 10s", started, deadlines)
		}
		if l := get(t, m, "c"); l.Token != "" || l.Redrives != 0 || l.Attempts != 3 {
			t.Fatalf("the expired letter: %+v, want its claim ended, nothing counted", l)
		}
	})
}

// A handler that could not even try (ErrNotAttempted) counts a failed
// redrive, not an attempt.
func TestRedriveNotAttempted(t *testing.T) {
	m := memoryWith(t, "x")
	r := newRedriver(t, deadletter.Config{Store: m, Handler: func(context.Context, deadletter.Letter) error {
		return fmt.Errorf("prepare: %w: %w", deadletter.ErrNotAttempted, errors.New("no fresh token"))
	}})
	if rep, err := r.RedriveAt(context.Background(), t0); err != nil || rep.Failed != 1 {
		t.Fatalf("%+v %v, want one failed redrive", rep, err)
	}
	if l := get(t, m, "x"); l.Attempts != 3 || l.Redrives != 1 || !strings.Contains(l.Error, "no fresh token") {
		t.Fatalf("%+v, want Attempts still 3, one redrive, the cause in Error", l)
	}
}

// TestFaultRedriverKilled: a poison letter takes its redriver down while
// its handler runs (runtime.Goexit here: the pass stores nothing more, as
// after a SIGKILL), three times. Each claim that ended with its lease, no
// outcome stored, counts as a failed redrive with an attempt, and at
// MaxRedrives the letter is parked without being run again.
func TestFaultRedriverKilled(t *testing.T) {
	m := memoryWith(t, "poison")
	const maxRedrives = 3
	ran := 0
	killed := func(ctx context.Context, l deadletter.Letter) error {
		ran++
		runtime.Goexit()
		return nil
	}
	now := t0
	for kill := range maxRedrives {
		r := newRedriver(t, deadletter.Config{Store: m, MaxRedrives: maxRedrives, Handler: killed})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = r.RedriveAt(context.Background(), now)
		}()
		<-done
		if ran != kill+1 {
			t.Fatalf("pass %d: handler ran %d times, want %d", kill+1, ran, kill+1)
		}
		l := get(t, m, "poison")
		if l.Token == "" || l.Attempts != 3+kill || l.Redrives != kill {
			t.Fatalf("after kill %d: %+v: want held, Attempts %d, Redrives %d", kill+1, l, 3+kill, kill)
		}
		now = now.Add(deadletter.DefaultLease)
	}
	r := newRedriver(t, deadletter.Config{Store: m, MaxRedrives: maxRedrives, Handler: killed})
	rep, err := r.RedriveAt(context.Background(), now)
	if err != nil || rep != (deadletter.Report{Claimed: 1, Parked: 1}) || ran != maxRedrives {
		t.Fatalf("pass after %d kills: %+v, %v, handler ran %d times: want the letter parked, not run", maxRedrives, rep, err, ran)
	}
	if l := get(t, m, "poison"); !l.Parked || l.Attempts != 3+maxRedrives || l.Redrives != maxRedrives || l.Reason != deadletter.ReasonRedrivesExhausted || l.Token != "" {
		t.Fatalf("the poison letter: %+v: want parked, unclaimed, %d attempts, %d redrives, reason %q", l, 3+maxRedrives, maxRedrives, deadletter.ReasonRedrivesExhausted)
	}
}

// TestRedriveCountsStopAtMaxCount: a letter whose counts are near MaxCount
// is redriven by a handler that reports a *retry.Error of a huge number of
// attempts: the redriver stores the outcome with its counts at MaxCount,
// which every store keeps, instead of one that the stores refuse (and, in
// the postgres module's store, cannot hold), which would end every pass.
func TestRedriveCountsStopAtMaxCount(t *testing.T) {
	ctx := context.Background()
	s, _ := deadletter.NewMemory(0)
	l := deadletter.Letter{ID: "l1", Queue: "q", Created: t0, Due: t0,
		Attempts: deadletter.MaxCount - 1, Redrives: deadletter.MaxCount}
	if err := s.Put(ctx, l); err != nil {
		t.Fatal(err)
	}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: "q", MaxRedrives: retry.Unlimited,
		Handler: func(context.Context, deadletter.Letter) error {
			return &retry.Error{Attempts: 1 << 62, Reason: retry.ReasonExhausted, Last: errors.New("503")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RedriveAt(ctx, t0)
	if err != nil || rep.Failed != 1 {
		t.Fatalf("pass: %+v, %v: want the failed redrive stored", rep, err)
	}
	got, err := s.Get(ctx, "l1")
	if err != nil || got.Attempts != deadletter.MaxCount || got.Redrives != deadletter.MaxCount {
		t.Fatalf("letter: Attempts %d Redrives %d, %v: want both %d", got.Attempts, got.Redrives, err, deadletter.MaxCount)
	}
}

// TestRedriveHintFromTheAnswer: the second letter of a pass is answered 50
// s after the pass began, with a server hint of 5 min (Retry-After: 300).
// The hint counts from the answer, so the letter is not due before 50 s +
// 5 min; and the backoff counts from the failure too.
func TestRedriveHintFromTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memoryWith(t, "a", "b")
		r := newRedriver(t, deadletter.Config{Store: m, Handler: func(ctx context.Context, l deadletter.Letter) error {
			time.Sleep(50 * time.Second) // virtual: a slow partner
			if l.ID == "a" {
				return errors.New("partner: 503")
			}
			return retry.After(errors.New("partner: 503"), 5*time.Minute)
		}})
		if rep, err := r.RedriveAt(context.Background(), t0); err != nil || rep.Failed != 2 {
			t.Fatalf("%+v %v, want two failed redrives", rep, err)
		}
		// Equal jitter at a draw of 0.5 after the first failure: 5 min · 3/4,
		// from the failure 50 s in.
		if a, want := get(t, m, "a"), t0.Add(50*time.Second+3*time.Minute+45*time.Second); !a.Due.Equal(want) {
			t.Fatalf("backoff: due %v, want %v (3m45s after the failure at 50s)", a.Due.Sub(t0), want.Sub(t0))
		}
		if b, want := get(t, m, "b"), t0.Add(100*time.Second+5*time.Minute); !b.Due.Equal(want) {
			t.Fatalf("server hint: due %v after the pass began, want %v (5m after the answer at 1m40s)", b.Due.Sub(t0), want.Sub(t0))
		}
	})
}

// TestFaultPoisonLetterSparesItsBatch: a poison letter, first of its
// batch, takes its redriver down every time it runs (runtime.Goexit, as
// after a SIGKILL), MaxRedrives 3. The four letters claimed with it are
// counted once, by the first kill, and then not again: a letter whose last
// claim ended with its lease runs alone in its pass, the letters claimed
// with it let go first. The poison letter is parked; the four are each
// redriven once and deleted, none parked unrun.
func TestFaultPoisonLetterSparesItsBatch(t *testing.T) {
	m := newMemory(t)
	put(t, m, "poison", t0.Add(-time.Minute)) // earliest due: first of its batch
	for _, id := range []string{"b", "c", "d", "e"} {
		put(t, m, id, t0)
	}
	ran := map[string]int{}
	h := func(ctx context.Context, l deadletter.Letter) error {
		ran[l.ID]++
		if l.ID == "poison" {
			runtime.Goexit()
		}
		return nil
	}
	r := newRedriver(t, deadletter.Config{Store: m, Batch: 5, MaxRedrives: 3, Handler: h})
	now := t0
	for pass := 0; pass < 20 && m.Len() > 1; pass++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = r.RedriveAt(context.Background(), now)
		}()
		<-done
		now = now.Add(deadletter.DefaultLease) // past any claim a kill left
	}
	if ran["poison"] != 3 {
		t.Errorf("the poison letter ran %d times, want 3 (MaxRedrives)", ran["poison"])
	}
	if l := get(t, m, "poison"); !l.Parked || l.Reason != deadletter.ReasonRedrivesExhausted {
		t.Errorf("the poison letter: %+v, want parked, redrives exhausted", l)
	}
	for _, id := range []string{"b", "c", "d", "e"} {
		if l, err := m.Get(context.Background(), id); err == nil || ran[id] != 1 {
			t.Errorf("letter %s: ran %d times, stored %+v (%v); want it run once and deleted", id, ran[id], l, err)
		}
	}
}
