package redis_test

import (
	"errors"
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
	if ttl <= 0 || ttl > time.Minute+redis.ClaimGrace {
		t.Fatalf("PTTL of an in-progress record %v, want the lease (1 min) and ClaimGrace", ttl)
	}
}

func TestIdempotencyScoped(t *testing.T) {
	srv := redistest.Start(t)
	idempotencytest.Scoped(t, redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}))
}

// TestIdempotencyRedisExpiresKeys: Redis itself removes a record in
// progress ClaimGrace after its lease (its holder died), and a completed
// one at the end of its TTL, so nothing needs cleaning up. PTTL says when
// it will: the test cannot move Redis's clock.
func TestIdempotencyRedisExpiresKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "x:"})
	ctx := t.Context()
	dead := idempotency.ID{Key: "dead"}
	const lease = 50 * time.Millisecond
	if _, claimed, err := s.Begin(ctx, dead, idempotency.Fingerprint{}, "t", time.Now(), lease); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if ttl := c.PTTL(ctx, "x:0::dead").Val(); ttl <= redis.ClaimGrace-time.Minute || ttl > lease+redis.ClaimGrace {
		t.Fatalf("PTTL of a record in progress %v, want its lease (%v) and ClaimGrace (%v)", ttl, lease, redis.ClaimGrace)
	}
	done := idempotency.ID{Key: "done"}
	now := time.Now()
	if _, claimed, err := s.Begin(ctx, done, idempotency.Fingerprint{}, "t", now, lease); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if err := s.Complete(ctx, done, "t", idempotency.Response{Status: 201}, now, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "x:0::done").Val(); ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("PTTL of a completed record %v, want about 24 h", ttl)
	}
}

// TestIdempotencyLateHolderCompletes: a holder whose lease has passed while
// no other request claimed its key (its process paused, its link to Redis
// cut for longer than the lease) still stores its response when it
// answers, as with PostgreSQL, where the row stays until Cleanup: Redis
// keeps the key of a record in progress ClaimGrace past its lease (by
// its own clock, which the test cannot move: PTTL says when it will
// remove the key), while Begin decides by the lease alone.
func TestIdempotencyLateHolderCompletes(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "x:"})
	ctx := t.Context()
	const lease = time.Minute
	now := time.Now()
	late, other := idempotency.ID{Key: "late"}, idempotency.ID{Key: "other"}
	for _, id := range []idempotency.ID{late, other} {
		if _, claimed, err := s.Begin(ctx, id, idempotency.Fingerprint{}, "t-"+id.Key, now, lease); err != nil || !claimed {
			t.Fatal(claimed, err)
		}
	}
	if ttl := c.PTTL(ctx, "x:0::late").Val(); ttl <= lease+redis.ClaimGrace-time.Minute {
		t.Fatalf("PTTL of a record in progress %v; want its lease and ClaimGrace (%v): Redis would remove the key of a holder that answers late", ttl, lease+redis.ClaimGrace)
	}
	if err := s.Extend(ctx, late, "t-late", now.Add(lease/3), lease); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "x:0::late").Val(); ttl <= lease+redis.ClaimGrace-time.Minute {
		t.Fatalf("PTTL after Extend %v; want the lease and ClaimGrace (%v)", ttl, lease+redis.ClaimGrace)
	}
	// Five minutes past the lease: the holder of late answers; another
	// request claims other, whose holder then answers too.
	after := now.Add(lease/3 + lease + 5*time.Minute)
	resp := idempotency.Response{Status: 201, Body: []byte("charged")}
	if err := s.Complete(ctx, late, "t-late", resp, after, time.Hour); err != nil {
		t.Fatalf("Complete by a holder past its lease, the key claimed by nobody: %v; want its record stored", err)
	}
	if rec, ok, err := s.Get(ctx, late, after); err != nil || !ok || rec.State != idempotency.Completed || string(rec.Response.Body) != "charged" {
		t.Fatalf("Get: %+v %v %v; want the late holder's record", rec, ok, err)
	}
	if _, claimed, err := s.Begin(ctx, other, idempotency.Fingerprint{}, "t-new", after, lease); err != nil || !claimed {
		t.Fatalf("Begin past the lease of a record in progress: claimed %v, err %v; want it claimed", claimed, err)
	}
	if err := s.Complete(ctx, other, "t-other", resp, after, time.Hour); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete by a holder past its lease whose key another claimed: %v; want ErrLeaseLost", err)
	}
}
