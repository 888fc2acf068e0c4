package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/postgres"
)

// TestCheckServer: the test servers run with fsync off (for speed), the
// setting that lets a crash of the machine lose acknowledged records;
// CheckServer names it, and full_page_writes while it is off too, each
// with the value to set.
func TestCheckServer(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	restartWith := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
		pool.Close()
		srv.Restart(t) // the setting applies from the start, without waiting for a reload
		pool = newPool(t, srv.DSN, 2)
	}
	restartWith(`ALTER SYSTEM SET full_page_writes = off`)
	err := postgres.NewIdempotencyStore(pool).Check(ctx)
	var ue *postgres.UnsafeServerError
	if !errors.Is(err, postgres.ErrUnsafeServer) || !errors.As(err, &ue) || !ue.FsyncOff || !ue.FullPageWritesOff ||
		!strings.Contains(err.Error(), "set fsync = on") || !strings.Contains(err.Error(), "set full_page_writes = on") {
		t.Fatalf("fsync and full_page_writes off: got %v, want an *UnsafeServerError naming both and what to set", err)
	}
	restartWith(`ALTER SYSTEM SET full_page_writes = on`)
	err = postgres.CheckServer(ctx, pool)
	if !errors.As(err, &ue) || !ue.FsyncOff || ue.FullPageWritesOff || strings.Contains(err.Error(), "full_page_writes") {
		t.Fatalf("fsync off, full_page_writes on: got %v, want fsync alone named", err)
	}
	pool.Close()
	if err := postgres.CheckServer(ctx, pool); err == nil || errors.Is(err, postgres.ErrUnsafeServer) || !strings.Contains(err.Error(), "checking the server") {
		t.Fatalf("closed pool: got %v, want an error saying the check could not be made", err)
	}
}
