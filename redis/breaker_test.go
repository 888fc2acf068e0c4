package redis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

var _ retry.Breaker = (*redis.Breaker)(nil)

var (
	t0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down = errors.New("connection refused")
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// newLocal is a process's own breaker: the defaults (trip at ≥ 50 %
// failures once 20 calls were made, open 30 s) without jitter, so that
// open periods end at known instants.
func newLocal(t testing.TB, name string) *breaker.Breaker {
	t.Helper()
	l, err := breaker.New(breaker.Config{Name: name, OpenJitter: breaker.Disabled})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newProc is one process of a fleet: its own client of srv, its own local
// breaker named name.
func newProc(t testing.TB, c goredis.UniversalClient, name string, obs event.Observer) *redis.Breaker {
	t.Helper()
	b, err := redis.NewBreaker(redis.BreakerConfig{Client: c, Local: newLocal(t, name), Observer: obs, Hold: redis.NoHold})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fail makes n calls at now that fail, all allowed.
func fail(t *testing.T, b *redis.Breaker, now time.Time, n int) {
	t.Helper()
	for i := range n {
		tk, err := b.AllowAt(now, false)
		if err != nil {
			t.Fatalf("call %d at +%v refused: %v", i+1, now.Sub(t0), err)
		}
		b.DoneAt(now, tk, time.Millisecond, down)
	}
}

func mustSync(t *testing.T, b *redis.Breaker, now time.Time) {
	t.Helper()
	if err := b.SyncAt(t.Context(), now); err != nil {
		t.Fatalf("sync at +%v: %v", now.Sub(t0), err)
	}
}

func mustAllow(t *testing.T, who string, b *redis.Breaker, now time.Time) uint64 {
	t.Helper()
	tk, err := b.AllowAt(now, false)
	if err != nil {
		t.Fatalf("%s at +%v: refused (%v), want allowed", who, now.Sub(t0), err)
	}
	return tk
}

// mustRefuseFleet checks that b refuses at now because the fleet is open,
// with a hint of wait.
func mustRefuseFleet(t *testing.T, who string, b *redis.Breaker, now time.Time, wait time.Duration) {
	t.Helper()
	_, err := b.AllowAt(now, false)
	if err == nil {
		t.Fatalf("%s at +%v: allowed, want refused because the fleet is open", who, now.Sub(t0))
	}
	if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, redis.ErrFleetOpen) {
		t.Fatalf("%s at +%v: %v, want an error matching breaker.ErrOpen and redis.ErrFleetOpen", who, now.Sub(t0), err)
	}
	if h, ok := retry.HintOf(err); !ok || h != wait {
		t.Fatalf("%s at +%v: hint %v (%v), want %v", who, now.Sub(t0), h, ok, wait)
	}
}

// TestBreakerFleetTrip: A sees the failures and trips; once A and then B
// have synced, B refuses at once without having seen a failure, until A's
// open period ends; then B's own (closed) breaker decides again, and A's
// probes as before. A breaker of another name is not affected.
func TestBreakerFleetTrip(t *testing.T) {
	srv := redistest.Start(t)
	var rejected []event.Event
	var mu sync.Mutex
	obs := event.Func(func(_ context.Context, e event.Event) {
		mu.Lock()
		rejected = append(rejected, e)
		mu.Unlock()
	})
	a := newProc(t, srv.Client(t), "payments", nil)
	b := newProc(t, srv.Client(t), "payments", obs)
	c := newProc(t, srv.Client(t), "payments", nil)
	other := newProc(t, srv.Client(t), "search", nil)

	fail(t, a, at(0), 20) // A trips: open until +30s
	if u, ok := a.OpenUntil(at(0)); ok {
		t.Fatalf("A's fleet state open until %v before any sync", u)
	}
	mustSync(t, a, at(100*time.Millisecond))
	mustSync(t, b, at(200*time.Millisecond))
	mustSync(t, other, at(300*time.Millisecond))

	mustRefuseFleet(t, "B", b, at(time.Second), 29*time.Second)
	mustRefuseFleet(t, "B", b, at(30*time.Second-500*time.Microsecond), time.Millisecond) // rounded up
	if s := b.StateAt(at(time.Second)); s != breaker.Open {
		t.Fatalf("B's state %v, want open", s)
	}
	mustAllow(t, "C (not synced yet)", c, at(time.Second))
	mustAllow(t, "the breaker named search", other, at(time.Second))
	mustSync(t, c, at(2*time.Second))
	mustRefuseFleet(t, "C", c, at(2*time.Second), 28*time.Second)
	mustRefuseFleet(t, "A", a, at(2*time.Second), 28*time.Second)

	_, err := b.AllowAt(at(10*time.Second), false)
	want := `breaker: "payments" open after 1 trip: call refused, next probe in 20s (tripped by: redis: open for the fleet: a process sharing this breaker tripped)`
	if err == nil || err.Error() != want {
		t.Fatalf("B's refusal: %v\nwant %s", err, want)
	}
	mu.Lock()
	n := len(rejected)
	e := rejected[n-1]
	mu.Unlock()
	if n != 3 || e.Kind != event.BreakerRejected || e.Component != "redis" || e.Name != "payments" || e.Wait != 20*time.Second || e.Err != err {
		t.Fatalf("%d events, last %+v; want 3 BreakerRejected from redis, payments, 20s", n, e)
	}

	// At +30s the fleet's period is over: B's local breaker, which saw no
	// failure, is closed and allows; A's is half-open and lets its probe
	// through, which fails: A opens again, for 60 s.
	tk := mustAllow(t, "B", b, at(30*time.Second))
	b.DoneAt(at(30*time.Second), tk, time.Millisecond, nil)
	if s := b.StateAt(at(30 * time.Second)); s != breaker.Closed {
		t.Fatalf("B after the fleet's period: %v, want closed", s)
	}
	tk = mustAllow(t, "A's probe", a, at(30*time.Second))
	if _, err := a.AllowAt(at(30*time.Second), false); err == nil || errors.Is(err, redis.ErrFleetOpen) {
		t.Fatalf("A's second call while its probe is in flight: %v, want its local half-open refusal", err)
	}
	a.DoneAt(at(31*time.Second), tk, time.Millisecond, down)
	mustSync(t, a, at(31*time.Second))
	mustSync(t, b, at(32*time.Second))
	mustRefuseFleet(t, "B", b, at(32*time.Second), 59*time.Second)
	var oe *breaker.OpenError
	if _, err := b.AllowAt(at(32*time.Second), false); !errors.As(err, &oe) || oe.Trips != 2 || oe.Name != "payments" {
		t.Fatalf("B's refusal after A's second trip: %#v, want an OpenError of payments after 2 trips", err)
	}
	mustAllow(t, "B", b, at(91*time.Second))
	mustAllow(t, "the breaker named search", other, at(32*time.Second))
	if u, ok := other.OpenUntil(at(32 * time.Second)); ok {
		t.Fatalf("the breaker named search: fleet open until %v", u)
	}
}

// TestBreakerHold: with Hold, a process whose breaker did not trip keeps
// refusing after the fleet's period, while the one that tripped probes:
// a failed probe's new period reaches it before it calls; after a probe
// that succeeded it resumes when Hold ends.
func TestBreakerHold(t *testing.T) {
	srv := redistest.Start(t)
	proc := func(name string) *redis.Breaker {
		b, err := redis.NewBreaker(redis.BreakerConfig{Client: srv.Client(t), Local: newLocal(t, name), Hold: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := proc("payments"), proc("payments")
	fail(t, a, at(0), 20) // open until +30s
	mustSync(t, a, at(0))
	mustSync(t, b, at(0))
	mustRefuseFleet(t, "B", b, at(30*time.Second), 2*time.Second) // held
	if s := b.StateAt(at(31 * time.Second)); s != breaker.Open {
		t.Fatalf("B while held: state %v, want open", s)
	}
	tk := mustAllow(t, "A's probe", a, at(30*time.Second)) // A tripped: not held
	a.DoneAt(at(30*time.Second), tk, time.Millisecond, down)
	mustSync(t, a, at(30500*time.Millisecond)) // open until +90s
	mustSync(t, b, at(31*time.Second))
	mustRefuseFleet(t, "B", b, at(31*time.Second), 59*time.Second)
	mustRefuseFleet(t, "B", b, at(91*time.Second), time.Second) // held again

	// This time A's probe succeeds: B resumes when Hold ends, and so does
	// A, whose breaker is now closed like B's.
	tk = mustAllow(t, "A's probe", a, at(90*time.Second))
	a.DoneAt(at(90*time.Second), tk, time.Millisecond, nil)
	mustRefuseFleet(t, "A, closed", a, at(90*time.Second), 2*time.Second)
	mustSync(t, a, at(90*time.Second))
	mustSync(t, b, at(91*time.Second))
	mustRefuseFleet(t, "B", b, at(92*time.Second-time.Millisecond), time.Millisecond)
	mustAllow(t, "B after Hold", b, at(92*time.Second))
	if s := b.StateAt(at(92 * time.Second)); s != breaker.Closed {
		t.Fatalf("B after Hold: state %v, want closed", s)
	}
}

// TestBreakerLatestEndWins: of two trips, the fleet keeps the later end,
// whatever the order of the syncs, and Redis expires the key when it
// passes.
func TestBreakerLatestEndWins(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	a := newProc(t, srv.Client(t), "payments", nil)
	b := newProc(t, srv.Client(t), "payments", nil)
	c := newProc(t, srv.Client(t), "payments", nil)
	fail(t, a, at(0), 20)              // open until +30s
	fail(t, b, at(10*time.Second), 20) // open until +40s
	mustSync(t, b, at(10*time.Second))
	mustSync(t, a, at(11*time.Second)) // publishes +30s: earlier, changes nothing
	mustSync(t, c, at(12*time.Second))
	for _, p := range []struct {
		who string
		b   *redis.Breaker
	}{{"A", a}, {"B", b}, {"C", c}} {
		if u, ok := p.b.OpenUntil(at(12 * time.Second)); !ok || !u.Equal(at(40*time.Second)) {
			t.Fatalf("%s: fleet open until %v (%v), want +40s", p.who, u.Sub(t0), ok)
		}
	}
	mustRefuseFleet(t, "A", a, at(35*time.Second), 5*time.Second)
	if got := rdb.HGet(t.Context(), "yaoki:breaker:payments", "u").Val(); got != "1772366440000" {
		t.Fatalf("stored end %s, want 1772366440000 (+40s in Unix ms)", got)
	}
	// B published at +10s an end 30 s later: the key lives 30 s (real
	// time), whatever the stepped clock says.
	if ttl := rdb.PTTL(t.Context(), "yaoki:breaker:payments").Val(); ttl <= 25*time.Second || ttl > 30*time.Second {
		t.Fatalf("PTTL %v, want about 30s", ttl)
	}
	// Nothing is open any more at +40s: a sync then reads the same end,
	// which no longer refuses.
	mustSync(t, c, at(40*time.Second))
	mustAllow(t, "C", c, at(40*time.Second))
}

// TestBreakerPrefixAndDefaults: the key is Prefix + the local breaker's name.
func TestBreakerPrefix(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	local := newLocal(t, "inventory")
	b, err := redis.NewBreaker(redis.BreakerConfig{Client: srv.Client(t), Local: local, Prefix: "shop:"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Key() != "shop:inventory" || b.Name() != "inventory" {
		t.Fatalf("key %q name %q, want shop:inventory, inventory", b.Key(), b.Name())
	}
	fail(t, b, at(0), 20)
	mustSync(t, b, at(0))
	if n := rdb.Exists(t.Context(), "shop:inventory").Val(); n != 1 {
		t.Fatal("key shop:inventory not written")
	}
	d := newProc(t, srv.Client(t), "inventory", nil) // default prefix: another fleet
	if d.Key() != "yaoki:breaker:inventory" {
		t.Fatalf("default key %q", d.Key())
	}
	mustSync(t, d, at(time.Second))
	mustAllow(t, "a breaker with the default prefix", d, at(time.Second))
}

// TestBreakerRedisUnreachable: while A cannot reach Redis its local breaker
// goes on alone and SyncAt says why; its trip reaches the fleet at the first
// sync that succeeds, unless its open period has ended by then. A client
// pointed at a closed port fails the same way.
func TestBreakerRedisUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t) // cut (Down) as a Redis outage or a partition looks to a client
	ca := goredis.NewClient(&goredis.Options{Addr: link.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = ca.Close() })
	a := newProc(t, ca, "payments", nil)
	b := newProc(t, srv.Client(t), "payments", nil)
	mustSync(t, a, at(0))

	link.Down()
	fail(t, a, at(time.Second), 20) // open until +31s
	err := a.SyncAt(t.Context(), at(2*time.Second))
	if err == nil || !strings.Contains(err.Error(), `redis: breaker "payments" sync with the fleet (key yaoki:breaker:payments)`) {
		t.Fatalf("sync while Redis is cut off: %v, want an error naming the breaker and its key", err)
	}
	_, err = a.AllowAt(at(3*time.Second), false)
	if !errors.Is(err, breaker.ErrOpen) || errors.Is(err, redis.ErrFleetOpen) || !errors.Is(err, down) {
		t.Fatalf("A while cut off: %v, want its local breaker's refusal (tripped by %v)", err, down)
	}
	mustSync(t, b, at(3*time.Second))
	mustAllow(t, "B (A's trip not published)", b, at(3*time.Second))

	link.Up()
	mustSync(t, a, at(5*time.Second))
	mustSync(t, b, at(6*time.Second))
	mustRefuseFleet(t, "B", b, at(6*time.Second), 25*time.Second)

	// A trip whose open period ends while Redis is out of reach is never
	// published.
	x := newProc(t, ca, "search", nil)
	y := newProc(t, srv.Client(t), "search", nil)
	link.Down()
	fail(t, x, at(0), 20) // open until +30s
	if err := x.SyncAt(t.Context(), at(time.Second)); err == nil {
		t.Fatal("sync through a cut link succeeded")
	}
	link.Up()
	mustSync(t, x, at(30*time.Second))
	mustSync(t, y, at(30*time.Second))
	mustAllow(t, "Y", y, at(30*time.Second))

	// A client of a port where nothing listens.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	cz := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = cz.Close() })
	z := newProc(t, cz, "payments", nil)
	if err := z.SyncAt(t.Context(), at(7*time.Second)); err == nil {
		t.Fatal("sync with a closed port succeeded")
	}
	mustAllow(t, "Z (never synced)", z, at(7*time.Second))
}

// TestBreakerThroughRetry: B, whose fleet is open, makes retry.Do give up
// with reason ReasonBreakerOpen, before the first attempt, with the wait.
func TestBreakerThroughRetry(t *testing.T) {
	srv := redistest.Start(t)
	a := newProc(t, srv.Client(t), "payments", nil)
	b := newProc(t, srv.Client(t), "payments", nil)
	now := time.Now()
	fail(t, a, now, 20)
	mustSync(t, a, now)
	mustSync(t, b, now)
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{Env: &retry.Env{Breaker: b}}, func(context.Context) error {
		calls++
		return nil
	})
	var re *retry.Error
	if !errors.As(err, &re) || re.Reason != retry.ReasonBreakerOpen || calls != 0 {
		t.Fatalf("retry.Do through B: %v after %d calls, want reason BreakerOpen and no call", err, calls)
	}
	if re.Wait <= 25*time.Second || re.Wait > 30*time.Second || !errors.Is(err, redis.ErrFleetOpen) || !errors.Is(err, retry.ErrBreakerOpen) {
		t.Fatalf("give-up %v: wait %v, want about 30s, matching ErrFleetOpen and ErrBreakerOpen", err, re.Wait)
	}
}

func TestBreakerConfig(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	named := newLocal(t, "payments")
	unnamed := newLocal(t, "")
	for _, tc := range []struct {
		name string
		cfg  redis.BreakerConfig
		want string // "" for no error
	}{
		{"no client", redis.BreakerConfig{Local: named}, "redis: invalid configuration: BreakerConfig.Client: missing; want a go-redis client"},
		{"no local breaker", redis.BreakerConfig{Client: c}, "redis: invalid configuration: BreakerConfig.Local: missing; want a *breaker.Breaker"},
		{"a local breaker without a name", redis.BreakerConfig{Client: c, Local: unnamed}, "redis: invalid configuration: BreakerConfig.Local.Name(): missing; want a non-empty name"},
		{"sync interval below 1ms", redis.BreakerConfig{Client: c, Local: named, SyncInterval: time.Microsecond}, "redis: invalid configuration: BreakerConfig.SyncInterval: 1µs out of range; want 1ms ≤ SyncInterval ≤ 1h"},
		{"negative sync interval", redis.BreakerConfig{Client: c, Local: named, SyncInterval: -time.Second}, "redis: invalid configuration: BreakerConfig.SyncInterval: -1s out of range"},
		{"sync interval above 1h", redis.BreakerConfig{Client: c, Local: named, SyncInterval: 2 * time.Hour}, "redis: invalid configuration: BreakerConfig.SyncInterval: 2h0m0s out of range"},
		{"negative hold", redis.BreakerConfig{Client: c, Local: named, Hold: -time.Second}, "redis: invalid configuration: BreakerConfig.Hold: -1s out of range; want 0 ≤ Hold ≤ 1h (0 means 2 × SyncInterval), or NoHold"},
		{"hold above 1h", redis.BreakerConfig{Client: c, Local: named, Hold: 61 * time.Minute}, "redis: invalid configuration: BreakerConfig.Hold: 1h1m0s out of range"},
		{"defaults", redis.BreakerConfig{Client: c, Local: named}, ""},
		{"bounds", redis.BreakerConfig{Client: c, Local: named, SyncInterval: time.Millisecond}, ""},
		{"bounds", redis.BreakerConfig{Client: c, Local: named, SyncInterval: time.Hour, Hold: time.Hour}, ""},
		{"no hold", redis.BreakerConfig{Client: c, Local: named, Hold: redis.NoHold}, ""},
	} {
		b, err := redis.NewBreaker(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want == "" && b == nil:
			t.Errorf("%s: nil breaker", tc.name)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, redis.ErrInvalidConfig)):
			t.Errorf("%s: %v, want an ErrInvalidConfig starting %q", tc.name, err, tc.want)
		}
	}
}

// TestBreakerRunStops: Run syncs until its context ends, then returns.
func TestBreakerRunStops(t *testing.T) {
	srv := redistest.Start(t)
	var errs atomic.Int32
	b, err := redis.NewBreaker(redis.BreakerConfig{Client: srv.Client(t), Local: newLocal(t, "payments"),
		SyncInterval: 10 * time.Millisecond, OnError: func(error) { errs.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		b.Run(ctx)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5 s after its context was cancelled")
	}
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d errors reported for a cancelled context, want none", n)
	}
}

// TestBreakerNoAllocations: the closed path and a refusal because the fleet
// is open allocate nothing.
func TestBreakerNoAllocations(t *testing.T) {
	srv := redistest.Start(t)
	a := newProc(t, srv.Client(t), "payments", nil)
	b := newProc(t, srv.Client(t), "payments", nil)
	mustSync(t, b, at(0))
	if n := testing.AllocsPerRun(1000, func() {
		tk, _ := b.AllowAt(at(0), false)
		b.DoneAt(at(0), tk, time.Millisecond, nil)
	}); n != 0 {
		t.Errorf("closed AllowAt+DoneAt: %v allocations, want 0", n)
	}
	fail(t, a, at(0), 20)
	mustSync(t, a, at(0))
	mustSync(t, b, at(0))
	if n := testing.AllocsPerRun(1000, func() { _, _ = b.AllowAt(at(time.Second), false) }); n != 0 {
		t.Errorf("refusal because the fleet is open: %v allocations, want 0", n)
	}
}

// TestNilBreakerAllows: a nil *Breaker (a fleet breaker left unset, or
// handed on from a NewBreaker that failed) allows every call and syncs
// nothing, as a nil *Budget does, instead of panicking at the first call.
func TestNilBreakerAllows(t *testing.T) {
	var b *redis.Breaker
	tk, err := b.AllowAt(at(0), true)
	if err != nil {
		t.Fatalf("AllowAt = %v, want allowed", err)
	}
	b.DoneAt(at(0), tk, time.Second, down)
	if err := b.SyncAt(t.Context(), at(0)); err != nil {
		t.Fatalf("SyncAt = %v, want nothing to do", err)
	}
	b.Run(t.Context()) // returns at once
	if _, open := b.OpenUntil(at(0)); open || b.StateAt(at(0)) != breaker.Closed || b.Name() != "" || b.Key() != "" {
		t.Fatal("a nil fleet breaker reports itself open or named")
	}
}

// TestFleetProbesWhenPeriodEnds: A and B tripped at the same instant, C
// did not; once the fleet's period is over, 16 goroutines in each process
// call at once. What goes to the dependency is what the documentation
// says: one probe from each process whose breaker tripped (its own
// HalfOpenProbes, 1), nothing from C, held for Hold; and when the probes
// fail, the new period reaches C before its hold ends.
func TestFleetProbesWhenPeriodEnds(t *testing.T) {
	srv := redistest.Start(t)
	procs := make([]*redis.Breaker, 3)
	for i := range procs {
		b, err := redis.NewBreaker(redis.BreakerConfig{Client: client(t, srv.Addr), Local: newLocal(t, "payments")}) // Hold: 2 s
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = b
	}
	a, b, c := procs[0], procs[1], procs[2]
	fail(t, a, at(0), 20) // open until +30 s
	fail(t, b, at(0), 20)
	for _, p := range procs {
		mustSync(t, p, at(time.Second))
	}
	end := at(30*time.Second + time.Millisecond)
	for _, p := range procs {
		mustSync(t, p, end)
	}
	var sent [3]atomic.Int32
	tickets := make(chan struct {
		p  *redis.Breaker
		tk uint64
	}, 100)
	var wg sync.WaitGroup
	for i, p := range procs {
		for range 16 {
			wg.Go(func() {
				if tk, err := p.AllowAt(end, false); err == nil {
					sent[i].Add(1)
					tickets <- struct {
						p  *redis.Breaker
						tk uint64
					}{p, tk}
				}
			})
		}
	}
	wg.Wait()
	close(tickets)
	if sa, sb, sc := sent[0].Load(), sent[1].Load(), sent[2].Load(); sa != 1 || sb != 1 || sc != 0 {
		t.Fatalf("calls let through when the period ended: A %d, B %d, C %d; want one probe from A and from B, none from C (held)", sa, sb, sc)
	}
	for x := range tickets {
		x.p.DoneAt(end, x.tk, time.Millisecond, down) // the probes fail: open 60 s more
	}
	mustSync(t, a, end.Add(time.Second))
	mustSync(t, c, end.Add(time.Second))
	mustRefuseFleet(t, "C after the failed probes, within its hold", c, end.Add(time.Second), 59*time.Second)
}
