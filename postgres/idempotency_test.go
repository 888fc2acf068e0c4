package postgres_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/leakcheck"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/deadlettertest"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

func TestMain(m *testing.M) {
	atomicChildMain()     // the Atomic fault tests run this binary again as a server
	deadLetterChildMain() // TestFaultRedriverKilled runs it again as a redriver
	// The restart and lease tests run this binary again as a server.
	idemproc.Main(func(dsn string) (idempotency.Store, error) {
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			return nil, err
		}
		return postgres.NewIdempotencyStore(pool), nil
	})
	skipExamplesWithoutServer()
	leakcheck.Main(m) // fails the binary if the tests leave goroutines running
}

// start starts a server, migrates it and returns it with a pool.
func start(tb testing.TB) (*pgtest.Server, *pgxpool.Pool) {
	srv := pgtest.Start(tb)
	pool := newPool(tb, srv.DSN, 16)
	if err := postgres.Migrate(context.Background(), pool); err != nil {
		tb.Fatal(err)
	}
	return srv, pool
}

// TestContracts runs the contract suites of both stores, on one server
// shared by their subtests.
func TestContracts(t *testing.T) {
	_, pool := start(t)
	t.Run("IdempotencyStore", func(t *testing.T) {
		idempotencytest.TestStore(t, func(*testing.T) idempotency.Store { return postgres.NewIdempotencyStore(pool) })
	})
	t.Run("DeadLetters", func(t *testing.T) {
		deadlettertest.TestStore(t, func(*testing.T) deadletter.Store { return postgres.NewDeadLetters(pool) })
	})
}

func TestIdempotencyExactlyOnce(t *testing.T) {
	_, pool := start(t)
	idempotencytest.ExactlyOnce(t, postgres.NewIdempotencyStore(pool), 500)
}

func TestIdempotencyLeaseAfterKill(t *testing.T) {
	srv, pool := start(t)
	idemproc.LeaseAfterKill(t, postgres.NewIdempotencyStore(pool), srv.DSN)
}

// TestIdempotencySurvivesRestart: the record outlives the server process
// that wrote it and a restart of PostgreSQL itself.
func TestIdempotencySurvivesRestart(t *testing.T) {
	srv, pool := start(t)
	idemproc.SurvivesRestart(t, srv.DSN, func(t *testing.T) {
		pool.Reset() // drop the connections to the server about to stop
		srv.Restart(t)
	})
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- postgres.Migrate(ctx, pool) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+postgres.MigrationsTable).Scan(&n); err != nil || n != postgres.Migrations {
		t.Fatalf("migrations recorded: %d %v, want %d", n, err, postgres.Migrations)
	}
}

func TestIdempotencyCleanup(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	s := postgres.NewIdempotencyStore(pool)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 2500
	for i := range n {
		id := idempotency.ID{Key: "k" + string(rune('a'+i%26)) + time.Duration(i).String()}
		if _, claimed, err := s.Begin(ctx, id, idempotency.Fingerprint{}, "t", t0, time.Minute); err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		if i%2 == 0 { // half completed, kept an hour; half left in progress
			if err := s.Complete(ctx, id, "t", idempotency.Response{Status: 200}, t0, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, err := s.Cleanup(ctx, t0.Add(time.Minute-time.Millisecond)); err != nil || got != 0 {
		t.Fatalf("cleanup before any time passed: %d %v, want 0", got, err)
	}
	// Claims stay idempotency.CompleteGrace past their lease, for their
	// holders to complete them late.
	if got, err := s.Cleanup(ctx, t0.Add(time.Minute+idempotency.CompleteGrace-time.Millisecond)); err != nil || got != 0 {
		t.Fatalf("cleanup after the leases, within CompleteGrace: %d %v, want 0", got, err)
	}
	if got, err := s.Cleanup(ctx, t0.Add(time.Minute+idempotency.CompleteGrace)); err != nil || got != n/2 {
		t.Fatalf("cleanup CompleteGrace after the leases: %d %v, want %d", got, err, n/2)
	}
	if got, err := s.Cleanup(ctx, t0.Add(time.Hour)); err != nil || got != n/2 {
		t.Fatalf("cleanup after the retention: %d %v, want %d", got, err, n/2)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+postgres.IdempotencyTable).Scan(&left); err != nil || left != 0 {
		t.Fatalf("rows left: %d %v", left, err)
	}
}

func TestIdempotencyScoped(t *testing.T) {
	_, pool := start(t)
	idempotencytest.Scoped(t, postgres.NewIdempotencyStore(pool))
}

// TestScopeNotUTF8Postgres: a scope that the text column cannot hold is
// refused with 400 before the store is asked (the database would refuse
// it, and its error would be a 503, which a retry cannot fix).
func TestScopeNotUTF8Postgres(t *testing.T) {
	_, pool := start(t)
	m, err := idempotency.New(idempotency.Config{
		Store: postgres.NewIdempotencyStore(pool),
		Scope: func(r *http.Request) string { return r.Header.Get("X-Principal") },
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", "k")
	r.Header.Set("X-Principal", "caf\xe9")
	w := httptest.NewRecorder()
	m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })).ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), idempotency.ReasonScopeMalformed) {
		t.Fatalf("scope not UTF-8: %d %s, want 400 %s", w.Code, w.Body, idempotency.ReasonScopeMalformed)
	}
}
