package redis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

// TestBreakerRedisRestart: redis-server restarts without persistence while
// A's breaker is open: the fleet's key is lost, and A's next sync puts it
// back. B, which read the period before the restart, refuses throughout,
// its syncs between the restart and A's included.
func TestBreakerRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	b := newProc(t, client(t, srv.Addr), "payments", nil)
	fail(t, a, at(0), 20) // open until +30 s
	mustSync(t, a, at(time.Second))
	mustSync(t, b, at(time.Second))
	mustRefuseFleet(t, "B", b, at(time.Second), 29*time.Second)

	srv.Kill()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	mustRefuseFleet(t, "B (its last sync, before the restart)", b, at(2*time.Second), 28*time.Second)
	// A redis-server restarted: go-redis may need one failed command to drop
	// the dead connection.
	for i := range 3 {
		if err := b.SyncAt(t.Context(), at(3*time.Second)); err == nil {
			break
		} else if i == 2 {
			t.Fatalf("B's sync after the restart: %v", err)
		}
	}
	mustRefuseFleet(t, "B (the fleet's key lost with the restart, A not synced yet)", b, at(3*time.Second), 27*time.Second)
	for i := range 3 {
		if err := a.SyncAt(t.Context(), at(4*time.Second)); err == nil {
			break
		} else if i == 2 {
			t.Fatalf("A's sync after the restart: %v", err)
		}
	}
	mustSync(t, b, at(4*time.Second))
	mustRefuseFleet(t, "B (A's period put back)", b, at(4*time.Second), 26*time.Second)
}

// TestBreakerLostReply: A's sync ran its script but the reply was lost; the
// period is published all the same, and A's next sync changes nothing.
// (Were the script not loaded yet, the lost reply would be EVALSHA's
// NOSCRIPT and nothing would run: the period is published at the next
// sync.)
func TestBreakerLostReply(t *testing.T) {
	srv := redistest.Start(t)
	px := srv.Proxy(t)
	a := newProc(t, client(t, px.Addr), "payments", nil)
	b := newProc(t, client(t, srv.Addr), "payments", nil)
	mustSync(t, a, at(0)) // the script is loaded: the next sync sends EVALSHA alone
	fail(t, a, at(0), 20)
	px.DropReplies()
	if err := a.SyncAt(t.Context(), at(time.Second)); err == nil {
		t.Fatal("sync whose reply was dropped: no error")
	}
	mustSync(t, b, at(2*time.Second))
	mustRefuseFleet(t, "B", b, at(2*time.Second), 28*time.Second)
	px.Up()
	mustSync(t, a, at(3*time.Second))
	mustSync(t, b, at(3*time.Second))
	mustRefuseFleet(t, "B", b, at(3*time.Second), 27*time.Second)
}

// TestBreakerClockStepsBack: A's clock steps back by two hours while its
// breaker is open. What A publishes ends one open period after the step at
// most, not two hours and 30 s later: the fleet does not stay open because
// of one process's clock.
func TestBreakerClockStepsBack(t *testing.T) {
	srv := redistest.Start(t)
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	b := newProc(t, client(t, srv.Addr), "payments", nil)
	fail(t, a, at(2*time.Hour), 20) // open until 2h30s
	mustSync(t, a, at(0))           // the step: 2 h back
	mustSync(t, b, at(0))
	if u, open := b.OpenUntil(at(0)); open && u.Sub(at(0)) > 30*time.Second {
		t.Fatalf("the fleet after A's clock stepped back 2 h: open until %v from now, want at most the 30 s period", u.Sub(at(0)))
	}
	mustAllow(t, "B 31 s after the step", b, at(31*time.Second))
}

// TestBudgetRedisRestart: redis-server restarts without persistence: the
// fleet's counts are lost, and the processes' next syncs do not fail for
// long: the budget is shared again, each process putting back its own
// counts over the window once (not its counts since the restart on top
// of them), so that the fleet does not grant the window's allowance again.
func TestBudgetRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	b := newBudget(t, client(t, srv.Addr), "payments")
	obs := newBudget(t, client(t, srv.Addr), "payments")
	now := t0
	if err := b.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		b.RecordAt(now, true, true)
	}
	for range 10 {
		b.AllowRetryAt(now, false)
	}
	now = now.Add(time.Second)
	if err := b.SyncAt(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b.RecordAt(now, true, true)
	}
	now = now.Add(time.Second)
	var err error
	for range 3 {
		if err = b.SyncAt(t.Context(), now); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("sync after the restart: %v", err)
	}
	if st := b.StateAt(now); !st.Shared {
		t.Fatalf("after the restart: %+v, want Shared", st)
	}
	var st = func() (s struct{ succ, retr int64 }) {
		for range 3 {
			if err := obs.SyncAt(t.Context(), now); err == nil {
				x := obs.StateAt(now)
				return struct{ succ, retr int64 }{x.Successes, x.Retries}
			}
		}
		t.Fatal("observer's sync after the restart failed")
		return
	}()
	if st.succ != 105 || st.retr != 10 {
		t.Fatalf("the fleet after the restart: %d successes and %d retries, want the window's 105 and 10 put back once", st.succ, st.retr)
	}
	if l := b.LevelAt(now); l > 100+0.2*105 {
		t.Fatalf("level %v after the restart, want at most one window's allowance", l)
	}
}

// TestBreakerForeignKey: the fleet's key holds what this version never
// writes: a value of another type, an end in nanoseconds or microseconds
// (another version's unit), an end a year away, NaN, infinity, a trip
// count that is no number, none of them with an expiry (every key the
// breaker writes expires when its period ends). None of them makes a
// process refuse, none stops a trip from reaching the fleet, and the key
// the trip leaves expires.
func TestBreakerForeignKey(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const key = "yaoki:breaker:payments"
	for _, tc := range []struct {
		name string
		set  func() error
	}{
		{"a string", func() error { return rdb.Set(t.Context(), key, "open", 0).Err() }},
		{"a list", func() error { return rdb.RPush(t.Context(), key, "u").Err() }},
		{"an end in nanoseconds", func() error { return rdb.HSet(t.Context(), key, "u", at(0).UnixNano(), "n", 1).Err() }},
		{"an end in microseconds", func() error { return rdb.HSet(t.Context(), key, "u", at(0).UnixMicro(), "n", 1).Err() }},
		{"an end a year away", func() error {
			return rdb.HSet(t.Context(), key, "u", at(365*24*time.Hour).UnixMilli(), "n", 1).Err()
		}},
		{"NaN", func() error { return rdb.HSet(t.Context(), key, "u", "nan", "n", 1).Err() }},
		{"infinity", func() error { return rdb.HSet(t.Context(), key, "u", "inf", "n", 1).Err() }},
		{"a trip count that is no number", func() error {
			return rdb.HSet(t.Context(), key, "u", at(10*time.Second).UnixMilli(), "n", "many").Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.Del(t.Context(), key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := tc.set(); err != nil {
				t.Fatal(err)
			}
			a := newProc(t, client(t, srv.Addr), "payments", nil)
			b := newProc(t, client(t, srv.Addr), "payments", nil)
			mustSync(t, b, at(0))
			mustAllow(t, "B beside the foreign key", b, at(time.Second))
			fail(t, a, at(time.Second), 20) // open until +31 s
			mustSync(t, a, at(time.Second))
			mustSync(t, b, at(2*time.Second))
			mustRefuseFleet(t, "B after A's trip", b, at(2*time.Second), 29*time.Second)
			if ttl := rdb.PTTL(t.Context(), key).Val(); ttl <= 0 || ttl > 30*time.Second {
				t.Fatalf("the key after A's trip expires in %v, want within A's 30 s period", ttl)
			}
		})
	}
}

// TestBreakerReplicaClockAhead: A's clock is 5 minutes ahead when its
// breaker trips. B, whose clock is right, refuses while A's period lasts
// in real time (the key expires with it), not until its own clock reaches
// A's end: its hint says about 30 s, not 5 min 30 s, and once Redis is out
// of reach B does not go on refusing on what it read.
func TestBreakerReplicaClockAhead(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t)
	cb := goredis.NewClient(&goredis.Options{Addr: link.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = cb.Close() })
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	b := newProc(t, cb, "payments", nil)
	skew := 5 * time.Minute
	fail(t, a, at(skew), 20) // open until +5m30s on A's clock
	mustSync(t, a, at(skew))
	mustSync(t, b, at(0))
	_, err := b.AllowAt(at(0), false)
	h, ok := retry.HintOf(err)
	if !errors.Is(err, redis.ErrFleetOpen) || !ok || h <= 25*time.Second || h > 32*time.Second {
		t.Fatalf("B (right clock) after A's trip: %v, hint %v, want refused by the fleet for about 30 s", err, h)
	}
	link.Down()
	if err := b.SyncAt(t.Context(), at(time.Second)); err == nil {
		t.Fatal("sync through a cut link succeeded")
	}
	mustAllow(t, "B, Redis out of reach, 33 s after A's trip", b, at(33*time.Second))
}

// TestBudgetProcessesKeyEvicted: the set of processes is evicted (every
// key of a budget expires, so maxmemory-policy volatile-lru may pick any;
// DEL here) after A, which reserved the whole floor at its sync, died.
// A's reservation cannot be told from a live process's any more: B does
// not keep it aside for ever (its quota stayed 0 for good, as A was never
// found silent), but gets the floor from its next sync.
func TestBudgetProcessesKeyEvicted(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	a := newBudget(t, client(t, srv.Addr), "payments")
	b := newBudget(t, client(t, srv.Addr), "payments")
	if err := a.SyncAt(t.Context(), at(0)); err != nil {
		t.Fatal(err)
	}
	if q := a.StateAt(at(0)).Quota; q != 100 {
		t.Fatalf("A's reservation %v, want the whole floor of 100 (the only process)", q)
	}
	if err := rdb.Del(t.Context(), "yaoki:budget:{payments}:procs").Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []time.Duration{time.Second, 20 * time.Second} {
		if err := b.SyncAt(t.Context(), at(s)); err != nil {
			t.Fatal(err)
		}
		if st := b.StateAt(at(s)); st.Quota != 100 || st.Processes != 1 {
			t.Fatalf("B at +%v, A dead, the processes' key evicted: %+v, want the floor of 100 for the one process", s, st)
		}
	}
}

// TestBudgetForeignKeys: a budget's keys hold what no sync writes (another
// version's, or corrupt): another type, counts that are no number, NaN,
// infinite or beyond 2^53, a reservation total of 10^15. Each sync
// succeeds and reads them as nothing, instead of failing for as long as
// the key stays (the process deciding alone) or reading a count of -2^63
// or a reservation total that starves the fleet for good.
func TestBudgetForeignKeys(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const p = "yaoki:budget:{payments}:"
	slot := p + strconv.FormatInt(at(0).Unix(), 10) // the slot of +0 (1 s slots)
	for _, tc := range []struct {
		name string
		set  func() error
	}{
		{"the reservations a string", func() error { return rdb.Set(t.Context(), p+"held", "x", 0).Err() }},
		{"the processes a string", func() error { return rdb.Set(t.Context(), p+"procs", "x", 0).Err() }},
		{"the slot a string", func() error { return rdb.Set(t.Context(), slot, "x", 0).Err() }},
		{"an earlier slot a list", func() error {
			return rdb.RPush(t.Context(), p+strconv.FormatInt(at(-3*time.Second).Unix(), 10), "x").Err()
		}},
		{"the reservation total 10^15", func() error { return rdb.HSet(t.Context(), p+"held", "*", "1e15").Err() }},
		{"the reservation total NaN", func() error { return rdb.HSet(t.Context(), p+"held", "*", "nan").Err() }},
		{"counts NaN", func() error { return rdb.HSet(t.Context(), slot, "s", "nan", "r", "nan", "a", "nan").Err() }},
		{"counts infinite", func() error { return rdb.HSet(t.Context(), slot, "s", "inf", "r", "-inf").Err() }},
		{"retries beyond 2^53", func() error { return rdb.HSet(t.Context(), slot, "r", "1e30").Err() }},
		{"negative retries", func() error { return rdb.HSet(t.Context(), slot, "r", "-50").Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			if err := tc.set(); err != nil {
				t.Fatal(err)
			}
			b := newBudget(t, client(t, srv.Addr), "payments")
			for range 10 {
				b.RecordAt(at(0), true, true)
			}
			if err := b.SyncAt(t.Context(), at(0)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if st := b.StateAt(at(0)); !st.Shared || st.Successes != 10 || st.Retries != 0 || st.Processes != 1 || st.Quota != 102 {
				t.Fatalf("state %+v, want shared: the 10 successes, no retry, 1 process, a reservation of 100 + 0.2 × 10", st)
			}
		})
	}
}

// skewed is a process's budget whose clock is off by skew.
type skewed struct {
	b    *redis.Budget
	skew time.Duration
}

func (s skewed) AllowRetryAt(now time.Time, timeout bool) bool {
	return s.b.AllowRetryAt(now.Add(s.skew), timeout)
}
func (s skewed) RecordAt(now time.Time, first, ok bool) { s.b.RecordAt(now.Add(s.skew), first, ok) }

// TestBudgetReplicaClockSkew measures what one process whose clock is off
// does to the fleet's floor (3 processes × 10 calls/s against a dead
// dependency, 30 s, floor 100 per 10 s window). Off by less than a Slot
// (1 s) changes nothing; off by more, its counts go to slots the others
// do not read (and theirs to slots it does not read), and its syncs drop
// the others from the set of processes (or the others drop it), so that it
// is a fleet of its own with a floor of its own: at most twice the floor
// per window, whatever the skew.
func TestBudgetReplicaClockSkew(t *testing.T) {
	srv := redistest.Start(t)
	for _, skew := range []time.Duration{0, 500 * time.Millisecond, 5 * time.Second, 30 * time.Second, -30 * time.Second, 5 * time.Minute, -5 * time.Minute} {
		name := "skew" + skew.String()
		bs, rbs, _ := redisFleet(t, srv, name, 3)
		rbs[0] = skewed{bs[0], skew}
		sync := func(i int, now time.Time) {
			if i == 0 {
				now = now.Add(skew)
			}
			if err := bs[i].SyncAt(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		f := &fleet{budgets: rbs, sync: sync, perSecond: 10, fail: dead}
		f.run(t0.Add(-11*time.Second), 10*time.Second, false)
		tl := f.run(t0, 30*time.Second, true)
		worst := 0
		for end := 10; end <= 30; end++ {
			worst = max(worst, sum(tl.granted[end-10:end]))
		}
		t.Logf("one process's clock off by %v: %d retries over 30 s, at most %d in a 10 s window (the floor: 100)", skew, sum(tl.granted), worst)
		switch {
		case (skew < time.Second && skew > -time.Second) && worst > 100:
			t.Errorf("off by %v: %d retries in a window, want the floor of 100", skew, worst)
		case worst > 2*100+10:
			t.Errorf("off by %v: %d retries in a window, want at most two floors (+ one second's grants)", skew, worst)
		}
	}
}

// TestSyncHeldByStalledServer: redis-server stops answering without
// closing anything (CLIENT PAUSE WRITE, as a failover does; a fork or a long
// script stalls it alike). go-redis honours a context's deadline only with
// Options.ContextTimeoutEnabled: with it, a sync given 200 ms returns
// within a second; without it, a sync waits for the client's ReadTimeout
// (3 s by default, 1.5 s here) whatever its context says, and that is what
// bounds Run's syncs. Calls never wait for either.
func TestSyncHeldByStalledServer(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	for _, tc := range []struct {
		name     string
		opt      goredis.Options
		min, max time.Duration
	}{
		{"ContextTimeoutEnabled", goredis.Options{ContextTimeoutEnabled: true}, 0, time.Second},
		{"ReadTimeout 1.5s", goredis.Options{ReadTimeout: 1500 * time.Millisecond}, 1400 * time.Millisecond, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.Addr, opt.MaxRetries = srv.Addr, -1
			c := goredis.NewClient(&opt)
			t.Cleanup(func() { _ = c.Close() })
			br := newProc(t, c, "payments", nil)
			bu := newBudget(t, c, "payments")
			mustSync(t, br, at(0)) // connected, the scripts loaded
			if err := bu.SyncAt(t.Context(), at(0)); err != nil {
				t.Fatal(err)
			}
			if err := admin.Do(t.Context(), "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
			defer admin.Do(context.Background(), "CLIENT", "UNPAUSE")
			for _, s := range []struct {
				who  string
				sync func(context.Context, time.Time) error
			}{{"breaker", br.SyncAt}, {"budget", bu.SyncAt}} {
				ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
				start := time.Now()
				err := s.sync(ctx, at(time.Second))
				took := time.Since(start)
				cancel()
				if err == nil || took < tc.min || took > tc.max {
					t.Errorf("%s sync, server stalled, 200ms context: %v after %v, want an error after %v to %v", s.who, err, took, tc.min, tc.max)
				}
			}
			if _, err := br.AllowAt(at(time.Second), false); err != nil {
				t.Errorf("a call while the server stalls: %v, want allowed at once", err)
			}
		})
	}
}

// TestFleetStateSurvivesDurableRestart: redis-server, with its append-only
// file written at every command, is killed (kill -9) and restarted while
// A's breaker is open and the budget holds counts. The fleet's open period
// comes back with the key's expiry, so B refuses as before; the budget's
// counts come back with what each process had sent, so the next syncs
// neither lose them nor count them twice.
func TestFleetStateSurvivesDurableRestart(t *testing.T) {
	srv := redistest.StartDurable(t)
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	b := newProc(t, client(t, srv.Addr), "payments", nil)
	fail(t, a, at(0), 20) // open until +30 s
	mustSync(t, a, at(time.Second))
	bu := newBudget(t, client(t, srv.Addr), "payments")
	obs := newBudget(t, client(t, srv.Addr), "payments")
	for range 50 {
		bu.RecordAt(at(0), true, true)
	}
	for range 5 {
		bu.AllowRetryAt(at(0), false)
	}
	if err := bu.SyncAt(t.Context(), at(time.Second)); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	retrying := func(f func() error) {
		t.Helper()
		var err error
		for range 3 { // go-redis may need one failed command to drop the dead connection
			if err = f(); err == nil {
				return
			}
		}
		t.Fatalf("after the restart: %v", err)
	}
	retrying(func() error { return b.SyncAt(t.Context(), at(2*time.Second)) })
	mustRefuseFleet(t, "B after the restart", b, at(2*time.Second), 28*time.Second)

	for range 10 {
		bu.RecordAt(at(2*time.Second), true, true)
	}
	retrying(func() error { return bu.SyncAt(t.Context(), at(2*time.Second)) })
	retrying(func() error { return obs.SyncAt(t.Context(), at(2*time.Second)) })
	if st := obs.StateAt(at(2 * time.Second)); st.Successes != 60 || st.Retries != 5 {
		t.Fatalf("the fleet after the restart: %d successes, %d retries, want 60 and 5 (none lost, none twice)", st.Successes, st.Retries)
	}
}

// TestBreakerClockStepsBackWhileFleetOpen: B learnt at its last sync that
// the fleet is open for 30 s more; then its clock steps back by two hours
// and Redis is out of reach. B refuses for those 30 s (and the hold) on
// the stepped clock, as its local breaker would, not for two hours until
// its clock reaches the end it read.
func TestBreakerClockStepsBackWhileFleetOpen(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t)
	cb := goredis.NewClient(&goredis.Options{Addr: link.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = cb.Close() })
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	b, err := redis.NewBreaker(redis.BreakerConfig{Client: cb, Local: newLocal(t, "payments")}) // Hold: 2 s
	if err != nil {
		t.Fatal(err)
	}
	fail(t, a, at(0), 20) // open until +30 s
	mustSync(t, a, at(0))
	mustSync(t, b, at(0))
	link.Down()
	back := at(-2 * time.Hour)
	mustRefuseFleet(t, "B just after its clock stepped back", b, back, 30*time.Second)
	mustRefuseFleet(t, "B 29 s later", b, back.Add(29*time.Second), time.Second)
	if s := b.StateAt(back.Add(31 * time.Second)); s != breaker.Open {
		t.Fatalf("B 31 s later, held: %v, want open", s)
	}
	mustAllow(t, "B after the period and the hold on the stepped clock", b, back.Add(32*time.Second))
	if s := b.StateAt(back.Add(32 * time.Second)); s != breaker.Closed {
		t.Fatalf("B after the period and the hold: %v, want closed", s)
	}
}

// TestBudgetUnderEviction: redis-server runs out of memory with
// maxmemory-policy allkeys-random while the fleet (3 processes × 10
// calls/s against a dead dependency, 30 s) syncs and other clients keep
// writing: thousands of keys are evicted, the budget's among them. Every
// sync succeeds; the counts lost with evicted slots let the fleet grant
// more than its floor of 100 per 10 s window (about twice; the bound
// asserted is four times), and the reservations lost with the processes'
// key do not starve it: it grants about its floor's 300 over the run, or
// more.
func TestBudgetUnderEviction(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	bs, rbs, _ := redisFleet(t, srv, "payments", 3)
	failed := 0
	sync := func(i int, now time.Time) {
		if err := bs[i].SyncAt(t.Context(), now); err != nil {
			failed++
			t.Errorf("sync of process %d at +%v: %v", i, now.Sub(t0), err)
		}
		pipe := rdb.Pipeline() // another client's writes: 50 KiB a sync
		for k := range 50 {
			pipe.Set(t.Context(), "other:"+strconv.FormatInt(now.UnixMilli(), 10)+":"+strconv.Itoa(i*100+k), strings.Repeat("x", 1024), 0)
		}
		if _, err := pipe.Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	f := &fleet{budgets: rbs, sync: sync, perSecond: 10, fail: dead}
	f.run(t0.Add(-11*time.Second), 10*time.Second, false)
	mem := infoField(t, rdb, "memory", "used_memory")
	if err := rdb.ConfigSet(t.Context(), "maxmemory", strconv.Itoa(mem+300<<10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-random").Err(); err != nil {
		t.Fatal(err)
	}
	tl := f.run(t0, 30*time.Second, true)
	evicted := infoField(t, rdb, "stats", "evicted_keys")
	worst := 0
	for end := 10; end <= 30; end++ {
		worst = max(worst, sum(tl.granted[end-10:end]))
	}
	t.Logf("%d keys evicted, %d syncs failed; %d retries granted over 30 s, at most %d in a 10 s window (the floor: 100)",
		evicted, failed, sum(tl.granted), worst)
	if evicted < 1000 {
		t.Fatalf("%d keys evicted, want the fault: thousands", evicted)
	}
	if worst > 400 || sum(tl.granted) < 250 {
		t.Errorf("%d retries over 30 s, at most %d in a window: want most of the floor's 300 at least, at most 400 in a window", sum(tl.granted), worst)
	}
}

// infoField returns the integer field of an INFO section.
func infoField(t *testing.T, rdb *goredis.Client, section, field string) int {
	t.Helper()
	for _, l := range strings.Split(rdb.Info(t.Context(), section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO %s %s: %v", section, field, err)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// TestNoConnectionPileUp: while Redis cannot be reached (the link cut),
// syncs fail one after the other and hold no connection: after 20 failed
// syncs of a breaker and a budget sharing a client with a pool of 10, the
// pool holds at most one, and once the link is back one sync succeeds on
// one connection.
func TestNoConnectionPileUp(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t)
	c := goredis.NewClient(&goredis.Options{Addr: link.Addr, PoolSize: 10, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	br := newProc(t, c, "payments", nil)
	bu := newBudget(t, c, "payments")
	mustSync(t, br, at(0))
	link.Down()
	for i := range 20 {
		now := at(time.Duration(i+1) * time.Second)
		if err := br.SyncAt(t.Context(), now); err == nil {
			t.Fatal("breaker sync through a cut link succeeded")
		}
		if err := bu.SyncAt(t.Context(), now); err == nil {
			t.Fatal("budget sync through a cut link succeeded")
		}
	}
	if st := c.PoolStats(); st.TotalConns > 1 {
		t.Fatalf("after 40 failed syncs the pool holds %d connections, want at most 1", st.TotalConns)
	}
	link.Up()
	var err error
	for range 3 { // the pool may hand out a connection the cut closed
		if err = bu.SyncAt(t.Context(), at(30*time.Second)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("sync once the link is back: %v", err)
	}
	if st := c.PoolStats(); st.TotalConns != 1 {
		t.Fatalf("the pool holds %d connections after one sync, want 1", st.TotalConns)
	}
}

// TestBreakerHoldSurvivesKeyExpiry: the fleet's key expires when its
// period ends, on Redis's clock (here DEL stands in for that expiry, which
// stepped time cannot reach). B, held after the period, syncs just after
// the expiry and reads no period: it goes on holding until the period's
// end + Hold rather than calling at once, so that A's failed probe, which
// A publishes at its next sync, reaches B before B calls. (It called at
// once, so in real time the hold protected only processes whose sync fell
// between the period's end and the key's expiry: none.)
func TestBreakerHoldSurvivesKeyExpiry(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	proc := func() *redis.Breaker {
		p, err := redis.NewBreaker(redis.BreakerConfig{Client: client(t, srv.Addr), Local: newLocal(t, "payments")}) // Hold: 2 s
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := proc(), proc()
	fail(t, a, at(0), 20) // open until +30 s
	mustSync(t, a, at(time.Second))
	mustSync(t, b, at(time.Second))
	if err := rdb.Del(t.Context(), "yaoki:breaker:payments").Err(); err != nil { // expired at +30 s
		t.Fatal(err)
	}
	tk := mustAllow(t, "A's probe", a, at(30*time.Second))
	a.DoneAt(at(30*time.Second), tk, time.Millisecond, down) // open until +90 s
	mustSync(t, b, at(30500*time.Millisecond))
	mustRefuseFleet(t, "B after the key expired, within its hold", b, at(31*time.Second), time.Second)
	mustSync(t, a, at(31*time.Second))
	mustSync(t, b, at(31500*time.Millisecond))
	mustRefuseFleet(t, "B after A's failed probe", b, at(31500*time.Millisecond), 58500*time.Millisecond)

	// With no new period, B resumes when the hold ends.
	c := proc()
	mustSync(t, c, at(31500*time.Millisecond))
	if err := rdb.Del(t.Context(), "yaoki:breaker:payments").Err(); err != nil { // expired at +90 s
		t.Fatal(err)
	}
	tk = mustAllow(t, "A's second probe", a, at(90*time.Second))
	a.DoneAt(at(90*time.Second), tk, time.Millisecond, nil)
	mustSync(t, c, at(90500*time.Millisecond))
	mustRefuseFleet(t, "C within its hold", c, at(91*time.Second), time.Second)
	mustAllow(t, "C after its hold", c, at(92*time.Second))
}
