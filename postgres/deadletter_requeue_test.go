package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres"
)

// TestRequeueUnheld: RequeueUnheld leaves a letter whose claim's lease runs
// past now as it is, naming the claim, and requeues it as Requeue does
// otherwise: unclaimed, or claimed by a lease that ended (its redriver was
// killed).
func TestRequeueUnheld(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	s := postgres.NewDeadLetters(pool)
	for _, id := range []string{"held", "free", "ended"} {
		l := letter(id, "q-"+id, t0)
		l.Redrives, l.Parked = 4, id == "free"
		if err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	held, err := s.Claim(ctx, "q-held", t0, 1, time.Minute)
	if err != nil || len(held) != 1 {
		t.Fatalf("claim: %v, %v", held, err)
	}
	if ended, err := s.Claim(ctx, "q-ended", t0, 1, time.Second); err != nil || len(ended) != 1 {
		t.Fatalf("claim: %v, %v", ended, err)
	}
	now, due := t0.Add(30*time.Second), t0.Add(time.Hour)

	err = s.RequeueUnheld(ctx, "held", due, now)
	var he *postgres.HeldError
	if !errors.Is(err, postgres.ErrHeld) || !errors.As(err, &he) || he.Token != held[0].Token || !he.LeaseEnd.Equal(t0.Add(time.Minute)) || he.ID != "held" {
		t.Fatalf("RequeueUnheld of a held letter: %v (%+v); want a HeldError with token %s until %v", err, he, held[0].Token, t0.Add(time.Minute))
	}
	if l, _ := s.Get(ctx, "held"); l.Token != held[0].Token || l.Redrives != 4 || !l.Due.Equal(t0) {
		t.Errorf("the held letter changed: %s", show(l))
	}
	// Its holder still stores its outcome.
	if err := s.Done(ctx, "held", held[0].Token); err != nil {
		t.Errorf("Done by the holder after a refused requeue: %v", err)
	}
	for _, id := range []string{"free", "ended"} {
		if err := s.RequeueUnheld(ctx, id, due, now); err != nil {
			t.Fatalf("RequeueUnheld(%s): %v", id, err)
		}
		l, _ := s.Get(ctx, id)
		if l.Token != "" || l.Parked || l.Redrives != 0 || !l.Due.Equal(due) {
			t.Errorf("%s after RequeueUnheld: %s; want unclaimed, unparked, 0 redrives, due %v", id, show(l), due)
		}
	}
	for _, id := range []string{"held", "nope", "bad\x00id"} {
		if err := s.RequeueUnheld(ctx, id, due, now); !errors.Is(err, deadletter.ErrNotFound) {
			t.Errorf("RequeueUnheld(%q) of no letter: %v; want ErrNotFound", id, err)
		}
	}
}

// TestRequeueUnheldRacesClaims: a claim and a RequeueUnheld of one letter,
// from two pools (two processes), 100 times: whichever goes first, a
// claim that got the letter still holds it afterwards, so its holder can
// store its outcome. Requeue, which reads nothing, frees it whenever it
// comes second.
func TestRequeueUnheldRacesClaims(t *testing.T) {
	srv, pool := start(t)
	other := newPool(t, srv.DSN, 2)
	ctx := context.Background()
	claimer, operator := postgres.NewDeadLetters(pool), postgres.NewDeadLetters(other)
	now := time.Now()
	refused := 0
	for i := range 100 {
		id, q := fmt.Sprintf("r%03d", i), fmt.Sprintf("q%03d", i)
		if err := claimer.Put(ctx, letter(id, q, now.Add(-time.Minute))); err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			claimed []deadletter.Letter
			cerr    error
			rerr    error
		)
		wg.Add(2)
		go func() { defer wg.Done(); claimed, cerr = claimer.Claim(ctx, q, now, 1, time.Hour) }()
		go func() { defer wg.Done(); rerr = operator.RequeueUnheld(ctx, id, now, now) }()
		wg.Wait()
		if cerr != nil || rerr != nil && !errors.Is(rerr, postgres.ErrHeld) {
			t.Fatalf("%s: claim %v, requeue %v", id, cerr, rerr)
		}
		if rerr != nil {
			refused++
		}
		if len(claimed) == 1 {
			if err := claimer.Done(ctx, id, claimed[0].Token); err != nil {
				t.Fatalf("%s: the claim that took it cannot store its outcome (requeue: %v): %v", id, rerr, err)
			}
		} else if rerr != nil {
			t.Fatalf("%s: requeue refused (%v) but no claim holds the letter", id, rerr)
		}
	}
	t.Logf("requeues refused: %d of 100", refused)
}
