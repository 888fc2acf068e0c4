package redis_test

import (
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/redis/internal/redistest"
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
