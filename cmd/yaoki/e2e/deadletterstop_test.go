package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// blocked waits (at most 20 s) until a session of database name other than
// the test's own waits for a lock: the command under test is stuck in its
// statement. It asks the server again at once rather than sleep: each
// question is a round trip.
func blocked(t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`, name).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session of %s waits for a lock after 20 s", name)
		}
	}
}

// idle waits (at most 20 s) until no session of database name but the
// test's runs a statement: whatever the command sent is over.
func idle(t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'active'`, name).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions of %s still run a statement after 20 s", name)
		}
	}
}

// TestDeadLetterRequeueDeleteInterrupted: the fault is SIGINT or SIGTERM
// to requeue or delete of three letters while the statement for the second
// waits on its row (another session holds the row's lock). The command
// stops there: the server cancels that statement (the letter unchanged, not
// half-changed and not changed after the command is gone), the third is
// not touched, and it exits 128+N saying how many were done and which IDs
// were not.
func TestDeadLetterRequeueDeleteInterrupted(t *testing.T) {
	srv := pgtest.Start(t)
	for _, tc := range []struct {
		name, cmd string
		sig       syscall.Signal
		code      int
		want      string // stderr
	}{
		{"requeuestop", "requeue", syscall.SIGINT, 130, "deadletter requeue: interrupted by SIGINT after 1 of 3 IDs requeued; not requeued: 2 IDs from b"},
		{"deletestop", "delete", syscall.SIGTERM, 143, "deadletter delete: interrupted by SIGTERM after 1 of 3 IDs deleted; not deleted: 2 IDs from b"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			db := newDB(t, srv, tc.name, true)
			for _, id := range []string{"a", "b", "c"} {
				db.put(t, deadletter.Letter{ID: id, Queue: "q", Due: time.Now().Add(-time.Minute), Parked: true, Payload: []byte("x")})
			}
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM yaoki_dead_letters WHERE id = 'b' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			s, first, rest := startPrinting(t, db.env, yaoki, "deadletter", tc.cmd, "a", "b", "c")
			t.Cleanup(s.kill)
			if !strings.HasPrefix(first, tc.cmd+"d a") {
				t.Fatalf("first line %q; want a %sd", first, tc.cmd)
			}
			watch, err := pgx.Connect(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			blocked(t, watch, tc.name)
			_ = s.cmd.Process.Signal(tc.sig)
			more, _ := io.ReadAll(rest)
			if code := s.wait(t); code != tc.code {
				t.Errorf("exit %d; want %d", code, tc.code)
			}
			if len(more) != 0 {
				t.Errorf("stdout after the first line: %q; want nothing more done", more)
			}
			if log := strings.Join(s.lines(), "\n"); !strings.Contains(log, tc.want) {
				t.Errorf("stderr:\n%s\nwant %q", log, tc.want)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			idle(t, watch, tc.name)
			for _, id := range []string{"b", "c"} {
				if l, ok := db.get(t, id); !ok || !l.Parked {
					t.Errorf("%s after the interrupted %s: found %v, %+v; want it as it was, parked", id, tc.cmd, ok, l)
				}
			}
			l, ok := db.get(t, "a")
			if tc.cmd == "requeue" && (!ok || l.Parked) || tc.cmd == "delete" && ok {
				t.Errorf("a after the interrupted %s: found %v, %+v; want it %sd", tc.cmd, ok, l, tc.cmd)
			}
		})
	}
}

// TestDeadLetterReadsInterrupted: SIGINT or SIGTERM to migrate, list, count
// and show while their statement waits for a lock another session holds
// (migrate's advisory lock; the table locked ACCESS EXCLUSIVE). Each stops
// at once, exits 128+N and says it was interrupted; migrate says that the
// database records no migration.
func TestDeadLetterReadsInterrupted(t *testing.T) {
	srv := pgtest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
		sig  syscall.Signal
		code int
		want string
	}{
		{"migratestop", []string{"migrate"}, syscall.SIGTERM, 143,
			"deadletter migrate: interrupted by SIGTERM; the database records no migration: nothing was applied"},
		{"liststop", []string{"list"}, syscall.SIGINT, 130, "deadletter list: interrupted by SIGINT after 0 letters"},
		{"countstop", []string{"count"}, syscall.SIGINT, 130, "deadletter count: interrupted by SIGINT"},
		{"showstop", []string{"show", "a"}, syscall.SIGTERM, 143, "deadletter show: interrupted by SIGTERM"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			migrate := tc.args[0] != "migrate"
			db := newDB(t, srv, tc.name, migrate)
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			lock := `LOCK TABLE yaoki_dead_letters IN ACCESS EXCLUSIVE MODE`
			if !migrate {
				lock = fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLock)
			}
			if _, err := tx.Exec(ctx, lock); err != nil {
				t.Fatal(err)
			}
			s := startProgram(t, yaoki, append(append([]string{"deadletter"}, tc.args...), "--postgres", db.dsn)...)
			t.Cleanup(s.kill)
			watch, err := pgx.Connect(ctx, db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			blocked(t, watch, tc.name)
			_ = s.cmd.Process.Signal(tc.sig)
			if code := s.wait(t); code != tc.code {
				t.Errorf("exit %d; want %d", code, tc.code)
			}
			if log := strings.Join(s.lines(), "\n"); !strings.Contains(log, tc.want) {
				t.Errorf("stderr:\n%s\nwant %q", log, tc.want)
			}
		})
	}
}
