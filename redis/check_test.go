package redis_test

import (
	"errors"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// TestCheckServer: Check names what makes a real server unsafe for the
// store (eviction at the memory limit, no append-only file, an append-only
// file never fsynced) and is quiet once it is configured as the store
// needs.
func TestCheckServer(t *testing.T) {
	srv := redistest.Start(t) // appendonly no, no maxmemory
	c := srv.Client(t)
	ctx := t.Context()
	s := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{})
	set := func(kv ...string) {
		t.Helper()
		for i := 0; i < len(kv); i += 2 {
			if err := c.ConfigSet(ctx, kv[i], kv[i+1]).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var unsafe *redis.UnsafeServerError
	err := s.Check(ctx)
	if !errors.Is(err, redis.ErrUnsafeServer) || !errors.As(err, &unsafe) || !unsafe.NotAppendOnly || unsafe.Evicts || !strings.Contains(err.Error(), "appendonly yes") {
		t.Fatalf("server without an append-only file: %v, want an UnsafeServerError saying appendonly yes", err)
	}
	set("maxmemory", "100mb", "maxmemory-policy", "volatile-lru")
	err = s.Check(ctx)
	if !errors.As(err, &unsafe) || !unsafe.Evicts || unsafe.MaxmemoryPolicy != "volatile-lru" || unsafe.Maxmemory != 100<<20 || !strings.Contains(err.Error(), "noeviction") {
		t.Fatalf("server that evicts: %v, want an UnsafeServerError naming volatile-lru and noeviction", err)
	}
	set("maxmemory-policy", "noeviction", "appendonly", "yes", "appendfsync", "no")
	err = s.Check(ctx)
	if !errors.As(err, &unsafe) || !unsafe.NoFsync || unsafe.Evicts || unsafe.NotAppendOnly || !strings.Contains(err.Error(), "appendfsync everysec") {
		t.Fatalf("server whose append-only file is never fsynced: %v, want an UnsafeServerError saying appendfsync everysec", err)
	}
	// A client that may not run CONFIG (as on hosted servers) is not told
	// about appendfsync, and Check still answers from INFO.
	if err := c.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	limited := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = limited.Close() })
	if err := redis.NewIdempotencyStore(limited, redis.IdempotencyConfig{}).Check(ctx); err != nil {
		t.Fatalf("Check by a client refused CONFIG, on a server with noeviction and appendonly: %v, want nil", err)
	}
	set("appendfsync", "everysec")
	if err := s.Check(ctx); err != nil {
		t.Fatalf("server with noeviction, appendonly and appendfsync everysec: %v, want nil", err)
	}
	set("maxmemory", "0", "maxmemory-policy", "allkeys-lru")
	if err := s.Check(ctx); err != nil {
		t.Fatalf("server without a memory limit: %v, want nil (nothing is evicted)", err)
	}
}

// TestCheckCluster: on a cluster, every master is asked.
func TestCheckCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	s := redis.NewIdempotencyStore(srv.ClusterClient(t), redis.IdempotencyConfig{})
	var unsafe *redis.UnsafeServerError
	if err := s.Check(t.Context()); !errors.As(err, &unsafe) || !unsafe.NotAppendOnly || unsafe.Addr == "" {
		t.Fatalf("cluster node without an append-only file: %v, want an UnsafeServerError naming the node", err)
	}
}

// TestCheckRing: on a Ring, every shard holds some of the records, so
// every shard is asked. One of two shards runs without the append-only
// file: every Check names it (INFO alone would go to a shard picked at
// random each time), beside the Ring itself.
func TestCheckRing(t *testing.T) {
	safe, unsafe := redistest.Start(t), redistest.Start(t)
	ctx := t.Context()
	if err := safe.Client(t).ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"safe": safe.Addr, "unsafe": unsafe.Addr}})
	t.Cleanup(func() { _ = ring.Close() })
	s := redis.NewIdempotencyStore(ring, redis.IdempotencyConfig{})
	for i := range 20 {
		err := s.Check(ctx)
		var named, ring bool
		for _, err := range err.(interface{ Unwrap() []error }).Unwrap() {
			var e *redis.UnsafeServerError
			if errors.As(err, &e) {
				named = named || e.NotAppendOnly && e.Addr == unsafe.Addr
				ring = ring || e.Ring
			}
		}
		if !named || !ring {
			t.Fatalf("Check %d on a ring whose shard %s has no append-only file: %v; want UnsafeServerErrors naming that shard and the Ring", i+1, unsafe.Addr, err)
		}
	}
}
