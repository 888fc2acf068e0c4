package redis_test

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

// TestBreakerRedisRestart: redis-server restarts without persistence while
// A's breaker is open: the fleet's key is lost, and A's next sync puts it
// back, so B refuses again after its own next sync. Between the restart and
// A's sync, B's last sync still refuses for it.
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
	mustAllow(t, "B (the fleet's key lost with the restart, A not synced yet)", b, at(3*time.Second))
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
// fleet's counts are lost, and the processes' next syncs neither send their
// counts again (each knows what Redis had acknowledged) nor fail for long:
// the budget is shared again, with the retries of the window forgotten, so
// the fleet may grant at most one more window's allowance.
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
	if st.succ != 5 || st.retr != 0 {
		t.Fatalf("the fleet after the restart: %d successes and %d retries, want the 5 successes recorded since (not the 105 sent again)", st.succ, st.retr)
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
