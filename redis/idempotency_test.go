package redis_test

import (
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/leakcheck"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

func TestMain(m *testing.M) {
	// The restart and lease tests run this binary again as a server.
	idemproc.Main(func(addr string) (idempotency.Store, error) {
		return redis.NewIdempotencyStore(goredis.NewClient(&goredis.Options{Addr: addr}), redis.IdempotencyConfig{}), nil
	})
	leakcheck.Main(m) // fails the binary if the tests leave goroutines running
}

func TestIdempotencyStoreContract(t *testing.T) {
	srv := redistest.Start(t)
	store := redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{})
	idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store { return store })
}

// TestIdempotencyStoreContractCluster: the same contract through a
// ClusterClient: each transition is one script on one key, so it keeps to
// one slot.
func TestIdempotencyStoreContractCluster(t *testing.T) {
	store := redis.NewIdempotencyStore(redistest.StartCluster(t).ClusterClient(t), redis.IdempotencyConfig{})
	idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store { return store })
}

func TestIdempotencyExactlyOnce(t *testing.T) {
	srv := redistest.Start(t)
	idempotencytest.ExactlyOnce(t, redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}), 500)
}

func TestIdempotencyLeaseAfterKill(t *testing.T) {
	srv := redistest.Start(t)
	idemproc.LeaseAfterKill(t, redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}), srv.Addr)
}

func TestIdempotencySurvivesRestart(t *testing.T) {
	srv := redistest.Start(t)
	idemproc.SurvivesRestart(t, srv.Addr, nil)
}

func TestIdempotencyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	a := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "a:"})
	b := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "b:"})
	ctx := t.Context()
	id := idempotency.ID{Scope: "s", Key: "k"}
	now := time.Now()
	if _, claimed, err := a.Begin(ctx, id, idempotency.Fingerprint{}, "t", now, time.Minute); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if _, claimed, err := b.Begin(ctx, id, idempotency.Fingerprint{}, "t", now, time.Minute); err != nil || !claimed {
		t.Fatalf("a store with another prefix saw the record: claimed %v err %v", claimed, err)
	}
	if n, err := c.Exists(ctx, "a:1:s:k", "b:1:s:k").Result(); err != nil || n != 2 {
		t.Fatalf("keys a:1:s:k and b:1:s:k: %d exist, err %v", n, err)
	}
	ttl, _ := c.PTTL(ctx, "a:1:s:k").Result()
	if ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL of an in-progress record %v, want the lease (1 min)", ttl)
	}
}

func TestIdempotencyScoped(t *testing.T) {
	srv := redistest.Start(t)
	idempotencytest.Scoped(t, redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}))
}

// TestIdempotencyRedisExpiresKeys: Redis itself removes a record whose
// lease passed (its holder died) and keeps a completed one for its TTL, so
// nothing needs cleaning up.
func TestIdempotencyRedisExpiresKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "x:"})
	ctx := t.Context()
	dead := idempotency.ID{Key: "dead"}
	if _, claimed, err := s.Begin(ctx, dead, idempotency.Fingerprint{}, "t", time.Now(), 50*time.Millisecond); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "x:0::dead").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the record of a 50 ms lease still exists after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	done := idempotency.ID{Key: "done"}
	now := time.Now()
	if _, claimed, err := s.Begin(ctx, done, idempotency.Fingerprint{}, "t", now, 50*time.Millisecond); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if err := s.Complete(ctx, done, "t", idempotency.Response{Status: 201}, now, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "x:0::done").Val(); ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("PTTL of a completed record %v, want about 24 h", ttl)
	}
}

// TestIdempotencyPrefixStartsAnother: what IdempotencyConfig.Prefix says
// of two prefixes one of which starts the other: a record of one store is
// found by the other under another scope and key.
func TestIdempotencyPrefixStartsAnother(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	a := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "app"})
	b := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "app1:"})
	ctx := t.Context()
	now := time.Now()
	if _, claimed, err := a.Begin(ctx, idempotency.ID{Scope: "0", Key: ":k"}, idempotency.Fingerprint{}, "t", now, time.Minute); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if _, claimed, err := b.Begin(ctx, idempotency.ID{Key: "k"}, idempotency.Fingerprint{}, "u", now, time.Minute); err != nil || claimed {
		t.Fatalf("the store under app1: claimed %v (err %v) the key that the store under app holds as scope 0, key :k; the doc says they meet", claimed, err)
	}
}
