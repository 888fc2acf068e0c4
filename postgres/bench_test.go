package postgres_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/postgres"
)

// BenchmarkMiddlewarePostgres: the middleware over a real PostgreSQL on
// loopback (one statement per Begin, one per Complete).
func BenchmarkMiddlewarePostgres(b *testing.B) {
	_, pool := start(b)
	idempotencytest.Benchmark(b, postgres.NewIdempotencyStore(pool))
}
