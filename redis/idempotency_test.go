package redis_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

func TestIdempotencyStoreContract(t *testing.T) {
	srv := redistest.Start(t)
	store := redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyOptions{})
	idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store { return store })
}
