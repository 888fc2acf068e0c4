package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// TestMigrateAppliedOnce: two processes (a pool each) migrate a new
// database at the same time, both waiting on Migrate's lock, which the test
// holds until both wait: one says it applied every migration, the other
// none; a third call applies none.
func TestMigrateAppliedOnce(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	holder := newPool(t, srv.DSN, 1)
	conn, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(postgres.MigrationLock)); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		applied [2][]string
		errs    [2]error
	)
	for i := range 2 {
		pool := newPool(t, srv.DSN, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = postgres.MigrateApplied(ctx, pool)
		}()
	}
	waitLockWaiters(t, conn, 2)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(postgres.MigrationLock)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	all := []string{"0001_idempotency", "0002_dead_letters"}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("migrations: %v, %v", errs[0], errs[1])
	}
	if !(slices.Equal(applied[0], all) && applied[1] == nil || applied[0] == nil && slices.Equal(applied[1], all)) {
		t.Errorf("the two migrations say they applied %v and %v; want %v once", applied[0], applied[1], all)
	}
	if again, err := postgres.MigrateApplied(ctx, conn); err != nil || again != nil {
		t.Errorf("a third migration applied %v, %v; want none", again, err)
	}
}

// waitLockWaiters waits (at most 20 s, polling the server) until n
// sessions wait for an advisory lock.
func waitLockWaiters(t *testing.T, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, n int) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; {
		var waiting int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d sessions wait for the migration lock after 20 s, want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
