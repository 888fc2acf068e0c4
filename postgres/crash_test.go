package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/postgres"
)

// TestFaultPostgresCrashAsyncCommit: the database runs with
// synchronous_commit off (a common setting for throughput: a commit is
// acknowledged before its WAL is written out), and PostgreSQL crashes
// (SIGKILL of the server and its backends) right after a request's record
// was completed. The record must survive: the retry, to the server started
// again, gets the replay, and the handler (whose effect is outside the
// database, a call to a payment provider) has run once.
func TestFaultPostgresCrashAsyncCommit(t *testing.T) {
	srv, admin := start(t)
	ctx := context.Background()
	// The WAL writer writes out asynchronous commits every
	// wal_writer_delay: at its longest, so that the crash comes first.
	for _, sql := range []string{
		`ALTER SYSTEM SET synchronous_commit = off`,
		`ALTER SYSTEM SET wal_writer_delay = '10s'`,
		`SELECT pg_reload_conf()`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	pool := newPool(t, srv.DSN, 4)
	var sc string
	if err := pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sc); err != nil || sc != "off" {
		t.Fatalf("synchronous_commit %q (%v), want off", sc, err)
	}

	var runs atomic.Int64
	m, err := idempotency.New(idempotency.Config{Store: postgres.NewIdempotencyStore(pool), ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d}`, n)
	})))
	defer h.Close()
	post := func() (*http.Response, string) {
		t.Helper()
		r, _ := http.NewRequest("POST", h.URL+"/charges", strings.NewReader(`{"amount":10}`))
		r.Header.Set("Idempotency-Key", "crash-1")
		resp, err := h.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	first, fb := post()
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, fb)
	}

	srv.Crash()
	pool.Reset()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}

	again, ab := post()
	if n := runs.Load(); n != 1 || again.StatusCode != http.StatusCreated || ab != fb || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("after the crash: %d %s, replayed %q, handler runs %d; want the replay of %s and 1 run (the completed record lost with the commit PostgreSQL had acknowledged)",
			again.StatusCode, ab, again.Header.Get("Idempotent-Replayed"), n, fb)
	}
}
