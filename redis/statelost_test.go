package redis_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

// retrySync runs sync up to three times: after a restart or a failover,
// go-redis may need one failed command to drop a dead connection.
func retrySync(t *testing.T, who string, sync func() error) {
	t.Helper()
	var err error
	for range 3 {
		if err = sync(); err == nil {
			return
		}
	}
	t.Fatalf("%s: sync: %v", who, err)
}

// movable is a client whose connections go to the address in addr, as a
// client that follows a failover (Sentinel, a DNS name) does.
func movable(t *testing.T, addr *atomic.Pointer[string]) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{
		Addr: "fleet", PoolSize: 2, MaxRetries: -1, DialTimeout: time.Second,
		Dialer: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", *addr.Load())
		},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestBreakerKeyLostMidPeriod: the fleet's key goes while A's period runs
// (A tripped at +0, open until +30 s; A and B synced at +1 s): a restart
// without persistence, FLUSHALL, FLUSHDB, DEL, a TTL cut to nothing or
// taken away (which the sync reads as a foreign key), a string written at
// its name by another program. B, which read the period, keeps refusing
// until the end it read: the fleet does not forget it was open. A process
// that had not read it (C, started after) learns it once A's next sync has
// put it back: within two SyncIntervals. (B called again at once after
// its next sync, until A's put the key back.)
func TestBreakerKeyLostMidPeriod(t *testing.T) {
	const key = "yaoki:breaker:payments"
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, srv *redistest.Server, rdb *goredis.Client) error
	}{
		{"restart without persistence", func(t *testing.T, srv *redistest.Server, _ *goredis.Client) error {
			srv.Kill()
			return srv.Resume()
		}},
		{"FLUSHALL", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.FlushAll(t.Context()).Err()
		}},
		{"FLUSHDB", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.FlushDB(t.Context()).Err()
		}},
		{"DEL", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.Del(t.Context(), key).Err()
		}},
		{"TTL cut to nothing", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.Do(t.Context(), "PEXPIRE", key, 0).Err()
		}},
		{"TTL taken away", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.Persist(t.Context(), key).Err()
		}},
		{"a string written at its name", func(t *testing.T, _ *redistest.Server, rdb *goredis.Client) error {
			return rdb.Set(t.Context(), key, "closed", 0).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := client(t, srv.Addr)
			a := newProc(t, client(t, srv.Addr), "payments", nil)
			b := newProc(t, client(t, srv.Addr), "payments", nil)
			fail(t, a, at(0), 20) // open until +30 s
			mustSync(t, a, at(time.Second))
			mustSync(t, b, at(time.Second))
			if err := tc.lose(t, srv, rdb); err != nil {
				t.Fatal(err)
			}
			retrySync(t, "B", func() error { return b.SyncAt(t.Context(), at(2*time.Second)) })
			mustRefuseFleet(t, "B, the key lost", b, at(2*time.Second), 28*time.Second)
			c := newProc(t, client(t, srv.Addr), "payments", nil)
			retrySync(t, "C", func() error { return c.SyncAt(t.Context(), at(2*time.Second)) })
			mustAllow(t, "C, started after the key was lost, before A's next sync", c, at(2*time.Second))
			retrySync(t, "A", func() error { return a.SyncAt(t.Context(), at(3*time.Second)) })
			mustSync(t, b, at(3*time.Second))
			mustSync(t, c, at(3*time.Second))
			mustRefuseFleet(t, "B after A's next sync", b, at(3*time.Second), 27*time.Second)
			mustRefuseFleet(t, "C after A's next sync", c, at(3*time.Second), 27*time.Second)
			mustAllow(t, "B after the period", b, at(30*time.Second))
		})
	}
}

// TestBreakerFailoverToLaggingReplica: the replica stopped receiving
// before A tripped (its link cut), the primary dies and the replica is
// promoted without the fleet's key; the processes' clients follow the
// failover. B, which read A's period, keeps refusing; A's next sync puts
// the period on the new primary, where C reads it.
func TestBreakerFailoverToLaggingReplica(t *testing.T) {
	r := startReplicated(t)
	var addr atomic.Pointer[string]
	addr.Store(&r.primary.Addr)
	a := newProc(t, movable(t, &addr), "payments", nil)
	b := newProc(t, movable(t, &addr), "payments", nil)
	mustSync(t, a, at(0))
	r.link.Down() // the replica lags from here on
	fail(t, a, at(0), 20)
	mustSync(t, a, at(time.Second))
	mustSync(t, b, at(time.Second))
	r.primary.Kill()
	r.replica.Promote(t)
	addr.Store(&r.replica.Addr)
	retrySync(t, "B", func() error { return b.SyncAt(t.Context(), at(2*time.Second)) })
	mustRefuseFleet(t, "B on the promoted replica", b, at(2*time.Second), 28*time.Second)
	retrySync(t, "A", func() error { return a.SyncAt(t.Context(), at(3*time.Second)) })
	c := newProc(t, movable(t, &addr), "payments", nil)
	mustSync(t, c, at(3*time.Second))
	mustRefuseFleet(t, "C on the promoted replica after A's sync", c, at(3*time.Second), 27*time.Second)
}

// TestBudgetStateLostMidOutage: 3 processes × 10 calls/s against a dead
// dependency for 30 s, floor 100 per 10 s window; at +15 s Redis loses the
// budget's keys: a restart without persistence, FLUSHALL, or a failover to
// a replica whose link was cut at +10 s (it has the counts up to then).
// The fleet does not grant a second floor against the still-dead
// dependency: each process's next sync puts back its own counts over the
// window (or sends again those the replica lacks) and reserves nothing
// until the others' are back, so that every 10 s window stays within the
// floor. (The window's retries were forgotten: the fleet granted 200 in
// the window after a restart; with the counts put back, the first process
// to sync reserved from totals without the others', 120.)
func TestBudgetStateLostMidOutage(t *testing.T) {
	for _, tc := range []string{"restart without persistence", "FLUSHALL", "failover to a lagging replica"} {
		t.Run(tc, func(t *testing.T) {
			r := startReplicated(t)
			var addr atomic.Pointer[string]
			addr.Store(&r.primary.Addr)
			bs := make([]*redis.Budget, 3)
			rbs := make([]retry.Budget, 3)
			for i := range bs {
				bs[i] = newBudget(t, movable(t, &addr), "payments")
				rbs[i] = bs[i]
			}
			lost := false
			sync := func(i int, now time.Time) {
				if now.Sub(t0) >= 10*time.Second && tc == "failover to a lagging replica" {
					r.link.Down()
				}
				if !lost && now.Sub(t0) >= 15*time.Second {
					lost = true
					switch tc {
					case "restart without persistence":
						r.primary.Kill()
						if err := r.primary.Resume(); err != nil {
							t.Fatal(err)
						}
					case "FLUSHALL":
						if err := r.primary.Client(t).FlushAll(t.Context()).Err(); err != nil {
							t.Fatal(err)
						}
					default:
						r.primary.Kill()
						r.replica.Promote(t)
						addr.Store(&r.replica.Addr)
					}
				}
				retrySync(t, "process", func() error { return bs[i].SyncAt(t.Context(), now) })
			}
			f := &fleet{budgets: rbs, sync: sync, perSecond: 10, fail: dead}
			f.run(t0.Add(-11*time.Second), 10*time.Second, false)
			tl := f.run(t0, 30*time.Second, true)
			worst, maxSecond := 0, 0
			for end := 10; end <= 30; end++ {
				worst = max(worst, sum(tl.granted[end-10:end]))
			}
			for _, g := range tl.granted {
				maxSecond = max(maxSecond, g)
			}
			t.Logf("%s at +15 s: %d retries over 30 s, at most %d in a 10 s window (the floor: 100), per second %v",
				tc, sum(tl.granted), worst, tl.granted)
			if worst > 100 {
				t.Errorf("%s mid-outage: %d retries in a 10 s window, want at most the floor of 100", tc, worst)
			}
		})
	}
}

// TestBreakerClockSkew30s: S's clock runs 30 s ahead of, or behind, the
// fleet's (A, B, right). S cannot make the others refuse for longer than
// its period (30 s) and the clock slack (2 s), nor make them forget A's
// period: it writes only its own open period, and the latest end wins in
// Redis. A process behind follows A's period for at most its real length
// and the slack; a process ahead follows it less (30 s ahead: not at all),
// as its own breaker will decide. A trip of a process 30 s behind
// reaches no one: its end is the others' now.
func TestBreakerClockSkew30s(t *testing.T) {
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			srv := redistest.Start(t)
			a := newProc(t, client(t, srv.Addr), "payments", nil)
			b := newProc(t, client(t, srv.Addr), "payments", nil)
			s := newProc(t, client(t, srv.Addr), "payments", nil)
			sAt := func(d time.Duration) time.Time { return at(d + skew) }

			// S trips first.
			fail(t, s, sAt(0), 20) // open for 30 s on S's clock
			mustSync(t, s, sAt(time.Second))
			mustSync(t, b, at(time.Second))
			_, err := b.AllowAt(at(time.Second), false)
			h, _ := retry.HintOf(err)
			switch {
			case skew > 0 && (err == nil || h > 32*time.Second):
				t.Fatalf("B after the trip of S (%v ahead): %v, hint %v; want refused for at most S's 30 s + the 2 s slack", skew, err, h)
			case skew < 0 && err != nil:
				t.Fatalf("B after the trip of S (%v behind): %v; want allowed (S's end is B's now)", -skew, err)
			}

			// A trips (on the right clock): S, syncing with its breaker
			// closed or open, does not take A's period away from the others.
			srv2 := redistest.Start(t)
			a = newProc(t, client(t, srv2.Addr), "payments", nil)
			b = newProc(t, client(t, srv2.Addr), "payments", nil)
			s = newProc(t, client(t, srv2.Addr), "payments", nil)
			fail(t, a, at(0), 20) // open until +30 s
			mustSync(t, a, at(time.Second))
			mustSync(t, s, sAt(time.Second))
			_, err = s.AllowAt(sAt(time.Second), false)
			h, _ = retry.HintOf(err)
			if skew < 0 && (err == nil || h > 31*time.Second) || skew > 0 && err != nil {
				t.Fatalf("S (%v) after A's trip: %v, hint %v; want refused for at most A's 29 s left + 2 s when behind, allowed when 30 s ahead", skew, err, h)
			}
			if skew > 0 { // S does not follow A: it calls, and trips on its own
				fail(t, s, sAt(time.Second), 20)
			}
			mustSync(t, s, sAt(2*time.Second))
			mustSync(t, b, at(2*time.Second))
			_, err = b.AllowAt(at(2*time.Second), false)
			h, _ = retry.HintOf(err)
			if err == nil || h < 28*time.Second || h > 32*time.Second {
				t.Fatalf("B after A's trip and S's syncs: %v, hint %v; want refused for about A's 28 s left (at most S's 30 s + 2 s)", err, h)
			}
		})
	}
}

// TestBudgetKeysOverwrittenMidRun: another program writes strings at the
// names of a running budget's keys (the process's own key, the slot of
// now, the set of processes, the reservations) between two syncs. The
// next sync succeeds and is shared (no WRONGTYPE error, the process does
// not fall back on deciding alone for as long as the strings stay); Redis
// no longer knows the process (its key and its entry gone), so it puts
// back its counts over the window, once: the 10 of the overwritten slot
// and the 5 since, not 20, and later syncs add only what is new.
func TestBudgetKeysOverwrittenMidRun(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := newBudget(t, client(t, srv.Addr), "payments")
	obs := newBudget(t, client(t, srv.Addr), "payments")
	for range 10 {
		b.RecordAt(at(0), true, true)
	}
	if err := b.SyncAt(t.Context(), at(0)); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(t.Context(), "yaoki:budget:{payments}:*").Result()
	if err != nil || len(keys) != 4 {
		t.Fatalf("the budget's keys: %v (%v), want 4: a slot, the process's, the processes, the reservations", keys, err)
	}
	for _, k := range keys {
		if err := rdb.Set(t.Context(), k, "another program's", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		b.RecordAt(at(time.Second), true, true)
	}
	if err := b.SyncAt(t.Context(), at(time.Second)); err != nil {
		t.Fatalf("sync after the keys were overwritten: %v, want it to read them as nothing", err)
	}
	if st := fleetTotals(t, obs, at(time.Second)); st.Successes != 15 {
		t.Fatalf("the fleet after the overwrite: %d successes, want the window's 15 put back once", st.Successes)
	}
	for range 3 {
		b.RecordAt(at(2*time.Second), true, true)
	}
	if err := b.SyncAt(t.Context(), at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := fleetTotals(t, obs, at(2*time.Second)); !b.StateAt(at(2*time.Second)).Shared || st.Successes != 18 {
		t.Fatalf("the fleet a sync later: %+v, want shared and 18 successes", st)
	}
}
