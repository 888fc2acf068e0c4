package redistest

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartReplica starts a server as Start does, a replica of primary
// (host:port: a server's Addr, or the Addr of a Proxy in front of it, so
// that the test can cut the replication link), and waits until its link is
// up and it has loaded the primary's data, for at most 10 s. It
// skips tb when redis-server is missing.
func StartReplica(tb testing.TB, primary string) *Server {
	tb.Helper()
	host, port, ok := strings.Cut(primary, ":")
	if !ok {
		tb.Fatalf("redistest: replica of %q: want host:port", primary)
	}
	s := startOrSkip(tb, " as a replica", func(string) []string { return []string{"--replicaof", host, port} })
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: replica %s of %s not in sync after 10 s: %v %q", s.Addr, primary, err, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Promote turns a replica into a primary (REPLICAOF NO ONE), as a failover
// does: it keeps what it had received, and takes writes.
func (s *Server) Promote(tb testing.TB) {
	tb.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		tb.Fatalf("redistest: REPLICAOF NO ONE on %s: %v", s.Addr, err)
	}
}
