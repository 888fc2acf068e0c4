package redis_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// BenchmarkMiddlewareRedis: the middleware over a real redis-server on
// loopback (one round trip per Begin, one per Complete).
func BenchmarkMiddlewareRedis(b *testing.B) {
	srv := redistest.Start(b)
	idempotencytest.Benchmark(b, redis.NewIdempotencyStore(srv.Client(b), redis.IdempotencyConfig{}))
}
