package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

var _ retry.Budget = (*redis.Budget)(nil)

// The stepped clock starts at t0 (breaker_test.go): a real date, so that
// Redis keys carry plausible slot numbers.

// client is a process's own connection to the server (or to a proxy of it).
func client(t testing.TB, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 2, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newBudget returns a process's budget of the fleet name with a floor of
// 10 retries/s (100 per window, budget.Share's default for one process), so
// that the tests' figures read against a budget.Share's; the fleet's default
// floor is TestBudgetDefaultFleetFloor's.
func newBudget(t testing.TB, c goredis.UniversalClient, name string) *redis.Budget {
	t.Helper()
	b, err := redis.NewBudget(redis.BudgetConfig{Client: c, Name: name, MinPerSecond: budget.DefaultMinPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call makes one logical request at now through b with up to 3 attempts,
// each failing when fail says so, and returns the attempts made. The
// retries are decided at the instant of the failure (a backoff of a few
// tens of ms changes nothing when syncs are 1 s apart).
func call(b retry.Budget, now time.Time, fail func() bool) int {
	for a := 1; ; a++ {
		ok := !fail()
		b.RecordAt(now, a == 1, ok)
		if ok || a == 3 || !b.AllowRetryAt(now, false) {
			return a
		}
	}
}

// fleet is processes sharing a dependency on stepped time, millisecond by
// millisecond: process i starts at i s/n (n processes), syncs then and
// every second after, and calls every 1 s/perSecond from its start.
type fleet struct {
	budgets   []retry.Budget
	sync      func(i int, now time.Time) // nil: nothing to sync
	perSecond int
	fail      func(proc int) bool
}

// tally is what a run counted, per second of stepped time.
type tally struct {
	calls, attempts int
	granted         []int // retries granted during each second
	succeeded       []int // successful attempts during each second
}

// run steps from start for d and one second more, so that every process
// calls for d from its start (and syncs); with traffic false only the
// syncs run.
func (f *fleet) run(start time.Time, d time.Duration, traffic bool) tally {
	n := len(f.budgets)
	every := int(time.Second.Milliseconds()) / max(1, f.perSecond)
	secs := int(d/time.Second) + 1
	tl := tally{granted: make([]int, secs), succeeded: make([]int, secs)}
	for ms := range secs * 1000 {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		for i := range n {
			since := ms - i*1000/n
			if since < 0 {
				continue
			}
			if f.sync != nil && since%1000 == 0 {
				f.sync(i, now)
			}
			if !traffic || since >= int(d.Milliseconds()) || since%every != 0 {
				continue
			}
			failed := 0
			a := call(f.budgets[i], now, func() bool {
				if f.fail(i) {
					failed++
					return true
				}
				return false
			})
			tl.calls++
			tl.attempts += a
			tl.granted[ms/1000] += a - 1
			tl.succeeded[ms/1000] += a - failed
		}
	}
	return tl
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// redisFleet returns n budgets called name, each with its own client, and
// a sync function for fleet.
func redisFleet(t *testing.T, srv *redistest.Server, name string, n int) ([]*redis.Budget, []retry.Budget, func(int, time.Time)) {
	bs := make([]*redis.Budget, n)
	rbs := make([]retry.Budget, n)
	for i := range bs {
		bs[i] = newBudget(t, client(t, srv.Addr), name)
		rbs[i] = bs[i]
	}
	return bs, rbs, func(i int, now time.Time) {
		if err := bs[i].SyncAt(t.Context(), now); err != nil {
			t.Fatal(err)
		}
	}
}

func dead(int) bool { return true }

// TestBudgetFleetFloorDeadDependency: three processes sharing one budget
// against a dependency that fails everything get the fleet's floor (10/s ×
// 10 s = 100 retries over the window) between them, not 100 each.
func TestBudgetFleetFloorDeadDependency(t *testing.T) {
	srv := redistest.Start(t)
	_, rbs, syncAt := redisFleet(t, srv, "orders", 3)
	f := &fleet{budgets: rbs, sync: syncAt, perSecond: 10, fail: dead}
	f.run(t0.Add(-11*time.Second), 10*time.Second, false) // a fleet that already runs
	tl := f.run(t0, 10*time.Second, true)
	granted, maxSecond := sum(tl.granted), 0
	for _, g := range tl.granted {
		maxSecond = max(maxSecond, g)
	}
	t.Logf("3 processes, 10 calls/s each, 10 s, everything failing: %d calls, %d retries granted (per second %v), %.3f attempts per call",
		tl.calls, granted, tl.granted, float64(tl.attempts)/float64(tl.calls))
	// The documented bound: the allowance, plus what the fleet granted in
	// one SyncInterval before the others heard of it.
	if granted > 100+maxSecond {
		t.Errorf("the fleet granted %d retries over the window, want ≤ the floor 100 + one second's %d", granted, maxSecond)
	}
	if granted < 90 || granted > 110 {
		t.Errorf("the fleet granted %d retries over the window, want about the fleet's floor of 100 (three local budgets: 300)", granted)
	}

	// The same processes with a budget.Share each get a floor each.
	local := make([]retry.Budget, 3)
	for i := range local {
		local[i], _ = budget.NewShare(budget.ShareConfig{})
	}
	lt := (&fleet{budgets: local, perSecond: 10, fail: dead}).run(t0, 10*time.Second, true)
	t.Logf("the same with a budget.Share per process: %d retries granted", sum(lt.granted))
	if g := sum(lt.granted); g < 300 {
		t.Errorf("three local budgets granted %d, want at least 3 × 100 (a floor each)", g)
	}
}

// TestBudgetFleetPartialOutage: with half the attempts failing, the fleet's
// retries over every window stay within Ratio × the fleet's successes +
// the floor, and the fleet grants about as many as one budget.Share that
// all three processes would share in memory.
func TestBudgetFleetPartialOutage(t *testing.T) {
	srv := redistest.Start(t)
	_, rbs, syncAt := redisFleet(t, srv, "inventory", 3)
	rng := rand.New(rand.NewPCG(7, 7))
	half := func(int) bool { return rng.Float64() < 0.5 }
	f := &fleet{budgets: rbs, sync: syncAt, perSecond: 50, fail: half}
	f.run(t0.Add(-11*time.Second), 10*time.Second, false)
	tl := f.run(t0, 30*time.Second, true)
	// Counts reach Redis at the next sync, up to 1 s late: a window's
	// allowance counts the successes of the second before it too.
	for end := 10; end <= 30; end++ {
		granted := sum(tl.granted[end-10 : end])
		succ := sum(tl.succeeded[max(0, end-11):end])
		allowance := 0.2*float64(succ) + 100
		if float64(granted) > allowance {
			t.Errorf("window ending at %d s: %d retries, want ≤ 0.2 × %d successes + 100", end, granted, succ)
		}
	}
	one, _ := budget.NewShare(budget.ShareConfig{})
	ot := (&fleet{budgets: []retry.Budget{one, one, one}, perSecond: 50, fail: half}).run(t0, 30*time.Second, true)
	t.Logf("3 processes × 50 calls/s × 30 s, half the attempts failing: %d calls, %d successes, %d retries granted, %.3f attempts per call",
		tl.calls, sum(tl.succeeded), sum(tl.granted), float64(tl.attempts)/float64(tl.calls))
	t.Logf("the same sharing one budget.Share in memory:                 %d calls, %d successes, %d retries granted, %.3f attempts per call",
		ot.calls, sum(ot.succeeded), sum(ot.granted), float64(ot.attempts)/float64(ot.calls))
	if g, o := sum(tl.granted), sum(ot.granted); float64(g) < 0.9*float64(o) || float64(g) > 1.05*float64(o) {
		t.Errorf("the fleet granted %d retries, one shared budget.Share %d: want within -10 %%/+5 %%", g, o)
	}
}

// TestBudgetNamesIndependent: a budget with another name has its own floor
// whatever the first one spent.
func TestBudgetNamesIndependent(t *testing.T) {
	srv := redistest.Start(t)
	_, rbs, syncAt := redisFleet(t, srv, "a", 2)
	f := &fleet{budgets: rbs, sync: syncAt, perSecond: 10, fail: dead}
	f.run(t0.Add(-11*time.Second), 10*time.Second, false)
	f.run(t0, 10*time.Second, true)
	now := t0.Add(10 * time.Second)
	syncAt(0, now)
	if st := rbs[0].(*redis.Budget).StateAt(now); st.Retries < 50 || st.Quota >= 10 {
		t.Fatalf("budget a after the storm: %+v, want most of its floor spent", st)
	}
	other := newBudget(t, client(t, srv.Addr), "b")
	if err := other.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if st := other.StateAt(now); st.Processes != 1 || st.Retries != 0 || st.Quota != 100 {
		t.Fatalf("budget b: %+v, want 1 process, no retries, its whole floor of 100", st)
	}
	granted := 0
	for range 150 {
		if other.AllowRetryAt(now, false) {
			granted++
		}
	}
	if granted != 100 {
		t.Fatalf("budget b granted %d of 150, want its floor of 100", granted)
	}
}

// fleetTotals reads the fleet's totals through a budget of its own that
// counts nothing.
func fleetTotals(t *testing.T, obs *redis.Budget, now time.Time) redis.BudgetState {
	t.Helper()
	if err := obs.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	return obs.StateAt(now)
}

// TestBudgetCountsSurviveFailedSync: counts that a sync could not send are
// sent by the next one; a sync whose script ran but whose reply was lost
// does not count them twice.
func TestBudgetCountsSurviveFailedSync(t *testing.T) {
	srv := redistest.Start(t)
	px := srv.Proxy(t)
	b := newBudget(t, client(t, px.Addr), "payments")
	obs := newBudget(t, client(t, srv.Addr), "payments")
	now := t0
	step := func() time.Time { now = now.Add(time.Second); return now }
	if err := b.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	record := func(successes, retries int) {
		for range successes {
			b.RecordAt(now, true, true)
		}
		for range retries {
			if !b.AllowRetryAt(now, false) {
				t.Fatal("a retry was refused with the budget nearly unused")
			}
		}
	}

	record(50, 5)
	px.Down()
	if err := b.SyncAt(t.Context(), step()); err == nil {
		t.Fatal("sync through a proxy that is down: no error")
	}
	if st := b.StateAt(now); st.Shared {
		t.Fatalf("after a failed sync: %+v, want Shared false (deciding alone)", st)
	}
	if st := fleetTotals(t, obs, now); st.Successes != 0 || st.Retries != 0 {
		t.Fatalf("the fleet after a failed sync: %+v, want nothing sent", st)
	}
	record(10, 0)
	px.Up()
	if err := b.SyncAt(t.Context(), step()); err != nil {
		t.Fatal(err)
	}
	if st := fleetTotals(t, obs, now); st.Successes != 60 || st.Retries != 5 || st.Processes != 2 {
		t.Fatalf("the fleet after the next sync: %+v, want the 60 successes and 5 retries of both periods, 2 processes", st)
	}

	record(7, 0)
	px.DropReplies()
	err := b.SyncAt(t.Context(), step())
	if err == nil {
		t.Fatal("sync whose reply was dropped: no error")
	}
	t.Logf("reply lost: %v", err)
	if st := fleetTotals(t, obs, now); st.Successes != 67 {
		t.Fatalf("after a sync whose reply was lost: %+v, want the script to have run (67 successes)", st)
	}
	record(3, 0)
	px.Up()
	if err := b.SyncAt(t.Context(), step()); err != nil {
		t.Fatal(err)
	}
	if st := fleetTotals(t, obs, now); st.Successes != 70 || st.Retries != 5 {
		t.Fatalf("after the sync that followed a lost reply: %+v, want 70 successes (not 77) and 5 retries", st)
	}
	if st := b.StateAt(now); !st.Shared || st.Successes != 70 {
		t.Fatalf("the process after it: %+v, want Shared with the fleet's 70 successes", st)
	}
}

// TestBudgetFallbackWhileRedisDown: a process that cannot reach Redis
// decides alone on its own counts, with its part of the fleet's floor (the
// floor divided by the processes it last saw), and shares again once a sync
// succeeds. A sync older than the window makes it decide alone too.
func TestBudgetFallbackWhileRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	px := srv.Proxy(t)
	bs, rbs, _ := redisFleet(t, srv, "search", 2)
	cut := newBudget(t, client(t, px.Addr), "search")
	all := []*redis.Budget{cut, bs[0], bs[1]}
	syncAll := func(i int, now time.Time) { _ = all[i].SyncAt(t.Context(), now) }
	(&fleet{budgets: []retry.Budget{cut, rbs[0], rbs[1]}, sync: syncAll}).run(t0.Add(-11*time.Second), 10*time.Second, false)
	if st := cut.StateAt(t0); !st.Shared || st.Processes != 3 {
		t.Fatalf("before the cut: %+v, want Shared with 3 processes", st)
	}

	px.Down()
	f := &fleet{budgets: []retry.Budget{cut}, sync: func(_ int, now time.Time) {
		if err := cut.SyncAt(t.Context(), now); err == nil {
			t.Fatal("sync through a proxy that is down: no error")
		}
	}, perSecond: 10, fail: dead}
	tl := f.run(t0, 10*time.Second, true)
	st := cut.StateAt(t0.Add(10 * time.Second))
	t.Logf("alone, 10 calls/s for 10 s, everything failing: %d retries granted; state %+v", sum(tl.granted), st)
	if st.Shared {
		t.Fatal("Shared while Redis cannot be reached")
	}
	if g := sum(tl.granted); g != 33 {
		t.Fatalf("granted %d retries alone, want 33: the floor of 100 over the 3 processes last seen", g)
	}
	if lv := cut.LevelAt(t0.Add(10*time.Second - time.Millisecond)); lv > 0.34 {
		t.Fatalf("LevelAt after its floor was spent: %v, want < 1", lv)
	}

	px.Up()
	now := t0.Add(10 * time.Second)
	if err := cut.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if st := cut.StateAt(now); !st.Shared || st.Retries != 33 {
		t.Fatalf("after Redis came back: %+v, want Shared, with the 33 retries it granted alone", st)
	}
	// A sync older than the window is not trusted.
	if st := cut.StateAt(now.Add(10*time.Second + time.Millisecond)); st.Shared {
		t.Fatalf("10 s after the last sync: %+v, want Shared false", st)
	}
}

// TestBudgetManyLightClients reproduces docs/overload.md's "many light clients"
// figure: 100 clients with 10 calls/s each against a dead server make 2
// attempts per call with a budget.Share each (each floor covers its own
// client's retries), and about 1 with one fleet-wide Budget.
func TestBudgetManyLightClients(t *testing.T) {
	if testing.Short() {
		t.Skip("100 Redis clients; skipped with -short")
	}
	srv := redistest.Start(t)
	const n = 100
	local := make([]retry.Budget, n)
	for i := range local {
		local[i], _ = budget.NewShare(budget.ShareConfig{})
	}
	lt := (&fleet{budgets: local, perSecond: 10, fail: dead}).run(t0, 10*time.Second, true)
	perCall := func(tl tally) float64 { return float64(tl.attempts) / float64(tl.calls) }

	_, rbs, syncAt := redisFleet(t, srv, "many", n)
	f := &fleet{budgets: rbs, sync: syncAt, perSecond: 10, fail: dead}
	f.run(t0.Add(-11*time.Second), 10*time.Second, false)
	ft := f.run(t0, 10*time.Second, true)

	// A fleet that starts together, in the middle of the outage.
	_, rbs2, syncAt2 := redisFleet(t, srv, "many-cold", n)
	ct := (&fleet{budgets: rbs2, sync: syncAt2, perSecond: 10, fail: dead}).run(t0, 10*time.Second, true)

	t.Logf("100 clients × 10 calls/s × 10 s against a dead server, attempts per call:")
	t.Logf("  budget.Share per client:          %d calls, %5d retries: %.3f", lt.calls, sum(lt.granted), perCall(lt))
	t.Logf("  redis.Budget, a running fleet:    %d calls, %5d retries: %.3f", ft.calls, sum(ft.granted), perCall(ft))
	t.Logf("  redis.Budget, started together:   %d calls, %5d retries: %.3f", ct.calls, sum(ct.granted), perCall(ct))
	if r := perCall(lt); math.Abs(r-2) > 0.1 {
		t.Errorf("a budget.Share per client: %.3f attempts per call, want about 2 (2.01 in the simulator, docs/simulator.md)", r)
	}
	if r := perCall(ft); r > 1.02 {
		t.Errorf("one fleet-wide budget: %.3f attempts per call, want ≤ 1.02 (the floor: 1 + 100/10 000 = 1.01)", r)
	}
	if r := perCall(ct); r > 1.02 {
		t.Errorf("a fleet-wide budget started together: %.3f attempts per call, want ≤ 1.02", r)
	}
}

// TestBudgetDefaultFleetFloor: with the defaults, a fleet's floor is
// budget.DefaultFleetMinPerSecond (1 retry/s, 10 per window) for all its
// processes. Ten processes × 10 calls/s starting together against a dead
// dependency grant what one budget.Share with that floor, shared in memory
// (the simulator's sim.YaokiFleet), grants: its 10 retries per window, for
// 1.01 attempts per call, where one process's floor of 10/s would make 1.10.
func TestBudgetDefaultFleetFloor(t *testing.T) {
	srv := redistest.Start(t)
	const n = 10
	rbs := make([]retry.Budget, n)
	bs := make([]*redis.Budget, n)
	for i := range rbs {
		b, err := redis.NewBudget(redis.BudgetConfig{Client: client(t, srv.Addr), Name: "defaults"})
		if err != nil {
			t.Fatal(err)
		}
		bs[i], rbs[i] = b, b
	}
	syncAt := func(i int, now time.Time) {
		if err := bs[i].SyncAt(t.Context(), now); err != nil {
			t.Fatal(err)
		}
	}
	ft := (&fleet{budgets: rbs, sync: syncAt, perSecond: 10, fail: dead}).run(t0, 10*time.Second, true)
	model, err := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.DefaultFleetMinPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	shared := make([]retry.Budget, n)
	for i := range shared {
		shared[i] = model
	}
	mt := (&fleet{budgets: shared, perSecond: 10, fail: dead}).run(t0, 10*time.Second, true)
	t.Logf("10 processes × 10 calls/s × 10 s against a dead dependency: redis.Budget with the defaults %d calls, %d retries (per second %v): %.3f attempts per call; one budget.Share with the fleet's floor: %d retries",
		ft.calls, sum(ft.granted), ft.granted, float64(ft.attempts)/float64(ft.calls), sum(mt.granted))
	if st := bs[0].StateAt(t0.Add(10 * time.Second)); st.Processes != n {
		t.Fatalf("state after the run: %+v, want %d processes", st, n)
	}
	// Every 10 s window holds at most the floor's 10 retries, in the fleet
	// as in the model; the first second's calls asked for far more.
	for end := 10; end <= len(ft.granted); end++ {
		if g, m := sum(ft.granted[end-10:end]), sum(mt.granted[end-10:end]); g > 10 || m > 10 {
			t.Errorf("window ending at %d s: the fleet granted %d retries, the model %d; want ≤ the fleet's floor of 10", end, g, m)
		}
	}
	if g := ft.granted[0]; g != 10 || mt.granted[0] != 10 {
		t.Errorf("first second: the fleet granted %d retries, the model %d; want the whole floor, 10", g, mt.granted[0])
	}
	if r := float64(ft.attempts) / float64(ft.calls); r > 1.02 {
		t.Errorf("the fleet with the defaults: %.3f attempts per call, want ≤ 1.02 (1 + 10/1000)", r)
	}
}

func TestBudgetConfig(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	cases := []struct {
		name  string
		cfg   redis.BudgetConfig
		field string // "" when valid
	}{
		{"defaults", redis.BudgetConfig{Client: c, Name: "x"}, ""},
		{"no client", redis.BudgetConfig{Name: "x"}, "BudgetConfig.Client"},
		{"no name", redis.BudgetConfig{Client: c}, "BudgetConfig.Name"},
		{"negative ratio", redis.BudgetConfig{Client: c, Name: "x", Ratio: -0.1}, "BudgetConfig.Ratio"},
		{"NaN ratio", redis.BudgetConfig{Client: c, Name: "x", Ratio: math.NaN()}, "BudgetConfig.Ratio"},
		{"ratio 101", redis.BudgetConfig{Client: c, Name: "x", Ratio: 101}, "BudgetConfig.Ratio"},
		{"window 5ms", redis.BudgetConfig{Client: c, Name: "x", Window: 5 * time.Millisecond}, "BudgetConfig.Window"},
		{"window 2h", redis.BudgetConfig{Client: c, Name: "x", Window: 2 * time.Hour}, "BudgetConfig.Window"},
		{"window 1m, slots of 10s", redis.BudgetConfig{Client: c, Name: "x", Window: time.Minute, Slot: 10 * time.Second}, ""},
		{"window not a multiple of slot", redis.BudgetConfig{Client: c, Name: "x", Slot: 3 * time.Second}, "BudgetConfig.Slot"},
		{"200 slots", redis.BudgetConfig{Client: c, Name: "x", Slot: 50 * time.Millisecond}, "BudgetConfig.Slot"},
		{"100 slots", redis.BudgetConfig{Client: c, Name: "x", Slot: 100 * time.Millisecond}, ""},
		{"slot under 1ms", redis.BudgetConfig{Client: c, Name: "x", Window: 10 * time.Millisecond, Slot: 100 * time.Microsecond}, "BudgetConfig.Slot"},
		{"no floor", redis.BudgetConfig{Client: c, Name: "x", MinPerSecond: budget.NoFloor}, ""},
		{"negative floor", redis.BudgetConfig{Client: c, Name: "x", MinPerSecond: -2}, "BudgetConfig.MinPerSecond"},
		{"sync every 6s of a 10s window", redis.BudgetConfig{Client: c, Name: "x", SyncInterval: 6 * time.Second}, "BudgetConfig.SyncInterval"},
		{"sync every 5s", redis.BudgetConfig{Client: c, Name: "x", SyncInterval: 5 * time.Second}, ""},
		{"negative sync interval", redis.BudgetConfig{Client: c, Name: "x", SyncInterval: -time.Second}, "BudgetConfig.SyncInterval"},
	}
	for _, tc := range cases {
		_, err := redis.NewBudget(tc.cfg)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want no error", tc.name, err)
			}
			continue
		}
		var ce *configerr.Error
		if !errors.As(err, &ce) || !errors.Is(err, redis.ErrInvalidConfig) || ce.Field != tc.field {
			t.Errorf("%s: error %v, want an invalid configuration error for %s matching ErrInvalidConfig", tc.name, err, tc.field)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}
}

// TestBudgetRunStops: Run syncs until its context ends, and reports failed
// syncs to OnError.
func TestBudgetRunStops(t *testing.T) {
	srv := redistest.Start(t)
	b := newBudget(t, srv.Client(t), "run")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	cancel()
	<-done

	px := srv.Proxy(t)
	px.Down()
	errs := make(chan error, 1)
	failing, err := redis.NewBudget(redis.BudgetConfig{Client: client(t, px.Addr), Name: "run", OnError: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	done = make(chan struct{})
	go func() { failing.Run(ctx); close(done) }()
	err = <-errs
	cancel()
	<-done
	if err == nil || !strings.Contains(err.Error(), "redis: budget run sync") {
		t.Fatalf("OnError got %v, want the failed sync's error", err)
	}
}

// TestBudgetNil: a nil *Budget allows everything.
func TestBudgetNil(t *testing.T) {
	var b *redis.Budget
	if !b.AllowRetryAt(t0, false) || !math.IsInf(b.LevelAt(t0), 1) || b.SyncAt(t.Context(), t0) != nil {
		t.Fatal("a nil *Budget must allow every retry, report +Inf and sync nothing")
	}
	b.RecordAt(t0, true, true)
	_ = fmt.Sprint(b.StateAt(t0))
}

// syncedBudget is a budget that synced once with a real server, so that its
// hot path decides on the fleet's totals.
func syncedBudget(tb testing.TB) *redis.Budget {
	srv := redistest.Start(tb)
	b := newBudget(tb, client(tb, srv.Addr), "bench")
	if err := b.SyncAt(context.Background(), t0); err != nil {
		tb.Fatal(err)
	}
	if !b.StateAt(t0).Shared {
		tb.Fatal("not shared after a sync")
	}
	return b
}

func TestBudgetNoAllocations(t *testing.T) {
	b := syncedBudget(t)
	if n := testing.AllocsPerRun(1000, func() {
		b.RecordAt(t0, true, true)
		b.AllowRetryAt(t0, false)
		b.CancelRetryAt(t0, false, false)
		b.LevelAt(t0)
	}); n != 0 {
		t.Fatalf("hot path on the fleet's totals: %v allocations, want 0", n)
	}
	alone := newBudget(t, client(t, "127.0.0.1:1"), "alone") // never synced: decides alone
	if n := testing.AllocsPerRun(1000, func() {
		alone.RecordAt(t0, true, true)
		alone.AllowRetryAt(t0, false)
	}); n != 0 {
		t.Fatalf("hot path deciding alone: %v allocations, want 0", n)
	}
}

// BenchmarkBudgetRedisHotPath: the hot path on the totals of the last sync,
// no I/O; "request and retry decision" is what a retry loop does for a call
// whose first attempt failed (as budget's BenchmarkBudgetAllow).
func BenchmarkBudgetRedisHotPath(b *testing.B) {
	rb := syncedBudget(b)
	b.Run("record success", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rb.RecordAt(t0, true, true)
			}
		})
	})
	b.Run("request and retry decision", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rb.RecordAt(t0, true, true)
				if rb.AllowRetryAt(t0, false) {
					rb.RecordAt(t0, false, true)
				}
			}
		})
	})
	b.Run("request and retry decision, serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rb.RecordAt(t0, true, true)
			if rb.AllowRetryAt(t0, false) {
				rb.RecordAt(t0, false, true)
			}
		}
	})
}

// BenchmarkBudgetRedisSync: one SyncAt (one round trip on loopback, the Lua
// script over the 10 slots of the default window), a second of stepped time
// apart, with a few counts to send each time.
func BenchmarkBudgetRedisSync(b *testing.B) {
	rb := syncedBudget(b)
	ctx := context.Background()
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		rb.RecordAt(now, true, true)
		rb.AllowRetryAt(now, false)
		if err := rb.SyncAt(ctx, now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBudgetRedisCluster: every key of a budget carries the hash tag
// {Name}, so the sync script runs on a Redis Cluster (which refuses a
// script whose keys lie in different slots with CROSSSLOT).
func TestBudgetRedisCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	a, err := redis.NewBudget(redis.BudgetConfig{Client: srv.ClusterClient(t), Name: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := redis.NewBudget(redis.BudgetConfig{Client: srv.ClusterClient(t), Name: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		a.RecordAt(t0, true, true)
	}
	for _, x := range []*redis.Budget{a, b} {
		if err := x.SyncAt(t.Context(), t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.StateAt(t0); !st.Shared || st.Processes != 2 || st.Successes != 10 {
		t.Fatalf("the second process on a cluster: %+v, want Shared, 2 processes, 10 successes", st)
	}
	// The same keys without the hash tag would be refused: the test
	// would not show anything if the server did not check.
	err = srv.ClusterClient(t).Eval(t.Context(), "return redis.call('MGET', KEYS[1], KEYS[2])", []string{"a", "b"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over keys in two slots: %v, want CROSSSLOT", err)
	}
}

// TestBudgetConcurrentSync: callers on the hot path while syncs run lose
// no count, and the retries granted never exceed what the syncs reserved
// plus what the process's own successes earned.
func TestBudgetConcurrentSync(t *testing.T) {
	srv := redistest.Start(t)
	b := newBudget(t, client(t, srv.Addr), "concurrent")
	obs := newBudget(t, client(t, srv.Addr), "concurrent")
	const workers, calls = 4, 2000
	var granted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				now := t0.Add(time.Duration(i) * time.Millisecond)
				b.RecordAt(now, true, (i+w)%4 != 0) // 3 of 4 succeed
				if b.AllowRetryAt(now, false) {
					granted.Add(1)
				}
			}
		}()
	}
	for i := range 20 {
		if err := b.SyncAt(t.Context(), t0.Add(time.Duration(i)*100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	end := t0.Add(2 * time.Second)
	if err := b.SyncAt(t.Context(), end); err != nil {
		t.Fatal(err)
	}
	st := fleetTotals(t, obs, end)
	if st.Successes != workers*calls*3/4 || st.Retries != granted.Load() {
		t.Fatalf("fleet totals %+v, want %d successes and the %d retries granted", st, workers*calls*3/4, granted.Load())
	}
	// Ratio × 6000 successes + the floor of 100, both within the window.
	if g := granted.Load(); g > 1300 {
		t.Fatalf("granted %d retries, want ≤ 0.2 × 6000 + 100", g)
	}
	t.Logf("%d successes, %d of %d retry requests granted", st.Successes, granted.Load(), workers*calls)
}

var _ retry.BudgetCanceller = (*redis.Budget)(nil)

// TestBudgetCancelRetry: a retry granted but not sent (the loop's
// CancelRetryAt) is given back to this process, deciding alone or on the
// fleet's totals, and the fleet counts only the retries sent: one a sync
// already sent to Redis is taken off the next one granted, never counted
// twice nor subtracted from Redis.
func TestBudgetCancelRetry(t *testing.T) {
	srv := redistest.Start(t)
	grantAll := func(b *redis.Budget, now time.Time) int {
		n := 0
		for b.AllowRetryAt(now, false) {
			n++
		}
		return n
	}

	alone := newBudget(t, client(t, srv.Addr), "alone")
	if n := grantAll(alone, t0); n != 100 {
		t.Fatalf("alone: granted %d, want the floor of 100", n)
	}
	alone.CancelRetryAt(t0, false, false)
	if n := grantAll(alone, t0); n != 1 {
		t.Errorf("alone: granted %d after a cancel, want 1", n)
	}

	b := newBudget(t, client(t, srv.Addr), "fleet")
	obs := newBudget(t, client(t, srv.Addr), "fleet")
	if err := b.SyncAt(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	if n := grantAll(b, t0); n != 100 {
		t.Fatalf("synced: granted %d, want its quota of 100", n)
	}
	if err := b.SyncAt(t.Context(), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// The 100 are in Redis now; 3 of them were not sent after all.
	now := t0.Add(1500 * time.Millisecond)
	for range 3 {
		b.CancelRetryAt(t0, false, false)
	}
	if n := grantAll(b, now); n != 3 {
		t.Errorf("synced: granted %d after 3 cancels, want 3", n)
	}
	if err := b.SyncAt(t.Context(), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := fleetTotals(t, obs, t0.Add(2*time.Second)); st.Retries != 100 {
		t.Errorf("fleet retries %d, want the 100 sent (not 103, nor 97)", st.Retries)
	}
	var nilBudget *redis.Budget
	nilBudget.CancelRetryAt(t0, false, false) // no panic
}
