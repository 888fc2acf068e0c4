package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/postgres"
)

// A payment endpoint whose charge and idempotency record commit in one
// transaction: the retry of a charge replays its response, and a charge
// that fails after its INSERT leaves no row behind. (This example runs
// against a migrated PostgreSQL server that the test binary starts on
// loopback; it is skipped when PostgreSQL is not installed.)
func ExampleAtomic() {
	ctx := context.Background()
	pool, stop := exampleDB(ctx)
	defer stop()
	if _, err := pool.Exec(ctx, `CREATE TABLE charges (id bigserial PRIMARY KEY, client text NOT NULL, amount integer NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	atomic, err := postgres.NewAtomic(pool, idempotency.Config{
		Scope: func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	if err != nil {
		log.Fatal(err)
	}
	pay := func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Amount int }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		var id int64
		err := postgres.Tx(ctx).QueryRow(ctx, `INSERT INTO charges (client, amount) VALUES ($1, $2) RETURNING id`,
			r.Header.Get("X-Client"), in.Amount).Scan(&id)
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if in.Amount > 10000 {
			// A 5xx rolls the transaction back: the INSERT is undone.
			http.Error(w, "the bank did not answer", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d}`, id)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", atomic.Require(http.HandlerFunc(pay)))

	send := func(key, body string) {
		r := httptest.NewRequest("POST", "/payments", strings.NewReader(body))
		r.Header.Set("X-Client", "acme")
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d %q %s\n", w.Code, w.Header().Get("Idempotent-Replayed"), strings.TrimSpace(w.Body.String()))
	}
	send("k1", `{"amount":1200}`)
	send("k1", `{"amount":1200}`) // the retry
	send("k2", `{"amount":50000}`)
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM charges`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("charges:", n)
	// Output:
	// 201 "" {"charge":1}
	// 201 "true" {"charge":1}
	// 502 "" the bank did not answer
	// charges: 1
}
