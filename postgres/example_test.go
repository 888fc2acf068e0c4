package postgres_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/deadletter"
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

// A letter put by a retry loop that gave up, claimed by a redriver once it
// is due, and deleted when its redrive worked. (This example runs against
// a migrated PostgreSQL server that the test binary starts on loopback;
// it is skipped when PostgreSQL is not installed.)
func ExampleDeadLetters() {
	ctx := context.Background()
	pool, stop := exampleDB(ctx)
	defer stop()
	letters := postgres.NewDeadLetters(pool)

	gaveUp := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	err := letters.Put(ctx, deadletter.Letter{
		ID: "charge-42", Queue: "charges", Key: "3f1c9a", Payload: []byte(`{"amount":1200}`),
		Reason: "attempts exhausted", Error: "503 Service Unavailable", Attempts: 3,
		Created: gaveUp, Due: gaveUp.Add(5 * time.Minute),
	})
	if err != nil {
		log.Fatal(err)
	}
	early, _ := letters.Claim(ctx, "charges", gaveUp.Add(time.Minute), 10, time.Minute)
	fmt.Println("claimed one minute later:", len(early))

	claimed, err := letters.Claim(ctx, "charges", gaveUp.Add(5*time.Minute), 10, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range claimed {
		fmt.Printf("redrive %s (key %s, %d attempts so far): %s\n", l.ID, l.Key, l.Attempts, l.Payload)
		// ... the redrive worked:
		if err := letters.Done(ctx, l.ID, l.Token); err != nil {
			log.Fatal(err)
		}
	}
	c, _ := letters.Count(ctx, "", gaveUp.Add(5*time.Minute))
	fmt.Println("letters left:", c.Total())
	// Output:
	// claimed one minute later: 0
	// redrive charge-42 (key 3f1c9a, 3 attempts so far): {"amount":1200}
	// letters left: 0
}
