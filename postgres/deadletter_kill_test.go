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

// envRedriveChildBatch, set, makes the child serve queue "killed-batch"
// with batches of 5, its handler hanging only on the letter "poison".
const envRedriveChildBatch = "YAOKI_TEST_REDRIVE_CHILD_BATCH"

// deadLetterChildMain, in a binary started with envRedriveChild, makes one
// redrive pass of queue "killed" whose handler says "started ID" on stdout
// and then hangs, waiting to be killed; it never returns. With
// envRedriveChildBatch, the pass is over queue "killed-batch", 5 letters at
// a time, and the handler hangs on "poison" only: another letter it
// redrives at once (saying "started ID").
func deadLetterChildMain() {
	dsn := os.Getenv(envRedriveChild)
	if dsn == "" {
		return
	}
	queue, batch := "killed", 1
	if os.Getenv(envRedriveChildBatch) != "" {
		queue, batch = "killed-batch", 5
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err == nil {
		var r *deadletter.Redriver
		r, err = deadletter.NewRedriver(deadletter.Config{Store: postgres.NewDeadLetters(pool), Queue: queue, Batch: batch,
			Handler: func(ctx context.Context, l deadletter.Letter) error {
				fmt.Println("started", l.ID)
				if batch > 1 && l.ID != "poison" {
					return nil
				}
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

// TestFaultPoisonLetterKillsItsRedriver: a poison letter, first of a batch
// of five, takes its redriver process down (SIGKILL) each time it runs,
// three times. The four letters claimed with it are counted by the first
// kill only: then the poison letter runs alone, the others let go before
// it starts. A redriver with MaxRedrives 3 parks the poison letter
// without running it and redrives the four, once each.
func TestFaultPoisonLetterKillsItsRedriver(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	s := postgres.NewDeadLetters(pool)
	others := []string{"b", "c", "d", "e"}
	if err := s.Put(ctx, letter("poison", "killed-batch", time.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	for _, id := range others {
		if err := s.Put(ctx, letter(id, "killed-batch", time.Now().Add(-time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	const maxRedrives = 3
	for kill := range maxRedrives {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), envRedriveChild+"="+srv.DSN, envRedriveChildBatch+"=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var started []string
		for r := bufio.NewReader(out); ; {
			line, err := r.ReadString('\n')
			if err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("redriver %d: started %v, then %v: want it to start the poison letter", kill+1, started, err)
			}
			started = append(started, strings.TrimPrefix(strings.TrimSpace(line), "started "))
			if started[len(started)-1] == "poison" {
				break
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if len(started) != 1 {
			t.Fatalf("redriver %d started %v, want the poison letter first", kill+1, started)
		}
		// The dead redriver's leases end: as if DefaultLease had passed.
		if _, err := pool.Exec(ctx, `UPDATE yaoki_dead_letters SET lease_end = now() - interval '1 second' WHERE queue = 'killed-batch' AND token IS NOT NULL`); err != nil {
			t.Fatal(err)
		}
	}
	ran := map[string]int{}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: "killed-batch", Batch: 5, MaxRedrives: maxRedrives,
		Handler: func(_ context.Context, l deadletter.Letter) error { ran[l.ID]++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 10; pass++ {
		rep, err := r.RedriveAt(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Claimed == 0 {
			break
		}
	}
	if ran["poison"] != 0 {
		t.Errorf("the poison letter ran %d times after %d kills, want none (parked)", ran["poison"], maxRedrives)
	}
	if l, err := s.Get(ctx, "poison"); err != nil || !l.Parked || l.Redrives != maxRedrives || l.Reason != deadletter.ReasonRedrivesExhausted {
		t.Errorf("the poison letter: %+v, %v: want parked after %d redrives, reason %q", l, err, maxRedrives, deadletter.ReasonRedrivesExhausted)
	}
	for _, id := range others {
		if l, err := s.Get(ctx, id); err == nil || ran[id] != 1 {
			t.Errorf("letter %s: ran %d times, left %+v (%v); want it redriven once and deleted", id, ran[id], l, err)
		}
	}
}
