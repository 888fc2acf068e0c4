package redis_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// The fault-injection suite of the Redis idempotency store (go test -run
// Fault): each test injects one fault against a real redis-server and
// checks the handler's runs and every client's answers; the scenarios are
// in internal/idemproc.

// redisFaults starts a redis-server and describes it to the scenarios.
func redisFaults(t *testing.T) idemproc.Faults {
	srv := redistest.Start(t)
	return idemproc.Faults{
		Target:    srv.Addr,
		ChildAddr: srv.Addr,
		Open: func(t *testing.T, addr string) idempotency.Store {
			c := goredis.NewClient(&goredis.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			return redis.NewIdempotencyStore(c, redis.IdempotencyConfig{})
		},
		Stall: func(t *testing.T) (func() bool, func()) { return pauseWrites(t, srv) },
	}
}

// pauseWrites makes srv hold every write command and script (CLIENT PAUSE
// WRITE) until resume; held reports whether a client is waiting.
func pauseWrites(t *testing.T, srv *redistest.Server) (held func() bool, resume func()) {
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.Do(ctx, "CLIENT", "PAUSE", 60_000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				t.Errorf("CLIENT UNPAUSE: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	held = func() bool {
		info, err := c.Info(ctx, "clients").Result()
		for line := range strings.Lines(info) {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
				return err == nil && n != "0"
			}
		}
		return false
	}
	return held, resume
}

// TestFaultRedis runs the scenarios every store shares, each against a
// server of its own. When Begin's reply is lost, go-redis runs Begin's
// script again; the script recognises its own claim.
func TestFaultRedis(t *testing.T) {
	idemproc.Suite(t, redisFaults)
}

// TestFaultRedisCrashAtComplete: redis-server (append-only file, fsync
// at every command) is killed with SIGKILL as the handler returns and
// started again 4 s later (lease 10 s; go-redis's own retries ride out a
// 1.5 s outage unseen): the record in progress is still there, and
// Complete gets through.
func TestFaultRedisCrashAtComplete(t *testing.T) {
	srv := redistest.StartDurable(t)
	c := srv.Client(t)
	idemproc.OutageAtComplete(t, redis.NewIdempotencyStore(c, redis.IdempotencyConfig{}), 10*time.Second, srv.Kill, func() {
		if err := srv.Resume(); err != nil {
			t.Errorf("restart redis-server: %v", err)
		}
	}, 4*time.Second)
}

// TestFaultRedisRestart: a completed record survives a crash of a server
// with the append-only file, and is lost by one without it (appendonly no,
// no snapshots): its retry then runs the handler again. Check warns of the
// second at start.
func TestFaultRedisRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   func(testing.TB) *redistest.Server
		survive bool
	}{
		{"appendonly yes", redistest.StartDurable, true},
		{"appendonly no", redistest.Start, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.start(t)
			crash := func(t *testing.T) {
				srv.Kill()
				if err := srv.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.survive {
				idemproc.SurvivesRestart(t, srv.Addr, crash)
				return
			}
			store := redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{})
			if err := store.Check(t.Context()); err == nil {
				t.Fatal("Check: nil for a server without the append-only file")
			}
			id := idempotency.ID{Key: "k"}
			now := time.Now()
			if _, claimed, err := store.Begin(t.Context(), id, idempotency.Fingerprint{}, "t", now, time.Minute); err != nil || !claimed {
				t.Fatal(claimed, err)
			}
			if err := store.Complete(t.Context(), id, "t", idempotency.Response{Status: 201}, now, time.Hour); err != nil {
				t.Fatal(err)
			}
			crash(t)
			if _, ok, err := store.Get(t.Context(), id, now); err != nil || ok {
				t.Fatalf("after the crash of a server without the append-only file: record found %v (err %v), want it lost", ok, err)
			}
		})
	}
}
