package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
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
				r.Header.Get(idempotency.HeaderKey)).Scan(&id); err != nil {
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
	body := []byte(`{"amount":1000,"currency":"eur","source":"tok_visa"}`)
	run := func(b *testing.B, h http.Handler, key func(i int) string) {
		u, _ := url.Parse("/v1/charges")
		rd := bytes.NewReader(body)
		r := &http.Request{Method: "POST", URL: u, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(rd), ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		r = r.WithContext(ctx)
		w := &benchWriter{h: make(http.Header)}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rd.Reset(body)
			r.Header[idempotency.HeaderKey] = []string{key(i)}
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, r)
			if w.code != http.StatusCreated {
				b.Fatalf("status %d", w.code)
			}
		}
	}
	unique := func(p string) func(int) string { // keys unique per run (-count runs it again)
		p += strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
		return func(i int) string { return p + strconv.Itoa(i) }
	}
	b.Run("first", func(b *testing.B) { run(b, atomic.Handler(plain), unique("first-")) })
	b.Run("replay", func(b *testing.B) {
		k := unique("replay-")(0)
		run(b, atomic.Handler(plain), func(int) string { return k })
	})
	b.Run("insert/atomic", func(b *testing.B) { run(b, atomic.Handler(inserting(pool)), unique("ia-")) })
	b.Run("insert/middleware", func(b *testing.B) { run(b, idem.Handler(inserting(pool)), unique("im-")) })
}

type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *benchWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
