package postgres_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/postgres"
)

// BenchmarkMiddlewarePostgres: the middleware over a real PostgreSQL on
// loopback (one statement per Begin, one per Complete).
func BenchmarkMiddlewarePostgres(b *testing.B) {
	_, pool := start(b)
	idempotencytest.Benchmark(b, postgres.NewIdempotencyStore(pool))
}

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

// BenchmarkDeadLetters: one letter's life over a real PostgreSQL on
// loopback, per op: Put, Claim (of that one letter) and Done, three
// statements. "backlog": the same with 10 000 letters waiting in the
// queue. "parallel" runs it from GOMAXPROCS×4 goroutines, each with a
// queue of its own, over a pool of 16 connections.
func BenchmarkDeadLetters(b *testing.B) {
	_, pool := start(b)
	store := postgres.NewDeadLetters(pool)
	ctx := context.Background()
	payload := []byte(`{"amount":1000,"currency":"eur","source":"tok_visa"}`)
	life := func(queue, id string, now time.Time) error {
		err := store.Put(ctx, deadletter.Letter{ID: id, Queue: queue, Key: id, Payload: payload,
			Reason: "attempts exhausted", Error: "503 Service Unavailable", Attempts: 3, Created: now, Due: now})
		if err != nil {
			return err
		}
		ls, err := store.Claim(ctx, queue, now, 1, time.Minute)
		if err != nil || len(ls) != 1 || ls[0].ID != id {
			return fmt.Errorf("claim of %s: %d letters, %v", id, len(ls), err)
		}
		return store.Done(ctx, id, ls[0].Token)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Run("sequential", func(b *testing.B) {
		p := "s" + deadletter.NewID() + "-" // IDs unique per run (-count runs it again)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := life("bench", p+strconv.Itoa(i), now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backlog", func(b *testing.B) {
		// The queue holds 10 000 letters due tomorrow: the claim's index
		// range stops before them.
		q := "backlog-" + deadletter.NewID()
		if _, err := pool.Exec(ctx, `INSERT INTO `+postgres.DeadLettersTable+`
SELECT $1::text || '-' || i, $1::text, '', '\x00', '', '', 0, 0, $2::timestamptz, $2::timestamptz + interval '1 day', false, NULL, NULL
FROM generate_series(1, 10000) AS i`, q, now); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+postgres.DeadLettersTable); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := life(q, q+"/"+strconv.Itoa(i), now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			q := deadletter.NewID()
			for i := 0; pb.Next(); i++ {
				if err := life(q, q+"-"+strconv.Itoa(i), now); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
					return
				}
			}
		})
	})
}
