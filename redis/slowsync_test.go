package redis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// sentHook tells, once armed, when a script is sent to Redis.
type sentHook struct {
	armed atomic.Pointer[chan struct{}]
}

func (h *sentHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *sentHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
func (h *sentHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			if c := h.armed.Swap(nil); c != nil {
				close(*c)
			}
		}
		return next(ctx, cmd)
	}
}

// arm returns a channel closed when the next script is sent.
func (h *sentHook) arm() <-chan struct{} {
	c := make(chan struct{})
	h.armed.Store(&c)
	return c
}

// TestHotPathWhileSyncHeld: a sync's reply never comes (the link swallows
// it and stays open, as a NAT that forgot the connection does): while the
// budget's and then the breaker's sync waits for it, holding the sync's
// lock, the hot paths (RecordAt, AllowRetryAt, CancelRetryAt, LevelAt,
// StateAt; AllowAt, DoneAt, StateAt, OpenUntil) all return, deciding on
// the last sync's state: none waits for Redis. The sync ends with an error
// when the link breaks.
func TestHotPathWhileSyncHeld(t *testing.T) {
	srv := redistest.Start(t)
	link := srv.Proxy(t)
	hook := &sentHook{}
	c := goredis.NewClient(&goredis.Options{Addr: link.Addr, PoolSize: 4, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 10 * time.Second, ContextTimeoutEnabled: true})
	c.AddHook(hook)
	t.Cleanup(func() { _ = c.Close() })
	bu := newBudget(t, c, "payments")
	br := newProc(t, c, "payments", nil)
	a := newProc(t, client(t, srv.Addr), "payments", nil)
	fail(t, a, at(0), 20) // the fleet is open until +30 s
	mustSync(t, a, at(0))
	if err := bu.SyncAt(t.Context(), at(0)); err != nil {
		t.Fatal(err)
	}
	mustSync(t, br, at(0))

	held := func(who string, sync func(context.Context) error, hot func()) {
		t.Helper()
		ctx := t.Context()
		// A live connection in the pool (the last Cut broke the one there
		// was), so that the sync sends at once when the hook fires.
		retrySync(t, who+": ping", func() error { return c.Ping(ctx).Err() })
		sent := hook.arm()
		link.HoldNextReply()
		done := make(chan error, 1)
		go func() { done <- sync(ctx) }()
		<-sent
		hot()
		select {
		case err := <-done:
			t.Fatalf("%s: the sync ended (%v) before the hot path was done: the reply was not held", who, err)
		default:
		}
		link.Cut() // the held connection breaks: the sync ends
		link.Up()  // no hold left over, should the cut have come before the reply
		if err := <-done; err == nil {
			t.Fatalf("%s: a sync whose reply never came succeeded", who)
		}
	}
	held("budget", func(ctx context.Context) error { return bu.SyncAt(ctx, at(time.Second)) }, func() {
		for range 1000 {
			bu.RecordAt(at(time.Second), true, true)
			if bu.AllowRetryAt(at(time.Second), false) {
				bu.CancelRetryAt(at(time.Second), false, false)
			}
			_ = bu.LevelAt(at(time.Second))
		}
		if st := bu.StateAt(at(time.Second)); !st.Shared {
			t.Fatalf("budget while its sync is held: %+v, want the last sync's shared state", st)
		}
	})
	held("breaker", func(ctx context.Context) error { return br.SyncAt(ctx, at(time.Second)) }, func() {
		for range 1000 {
			_, _ = br.AllowAt(at(time.Second), false)
			br.DoneAt(at(time.Second), 0, time.Millisecond, nil)
			_, _ = br.OpenUntil(at(time.Second))
			_ = br.StateAt(at(time.Second))
		}
		mustRefuseFleet(t, "the breaker while its sync is held", br, at(time.Second), 29*time.Second)
	})
}
