package postgres_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/postgres"
)

// BenchmarkAtomic: postgres.Atomic over a real PostgreSQL on loopback, with
// the request and handler of BenchmarkMiddlewarePostgres (a small JSON
// request and response, no network between client and handler), so that
// the two compare. "first": a new key (BEGIN, claim, record, COMMIT);
// "replay": a key with a record (BEGIN, claim that finds it, ROLLBACK).
// "insert" runs a handler that INSERTs a row, once through Atomic (in the
// request's transaction) and once behind the middleware over
// IdempotencyStore (an INSERT of its own, committed apart from the record).
func BenchmarkAtomic(b *testing.B) {
	_, pool := start(b)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_charges (id bigserial PRIMARY KEY, key text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	respond := func(w http.ResponseWriter, id int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":"ch_%d","amount":1000,"status":"succeeded"}`, id)
	}
	plain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		respond(w, 1)
	})
	inserting := func(db postgres.DB) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if tx := postgres.Tx(r.Context()); tx != nil {
				db = tx
			}
			var id int64
			if err := db.QueryRow(r.Context(), `INSERT INTO bench_charges (key) VALUES ($1) RETURNING id`,
				r.Header.Get("Idempotency-Key")).Scan(&id); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			respond(w, id)
		})
	}
	atomic, err := postgres.NewAtomic(pool, idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	idem, err := idempotency.New(idempotency.Config{Store: postgres.NewIdempotencyStore(pool)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("first", func(b *testing.B) { idempotencytest.Serve(b, atomic.Handler(plain), idempotencytest.NewKeys("first-")) })
	b.Run("replay", func(b *testing.B) {
		k := idempotencytest.NewKeys("replay-")(0)
		idempotencytest.Serve(b, atomic.Handler(plain), func(int) string { return k })
	})
	b.Run("insert/atomic", func(b *testing.B) {
		idempotencytest.Serve(b, atomic.Handler(inserting(pool)), idempotencytest.NewKeys("ia-"))
	})
	b.Run("insert/middleware", func(b *testing.B) {
		idempotencytest.Serve(b, idem.Handler(inserting(pool)), idempotencytest.NewKeys("im-"))
	})
}
