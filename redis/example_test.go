package redis_test

import (
	"context"
	"log"
	"net/http"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/redis"
)

// A fleet of servers that share their idempotency records through Redis: a
// retry that reaches another instance is replayed there too. (No Output:
// it needs a Redis server.)
func ExampleNewIdempotencyStore() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	store := redis.NewIdempotencyStore(rdb, redis.IdempotencyConfig{Prefix: "payments:idem:"})
	// A server that evicts keys or restarts without an append-only file
	// loses records: say so at start.
	if err := store.Check(context.Background()); err != nil {
		log.Printf("idempotency store: %v", err)
	}
	idem, err := idempotency.New(idempotency.Config{
		Store: store,
		Scope: func(r *http.Request) string { return r.Header.Get("X-Client-Id") },
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idem.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	_ = http.ListenAndServe("127.0.0.1:8080", mux)
}
