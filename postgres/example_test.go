package postgres_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/postgres"
)

// Durable idempotency records: migrate at start, serve, and delete expired
// records every ten minutes. (No Output: it needs a PostgreSQL server.)
func ExampleNewIdempotencyStore() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	store := postgres.NewIdempotencyStore(pool)
	go func() {
		for now := range time.Tick(10 * time.Minute) {
			if n, err := store.Cleanup(ctx, now); err != nil {
				log.Print(err)
			} else {
				log.Printf("deleted %d expired idempotency records", n)
			}
		}
	}()
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
