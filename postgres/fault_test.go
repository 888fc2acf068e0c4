package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// The fault-injection suite of the PostgreSQL idempotency store (go test
// -run Fault): each test injects one fault against a real PostgreSQL and
// checks the handler's runs and every client's answers; the scenarios are
// in internal/idemproc. (TestFaultAtomicKill covers postgres.Atomic.)

func pgFaults(t *testing.T) (idemproc.Faults, *pgtest.Server) {
	srv, pool := start(t)
	return idemproc.Faults{
		Target:    srv.Addr,
		ChildAddr: srv.DSN,
		Open: func(t *testing.T, addr string) idempotency.Store {
			return postgres.NewIdempotencyStore(newPool(t, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2", 4))
		},
		Stall: func(t *testing.T) (func() bool, func()) { return lockTable(t, pool) },
	}, srv
}

// lockTable makes PostgreSQL hold every write to the records' table until
// resume: a transaction locks it in SHARE mode (reads go on). held reports
// whether a statement waits for the lock.
func lockTable(t *testing.T, pool *pgxpool.Pool) (held func() bool, resume func()) {
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+postgres.IdempotencyTable+" IN SHARE MODE"); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(resume)
	held = func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock')`).Scan(&waiting)
		return err == nil && waiting
	}
	return held, resume
}

// TestFaultPostgres runs the scenarios every store shares, each against a
// server of its own. When Begin's reply is lost, the claim was made but
// the request gets 503 and its claim is released, so that the client's
// retry runs at once rather than meeting 409 until the lease passes.
func TestFaultPostgres(t *testing.T) {
	idemproc.Suite(t, func(t *testing.T) idemproc.Faults {
		f, _ := pgFaults(t)
		return f
	})
}

// TestFaultPostgresRestartAtComplete: PostgreSQL stops as the handler
// returns (its connections end with 57P01) and starts again 1.5 s later:
// Complete gets through once it is back.
func TestFaultPostgresRestartAtComplete(t *testing.T) {
	f, srv := pgFaults(t)
	idemproc.OutageAtComplete(t, f.Open(t, f.Target), idemproc.FaultLease, srv.Stop, func() {
		if err := srv.Resume(); err != nil {
			t.Errorf("restart PostgreSQL: %v", err)
		}
	}, 1500*time.Millisecond)
}
