package redistest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartCluster starts a server in cluster mode that serves every hash slot
// by itself: a one-node Redis Cluster, enough to show that a client's
// multi-key commands and scripts keep to one slot (the server refuses the
// others with CROSSSLOT). It skips tb when redis-server is missing. It
// takes about 2 s: a cluster node waits that long after it starts before
// it declares the cluster ok.
func StartCluster(tb testing.TB) *Server {
	tb.Helper()
	s := startOrSkip(tb, " in cluster mode", func(dir string) []string {
		return []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf")}
	})
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		tb.Fatalf("redistest: CLUSTER ADDSLOTSRANGE: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: one-node cluster not ready after 10 s: %v %q", err, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ClusterClient returns a cluster client of a server started by
// StartCluster, closed when tb ends.
func (s *Server) ClusterClient(tb testing.TB) *goredis.ClusterClient {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{s.Addr}})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
