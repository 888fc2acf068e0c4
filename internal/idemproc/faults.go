package idemproc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
)

// The fault scenarios below run the middleware over a real store server
// (the redis and postgres modules' tests call them with their store), inject
// one fault each, and check how many times the handler ran and what every
// client got. The middleware runs in the test's process behind a real HTTP
// server on loopback, or, for the kills, in child processes (Start).

// Faults describes the store under test to the scenarios.
type Faults struct {
	// Target is the store server's host:port.
	Target string
	// Open returns a store that reaches the server through addr (host:port:
	// the server's own, or a proxy's), closed when t ends.
	Open func(t *testing.T, addr string) idempotency.Store
	// ChildAddr is the address Start passes to the children (Main's open).
	ChildAddr string
	// Stall, if set, makes the server hold every write that arrives from
	// now on until resume is called (Redis: CLIENT PAUSE WRITE;
	// PostgreSQL: the table locked in SHARE mode by a transaction), and
	// returns held, which reports whether a write is being held. Scenarios
	// that need it are skipped without it.
	Stall func(t *testing.T) (held func() bool, resume func())
}

// instance is the middleware over a store, behind a loopback server, with
// a clock the test can move forward.
type instance struct {
	m      *idempotency.Middleware
	srv    *httptest.Server
	offset atomic.Int64 // added to the clock
	logs   *lines
}

// lines keeps what the middleware logs, and passes it to the test's log.
type lines struct {
	t  *testing.T
	mu sync.Mutex
	b  []string
}

func (l *lines) Write(p []byte) (int, error) {
	s := strings.TrimRight(string(p), "\n")
	l.mu.Lock()
	l.b = append(l.b, s)
	l.mu.Unlock()
	l.t.Log(s)
	return len(p), nil
}

func (l *lines) containing(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.b {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

func newInstance(t *testing.T, c idempotency.Config, h http.Handler) *instance {
	t.Helper()
	in := &instance{logs: &lines{t: t}}
	c.ErrorLog = log.New(in.logs, "", 0)
	c.Now = func() time.Time { return time.Now().Add(time.Duration(in.offset.Load())) }
	m, err := idempotency.New(c)
	if err != nil {
		t.Fatal(err)
	}
	in.m = m
	in.srv = httptest.NewServer(m.Require(h))
	t.Cleanup(in.srv.Close)
	return in
}

// answer is what a client got.
type answer struct {
	status   int
	body     string
	replayed string
	err      error
}

func (a answer) String() string {
	if a.err != nil {
		return "error " + a.err.Error()
	}
	return fmt.Sprintf("%d %s (replayed %q)", a.status, a.body, a.replayed)
}

func (in *instance) post(key string) answer {
	client := in.srv.Client()
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, in.srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set(header.IdempotencyKey, key)
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(b), replayed: resp.Header.Get(header.IdempotentReplayed), err: err}
}

// charge is a handler that counts its runs and answers 201 with a new
// charge id; before answering it calls hook, if not nil.
func charge(runs *atomic.Int64, hook func(r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		if hook != nil {
			hook(r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%s"}`, rand.Text())
	})
}

// FaultLease is the lease of the scenarios that do not say otherwise.
const FaultLease = 3 * time.Second

// Suite runs the fault scenarios that every store's fault suite shares,
// each in a subtest against a server of its own (start starts it and
// describes it): LinkCutAtComplete, LinkCutPastStoreTimeout,
// LinkCutPastLease, LinkCutPastLeaseAnotherClaimed, LostBeginReply,
// LostRenewalReply, LostCompleteReply, HolderCutOff, SlowBegin, ClockAhead,
// and Kill at each step (StepClaimed, StepHandled,
// StepCompleted). A store's own faults (a restart, a crash of the server)
// are its suite's own tests.
func Suite(t *testing.T, start func(t *testing.T) Faults) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T, Faults)
	}{
		{"LinkCutAtComplete", LinkCutAtComplete},
		{"LinkCutPastStoreTimeout", LinkCutPastStoreTimeout},
		{"LinkCutPastLease", LinkCutPastLease},
		{"LinkCutPastLeaseAnotherClaimed", LinkCutPastLeaseAnotherClaimed},
		{"LostBeginReply", LostBeginReply},
		{"LostRenewalReply", LostRenewalReply},
		{"LostCompleteReply", LostCompleteReply},
		{"HolderCutOff", HolderCutOff},
		{"SlowBegin", SlowBegin},
		{"ClockAhead", ClockAhead},
		{"Kill", func(t *testing.T, f Faults) {
			for _, step := range []string{StepClaimed, StepHandled, StepCompleted} {
				t.Run(step, func(t *testing.T) { KillAt(t, f, step) })
			}
		}},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, start(t)) })
	}
}

// LinkCutAtComplete: the link to the store is cut for 1.5 s as the
// handler returns (lease FaultLease): Complete gets through when it is
// back (OutageAtComplete).
func LinkCutAtComplete(t *testing.T, f Faults) {
	px := faultproxy.New(t, f.Target)
	OutageAtComplete(t, f.Open(t, px.Addr), FaultLease, px.Down, px.Up, 1500*time.Millisecond)
}

// OutageAtComplete: the store goes away as the handler returns (down) and
// comes back after the given time (up, run on another goroutine). The
// middleware, with the given lease, tries Complete again until it gets
// through; the client gets 201, and a retry after the lease would have
// passed replays it: one run. store must reach the server through what
// down cuts.
func OutageAtComplete(t *testing.T, store idempotency.Store, lease time.Duration, down, up func(), after time.Duration) {
	var runs atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait() // the server is back before the test ends, whatever happened
	// StoreTimeout: a minute, for a slow restart on a loaded machine.
	in := newInstance(t, idempotency.Config{Store: store, Lease: lease, StoreTimeout: time.Minute},
		charge(&runs, func(*http.Request) {
			down()
			wg.Go(func() {
				time.Sleep(after) // the outage's length, in real time: the server is real
				up()
			})
		}))
	key := "outage-" + rand.Text()
	first := in.post(key)
	if first.err != nil || first.status != http.StatusCreated {
		t.Fatalf("first: %v, want 201", first)
	}
	in.offset.Store(int64(lease + time.Second))
	again := in.post(key)
	if runs.Load() != 1 || again.status != http.StatusCreated || again.replayed != "true" || again.body != first.body {
		t.Fatalf("retry after the lease: %v, runs %d; want the replay of %s and 1 run", again, runs.Load(), first.body)
	}
	t.Logf("outage of %v as the handler returned (lease %v): 1 run, the client got %d, the retry its replay; %d failed tries of Complete",
		after, lease, first.status, len(in.logs.containing("will try again")))
}

// LinkCutPastStoreTimeout: the link to the store is cut as the handler
// returns, for longer than StoreTimeout (2 s against 500 ms) but not as
// long as the lease (6 s). The client gets its 201 after StoreTimeout,
// before the link is back; the middleware goes on trying Complete, with
// the lease renewed, and stores the response once the link is back: a
// retry after the lease replays it, one run.
func LinkCutPastStoreTimeout(t *testing.T, f Faults) {
	const (
		lease        = 6 * time.Second
		storeTimeout = 500 * time.Millisecond
		outage       = 2 * time.Second
	)
	px := faultproxy.New(t, f.Target)
	var runs atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait() // the link is back before the test ends
	in := newInstance(t, idempotency.Config{Store: f.Open(t, px.Addr), Lease: lease, StoreTimeout: storeTimeout},
		charge(&runs, func(*http.Request) {
			px.Down()
			wg.Go(func() {
				time.Sleep(outage) // the outage's length, in real time: the server is real
				px.Up()
			})
		}))
	key := "past-store-timeout-" + rand.Text()
	start := time.Now()
	first := in.post(key)
	if took := time.Since(start); first.err != nil || first.status != http.StatusCreated || took >= outage {
		t.Fatalf("first: %v after %v; want 201 after StoreTimeout (%v), before the link is back (%v)", first, took, storeTimeout, outage)
	}
	// Until the background Complete has ended (stored once the link is
	// back): the instance answers its key's retries with 409 until then.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := in.m.Wait(ctx); err != nil {
		t.Fatalf("Wait for the background Complete: %v", err)
	}
	rec, ok, err := f.Open(t, f.Target).Get(ctx, idempotency.ID{Key: key}, time.Now())
	if err != nil || !ok || rec.State != idempotency.Completed {
		t.Fatalf("the record once the link was back: ok %v err %v %+v; want it completed", ok, err, rec.State)
	}
	in.offset.Store(int64(lease + time.Second))
	again := in.post(key)
	if runs.Load() != 1 || again.status != http.StatusCreated || again.replayed != "true" || again.body != first.body {
		t.Fatalf("retry after the lease: %v, runs %d; want the replay of %s and 1 run", again, runs.Load(), first.body)
	}
	t.Logf("link cut for %v as the handler returned (StoreTimeout %v, lease %v): the client got %d after StoreTimeout, the response was stored when the link came back, the retry got its replay; 1 run",
		outage, storeTimeout, lease, first.status)
}

// counting counts the Completes sent to a store.
type counting struct {
	idempotency.Store
	completes atomic.Int64
}

func (c *counting) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	c.completes.Add(1)
	return c.Store.Complete(ctx, id, token, resp, now, ttl)
}

// cutPastLease starts instance A over a store that it reaches through a
// proxy, with a handler that cuts the link as it returns, posts a request
// with a new key to it, and waits until A's lease has ended with the link
// still cut and A has tried Complete again since (the middleware tries on
// past the lease). It returns A, its store, the proxy, the key and the
// answer A's client got: 201, after StoreTimeout.
func cutPastLease(t *testing.T, f Faults, runs *atomic.Int64) (*instance, *faultproxy.Proxy, string, answer) {
	const (
		lease        = 2 * time.Second
		storeTimeout = 500 * time.Millisecond
	)
	px := faultproxy.New(t, f.Target)
	store := &counting{Store: f.Open(t, px.Addr)}
	var once sync.Once
	a := newInstance(t, idempotency.Config{Store: store, Lease: lease, StoreTimeout: storeTimeout},
		charge(runs, func(*http.Request) { once.Do(px.Down) }))
	t.Cleanup(func() {
		// Before the proxy closes and the test ends: A's background
		// Complete ends, and logs nothing after the test.
		px.Up()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.m.Wait(ctx); err != nil {
			t.Errorf("A's background Complete: %v", err)
		}
	})
	key := "past-lease-" + rand.Text()
	first := a.post(key)
	if first.err != nil || first.status != http.StatusCreated {
		t.Fatalf("A's client: %v, want 201 after StoreTimeout (%v)", first, storeTimeout)
	}
	// The *LeaseLostError logged at the lease's end.
	WaitFor(t, "A's lease to end with the link cut", func() bool { return len(a.logs.containing("lost: it ended")) > 0 })
	n := store.completes.Load()
	WaitFor(t, "A to try Complete again after its lease ended", func() bool { return store.completes.Load() > n })
	return a, px, key, first
}

// LinkCutPastLease: the link to the store is cut as the handler returns
// and comes back only after the lease (2 s) has ended, nobody having sent
// the key meanwhile. The client gets its 201 after StoreTimeout (500 ms);
// the middleware tries Complete on past the lease, and the store takes it
// from the token that still holds the key: the retry gets the replay, one
// run.
func LinkCutPastLease(t *testing.T, f Faults) {
	var runs atomic.Int64
	a, px, key, first := cutPastLease(t, f, &runs)
	px.Up()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.m.Wait(ctx); err != nil {
		t.Fatalf("Wait for A's Complete once the link is back: %v", err)
	}
	rec, ok, err := f.Open(t, f.Target).Get(ctx, idempotency.ID{Key: key}, time.Now())
	if err != nil || !ok || rec.State != idempotency.Completed {
		t.Fatalf("the record once the link was back: ok %v err %v %+v; want it completed", ok, err, rec.State)
	}
	a.offset.Store(int64(time.Hour)) // far past the lease
	again := a.post(key)
	if runs.Load() != 1 || again.status != http.StatusCreated || again.replayed != "true" || again.body != first.body {
		t.Fatalf("retry: %v, runs %d; want the replay of %s and 1 run", again, runs.Load(), first.body)
	}
	t.Logf("link cut as the handler returned, back after the lease: the client got %d, the late Complete stored it, the retry got its replay; 1 run", first.status)
}

// LinkCutPastLeaseAnotherClaimed: as LinkCutPastLease, but after A's lease
// instance B (whose link is fine) claims the key and runs the request; the
// link comes back while B's handler runs. A's late Complete is refused
// (the token fences it off) and overwrites nothing: B completes its own
// record, and a third request replays B's response. Two runs: A's client
// got its answer without a record.
func LinkCutPastLeaseAnotherClaimed(t *testing.T, f Faults) {
	var runs atomic.Int64
	a, px, key, fromA := cutPastLease(t, f, &runs)
	var waitErr error
	var refused []string
	b := newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: 2 * time.Second},
		charge(&runs, func(*http.Request) {
			// B holds the key: A's link comes back and A's Complete goes
			// through to the store, which refuses it.
			px.Up()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			waitErr = a.m.Wait(ctx)
			refused = a.logs.containing("(status 201): " + idempotency.ErrLeaseLost.Error())
		}))
	fromB := b.post(key)
	if fromB.status != http.StatusCreated || fromB.replayed != "" || waitErr != nil {
		t.Fatalf("B after A's lease: %v (A's Wait: %v), want its own run", fromB, waitErr)
	}
	if len(refused) == 0 {
		t.Fatalf("A's Completes once its link was back, while B held the key: %q; want one refused as a lost lease", a.logs.containing("store the response"))
	}
	third := b.post(key)
	if third.replayed != "true" || third.body != fromB.body || runs.Load() != 2 {
		t.Fatalf("A got %v, B %v, a third request %v, runs %d; want B's response replayed (A's late Complete refused)", fromA, fromB, third, runs.Load())
	}
	t.Logf("link cut as A's handler returned, back while B held the key after A's lease: A's late Complete refused (%s), the record is B's; 2 runs", refused[0])
}

// renewals signals each renewal of a lease that got through.
type renewals struct {
	idempotency.Store
	ok chan struct{}
}

func (s *renewals) Extend(ctx context.Context, id idempotency.ID, token string, now time.Time, lease time.Duration) error {
	err := s.Store.Extend(ctx, id, token, now, lease)
	if err == nil {
		select {
		case s.ok <- struct{}{}:
		default:
		}
	}
	return err
}

// LostRenewalReply: while the handler runs, the reply to a renewal of its
// lease (3 s) is lost: the store moved the lease, the middleware does not
// know it, and the connection stays open without an answer (a link dead
// without a reset). The middleware must try the renewal again on another
// connection before the lease ends instead of waiting for that reply until
// then: the handler's context is not cancelled, the next renewal gets
// through, a duplicate whose clock is past the first lease gets 409, and
// the response is stored and replayed. One run.
func LostRenewalReply(t *testing.T, f Faults) {
	const lease = 3 * time.Second
	px := faultproxy.New(t, f.Target)
	store := &renewals{Store: f.Open(t, px.Addr), ok: make(chan struct{}, 1)}
	var runs atomic.Int64
	var b *instance
	var fromB answer
	var cause error
	key := "lost-renewal-" + rand.Text()
	a := newInstance(t, idempotency.Config{Store: store, Lease: lease},
		charge(&runs, func(r *http.Request) {
			if r.Header.Get(header.IdempotencyKey) != key {
				return // the warm-up
			}
			<-store.ok         // the first renewal, at lease/3, got through
			px.HoldNextReply() // the next renewal's: it never comes, the connection stays open
			select {
			case <-store.ok: // a renewal after the lost one got through
				fromB = b.post(key) // its clock past the first lease, within the renewed one
			case <-r.Context().Done():
				cause = context.Cause(r.Context())
			case <-time.After(4 * lease):
				cause = errors.New("no renewal got through in 4 leases")
			}
		}))
	if w := a.post("warm-" + rand.Text()); w.status != http.StatusCreated { // connections and statements ready
		t.Fatalf("warm-up: %v", w)
	}
	runs.Store(0)
	b = newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: lease}, charge(&runs, nil))
	// B posts after a renewal that followed the lost one: its clock is past
	// the lease A's first renewal granted, within the one the last granted.
	b.offset.Store(int64(lease / 2))
	first := a.post(key)
	if cause != nil {
		t.Fatalf("A's handler context ended (%v) after a renewal's reply was lost; want the renewal tried again and the key held", cause)
	}
	if fromB.status != http.StatusConflict {
		t.Fatalf("a duplicate past the first lease, while A holds the key: %v; want 409", fromB)
	}
	third := b.post(key)
	if first.status != http.StatusCreated || third.replayed != "true" || third.body != first.body || runs.Load() != 1 {
		t.Fatalf("A got %v, a retry %v, runs %d; want 201, its replay, 1 run", first, third, runs.Load())
	}
	t.Logf("a renewal's reply lost: the renewal tried again and got through, the duplicate got 409, the retry the replay; 1 run")
}

// LostBeginReply: the reply to Begin is lost (the claim was made). The
// client, which retries a 503 at once, ends with 201 and the handler runs
// once; no answer is 409 (the key held by a claim nobody runs).
func LostBeginReply(t *testing.T, f Faults) {
	px := faultproxy.New(t, f.Target)
	var runs atomic.Int64
	in := newInstance(t, idempotency.Config{Store: f.Open(t, px.Addr), RetryAfter: -1}, charge(&runs, nil))
	if a := in.post("warm-" + rand.Text()); a.status != http.StatusCreated { // connections and scripts ready
		t.Fatalf("warm-up: %v", a)
	}
	key := "lost-begin-" + rand.Text()
	px.DropNextReply()
	var got []answer
	for len(got) < 3 {
		a := in.post(key)
		got = append(got, a)
		if a.err != nil || a.status != http.StatusServiceUnavailable {
			break
		}
	}
	last := got[len(got)-1]
	if last.status != http.StatusCreated || last.replayed != "" || runs.Load() != 2 {
		t.Fatalf("answers %v, runs %d (warm-up included); want 201 from one run (after at most a 503)", got, runs.Load())
	}
	t.Logf("Begin's reply lost: answers %v; 1 run", got)
}

// LostCompleteReply: the reply to Complete is lost (the record was
// completed). The client gets 201, nothing logs a lost lease, and a retry
// after the lease would have passed replays: one run.
func LostCompleteReply(t *testing.T, f Faults) {
	px := faultproxy.New(t, f.Target)
	var runs atomic.Int64
	var drop atomic.Bool
	in := newInstance(t, idempotency.Config{Store: f.Open(t, px.Addr), Lease: FaultLease},
		charge(&runs, func(*http.Request) {
			if drop.Load() {
				px.DropNextReply()
			}
		}))
	if a := in.post("warm-" + rand.Text()); a.status != http.StatusCreated { // connections and statements ready
		t.Fatalf("warm-up: %v", a)
	}
	runs.Store(0)
	drop.Store(true)
	key := "lost-complete-" + rand.Text()
	first := in.post(key)
	in.offset.Store(int64(FaultLease + time.Second))
	again := in.post(key)
	if first.status != http.StatusCreated || runs.Load() != 1 || again.replayed != "true" || again.body != first.body {
		t.Fatalf("first %v, retry %v, runs %d; want 201, its replay, 1 run", first, again, runs.Load())
	}
	if l := in.logs.containing("lease"); len(l) > 0 {
		t.Fatalf("the middleware logged %q: the Complete sent again was taken for a stale holder's", l)
	}
	t.Logf("Complete's reply lost: first %d, retry replayed; 1 run", first.status)
}

// HolderCutOff: instance A holds the key and is cut off from the store;
// its lease passes while its handler runs, and instance B (whose link is
// fine) claims the key and runs it. A's handler context is cancelled at its
// lease's end; A's handler, which answers anyway, cannot store its
// response: the record is B's, and a third request replays B's.
func HolderCutOff(t *testing.T, f Faults) {
	const lease = time.Second
	px := faultproxy.New(t, f.Target)
	var runs atomic.Int64
	type cancelled struct {
		after time.Duration
		cause error
	}
	aCancelled := make(chan cancelled, 1)
	a := newInstance(t, idempotency.Config{Store: f.Open(t, px.Addr), Lease: lease, StoreTimeout: 20 * time.Second},
		charge(&runs, func(r *http.Request) {
			start := time.Now()
			px.Down()
			select {
			case <-r.Context().Done():
				aCancelled <- cancelled{time.Since(start), context.Cause(r.Context())}
			case <-time.After(10 * time.Second):
				aCancelled <- cancelled{}
			}
			// A handler that answers anyway.
		}))
	b := newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: lease}, charge(&runs, nil))
	key := "cut-off-" + rand.Text()
	aDone := make(chan answer, 1)
	go func() { aDone <- a.post(key) }()
	c := <-aCancelled
	if c.cause == nil || !errors.Is(c.cause, idempotency.ErrLeaseLost) || c.after > lease+lease/2 {
		t.Fatalf("A's handler context: cancelled after %v with cause %v; want cancelled by its lease's end (%v) with a lost lease", c.after, c.cause, lease)
	}
	fromB := b.post(key)
	if fromB.status != http.StatusCreated || fromB.replayed != "" {
		t.Fatalf("B after A's lease: %v, want its own run", fromB)
	}
	px.Up()
	fromA := <-aDone
	third := b.post(key)
	if third.replayed != "true" || third.body != fromB.body || runs.Load() != 2 {
		t.Fatalf("A got %v, B %v, a third request %v, runs %d; want the third to replay B's response (A fenced off)", fromA, fromB, third, runs.Load())
	}
	if len(a.logs.containing("lease of key")) == 0 {
		t.Fatal("A did not log its lost lease")
	}
	t.Logf("holder cut off: A's context cancelled %v after it started (lease %v): %v; A answered %d, B ran and its response is the record; 2 runs",
		c.after.Round(time.Millisecond), lease, c.cause, fromA.status)
}

// ClockAhead: instance B's clock runs a lease and a second ahead of
// instance A's. Every store decides by the now of the process that calls
// it (Redis's own expiry of the key, by its clock, can only remove a
// record sooner), so B takes the claim of A, whose handler is running, for
// expired, and runs the request too. A learns it at its next renewal,
// which the store refuses: its handler's context is cancelled with a lost
// lease, its Complete is refused, and the record is B's. Two runs: clocks
// apart by more than the lease defeat it, as the docs say.
func ClockAhead(t *testing.T, f Faults) {
	const lease = time.Second
	key := "clock-ahead-" + rand.Text()
	var runs atomic.Int64
	var b *instance
	fromB := make(chan answer, 1)
	aCause := make(chan error, 1)
	a := newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: lease},
		charge(&runs, func(r *http.Request) {
			fromB <- b.post(key) // while A's handler runs
			select {
			case <-r.Context().Done():
				aCause <- context.Cause(r.Context())
			case <-time.After(10 * time.Second):
				aCause <- nil
			}
			// A handler that answers anyway.
		}))
	b = newInstance(t, idempotency.Config{Store: f.Open(t, f.Target), Lease: lease}, charge(&runs, nil))
	b.offset.Store(int64(lease + time.Second))
	fromA := a.post(key)
	gotB, cause := <-fromB, <-aCause
	if gotB.status != http.StatusCreated || gotB.replayed != "" {
		t.Fatalf("B, its clock %v ahead, during A's handler: %v; want its own run (the store decides by B's clock)", lease+time.Second, gotB)
	}
	if !errors.Is(cause, idempotency.ErrLeaseLost) {
		t.Fatalf("A's handler context: cause %v, want a lost lease (its renewal refused)", cause)
	}
	third := b.post(key)
	if third.replayed != "true" || third.body != gotB.body || runs.Load() != 2 {
		t.Fatalf("A got %v, B %v, a third request %v, runs %d; want B's response replayed (A fenced off)", fromA, gotB, third, runs.Load())
	}
	t.Logf("B's clock %v ahead: B ran beside A; A's context cancelled (%v); A answered %d, the record is B's; 2 runs",
		lease+time.Second, cause, fromA.status)
}

// KillAt kills a child process (SIGKILL) at step (StepClaimed, StepHandled
// or StepCompleted) of a keyed request, and sends the client's retry to
// another child: within the killed holder's lease, then past it. It checks
// the runs of the handler (a file the children append to) and the answers:
//
//	claimed    409 within the lease; then one run, by the retry
//	handled    409 within the lease; then a second run (the window of a
//	           store kept apart from the handler's effects)
//	completed  the retry replays the killed child's response: one run
func KillAt(t *testing.T, f Faults, step string) {
	// Long enough for a child to start within it on a loaded machine; the
	// child "after" the lease has its clock moved instead of waiting.
	const lease = 20 * time.Second
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	key := "kill-" + step + "-" + rand.Text()
	body := `{"amount":1}`
	runsFile := filepath.Join(t.TempDir(), "runs")

	holder := Start(t, Options{Addr: f.ChildAddr, Lease: lease, Pause: step, Runs: runsFile})
	got := make(chan answer, 1)
	go func() {
		status, b, replayed, err := holder.Post(ctx, client, "/charges", key, body)
		got <- answer{status, b, replayed, err}
	}()
	holder.WaitLine(t, "paused "+step)
	holder.Kill()
	if a := <-got; a.err == nil {
		t.Fatalf("the client of the killed child got %v", a)
	}
	wantRuns := map[string]int{StepClaimed: 0, StepHandled: 1, StepCompleted: 1}[step]
	if n := len(Runs(t, runsFile)); n != wantRuns {
		t.Fatalf("runs when killed at %s: %d, want %d", step, n, wantRuns)
	}

	within := Start(t, Options{Addr: f.ChildAddr, Lease: lease, Runs: runsFile})
	status, b, replayed, err := within.Post(ctx, client, "/charges", key, body)
	switch step {
	case StepCompleted:
		if err != nil || status != http.StatusCreated || replayed != "true" || !strings.Contains(b, fmt.Sprintf(`"pid":%d`, holder.Pid)) {
			t.Fatalf("retry after a kill at %s: %d %s replayed %q %v; want the replay of the killed child's response", step, status, b, replayed, err)
		}
		if n := len(Runs(t, runsFile)); n != 1 {
			t.Fatalf("runs: %d, want 1", n)
		}
		t.Logf("killed at %s: the retry got the replay of the response the client never received; 1 run", step)
		return
	default:
		if err != nil || status != http.StatusConflict {
			t.Fatalf("retry within the killed holder's lease (killed at %s): %d %s %v, want 409", step, status, b, err)
		}
	}
	after := Start(t, Options{Addr: f.ChildAddr, Lease: lease, ClockOffset: lease + time.Second, Runs: runsFile})
	status, b, replayed, err = after.Post(ctx, client, "/charges", key, body)
	if err != nil || status != http.StatusCreated || replayed != "" || !strings.Contains(b, fmt.Sprintf(`"pid":%d`, after.Pid)) {
		t.Fatalf("retry after the lease (killed at %s): %d %s replayed %q %v, want a run", step, status, b, replayed, err)
	}
	if n := len(Runs(t, runsFile)); n != wantRuns+1 {
		t.Fatalf("runs after the retry (killed at %s): %d, want %d", step, n, wantRuns+1)
	}
	t.Logf("killed at %s: 409 within the lease, then a run after it; %d runs in all", step, wantRuns+1)
}
