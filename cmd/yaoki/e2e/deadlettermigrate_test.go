package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// migrationLock is the advisory lock that postgres.Migrate takes
// (postgres' migrationLock, "yaoki" in ASCII).
const migrationLock = 0x79616f6b69

// TestDeadLetterMigrateConcurrently: two yaoki deadletter migrate
// processes on a new database, both waiting on the migration lock, which
// the test holds until both wait: one says it applied the migrations, the
// other that it had nothing to apply. Both used to say they applied them
// (each compared the names recorded before its wait with those after).
func TestDeadLetterMigrateConcurrently(t *testing.T) {
	srv := pgtest.Start(t)
	db := newDB(t, srv, "migrateboth", false)
	ctx := context.Background()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		t.Fatal(err)
	}
	results := make(chan result, 2)
	for range 2 {
		go func() { results <- run(t, db.env, "deadletter", "migrate") }()
	}
	if !poll(20*time.Second, 5*time.Millisecond, func() bool {
		var waiting int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Error(err)
			return true
		}
		return waiting == 2
	}) {
		t.Fatal("the two migrations do not wait for the lock within 20 s")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(migrationLock)); err != nil {
		t.Fatal(err)
	}
	applied, nothing := 0, 0
	for range 2 {
		r := <-results
		switch {
		case r.code != 0:
			t.Errorf("migrate: exit %d: %s", r.code, r.stderr)
		case strings.HasPrefix(r.stdout, "applied 0001_idempotency\napplied 0002_dead_letters\n"):
			applied++
		case strings.HasPrefix(r.stdout, "nothing to apply: "):
			nothing++
		default:
			t.Errorf("migrate: %q", r.stdout)
		}
	}
	if applied != 1 || nothing != 1 {
		t.Errorf("%d migrations say they applied the migrations, %d that they had nothing to apply; want 1 and 1", applied, nothing)
	}
}
