package redis_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// BenchmarkMiddlewareRedis: the middleware over a real redis-server on
// loopback (one round trip per Begin, one per Complete), without replicas.
func BenchmarkMiddlewareRedis(b *testing.B) {
	srv := redistest.Start(b)
	idempotencytest.Benchmark(b, redis.NewIdempotencyStore(srv.Client(b), redis.IdempotencyConfig{}))
}

// BenchmarkMiddlewareRedisReplicas: as BenchmarkMiddlewareRedis, with a
// replica on loopback and Replicas 1: Begin's claim and Complete's record
// each wait for the replica's acknowledgement (WAIT).
func BenchmarkMiddlewareRedisReplicas(b *testing.B) {
	srv := redistest.Start(b)
	redistest.StartReplica(b, srv.Addr)
	idempotencytest.Benchmark(b, redis.NewIdempotencyStore(srv.Client(b), redis.IdempotencyConfig{Replicas: 1}))
}
