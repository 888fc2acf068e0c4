package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres"
)

// envRedriveChild names the variable that makes this test binary a
// redriver (deadLetterChildMain) over the database whose DSN it holds.
const envRedriveChild = "YAOKI_TEST_REDRIVE_CHILD_DSN"

// deadLetterChildMain, in a binary started with envRedriveChild, makes one
// redrive pass of queue "killed" whose handler says "started ID" on stdout
// and then hangs, waiting to be killed; it never returns.
func deadLetterChildMain() {
	dsn := os.Getenv(envRedriveChild)
	if dsn == "" {
		return
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err == nil {
		var r *deadletter.Redriver
		r, err = deadletter.NewRedriver(deadletter.Config{Store: postgres.NewDeadLetters(pool), Queue: "killed", Batch: 1,
			Handler: func(ctx context.Context, l deadletter.Letter) error {
				fmt.Println("started", l.ID)
				select {}
			}})
		if err == nil {
			_, err = r.RedriveAt(context.Background(), time.Now())
		}
	}
	fmt.Fprintln(os.Stderr, "redrive child:", err)
	os.Exit(3)
}

// TestFaultRedriverKilled kills (SIGKILL) a redriver process while its
// handler runs, three times over one letter (a poison letter that takes
// its redriver down). Each claim that ended with its lease, no outcome
// stored, counts as a failed redrive with an attempt; at MaxRedrives the
// next redriver parks the letter without running it again.
func TestFaultRedriverKilled(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	s := postgres.NewDeadLetters(pool)
	if err := s.Put(ctx, letter("poison", "killed", time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	const maxRedrives = 3
	// Each child claims with the real clock; the lease (DefaultLease) of
	// the one before it has passed when the test says so: the next
	// claims are made "later" by moving the letter's lease end back.
	for kill := range maxRedrives {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), envRedriveChild+"="+srv.DSN)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "started poison" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("redriver %d: %q, %v: want it to start the letter", kill+1, line, err)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		l, err := s.Get(ctx, "poison")
		if err != nil || l.Token == "" {
			t.Fatalf("after kill %d: %+v, %v: want the letter held by the dead redriver's claim", kill+1, l, err)
		}
		if l.Attempts != 3+kill || l.Redrives != kill {
			t.Fatalf("after kill %d, held: Attempts %d Redrives %d, want %d and %d (one per earlier killed redrive)", kill+1, l.Attempts, l.Redrives, 3+kill, kill)
		}
		// The lease ends: as if DefaultLease had passed.
		if _, err := pool.Exec(ctx, `UPDATE yaoki_dead_letters SET lease_end = now() - interval '1 second', due_at = now() - interval '1 second' WHERE id = 'poison'`); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: "killed", MaxRedrives: maxRedrives,
		Handler: func(context.Context, deadletter.Letter) error { ran++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RedriveAt(ctx, time.Now())
	if err != nil || ran != 0 || rep.Parked != 1 {
		t.Fatalf("pass after %d killed redrives: %+v, %v, handler ran %d times: want the letter parked, not run", maxRedrives, rep, err, ran)
	}
	l, err := s.Get(ctx, "poison")
	if err != nil || !l.Parked || l.Attempts != 3+maxRedrives || l.Redrives != maxRedrives || l.Reason != deadletter.ReasonRedrivesExhausted {
		t.Fatalf("the poison letter: %+v, %v: want parked, %d attempts, %d redrives, reason %q", l, err, 3+maxRedrives, maxRedrives, deadletter.ReasonRedrivesExhausted)
	}
}
