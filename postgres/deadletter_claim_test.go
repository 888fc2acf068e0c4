package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/postgres"
)

// TestFaultClaimReplyLost: the reply to a redriver's Claim is lost (the
// proxy cuts the connection instead of passing it) after the UPDATE that
// claimed two letters ran. The store finds the letters its claim took,
// by the claim's token, on a new connection: the pass redrives them, where
// they would have stayed held by a claim nobody knew of, to be counted,
// when its lease ended, as redrives that ended with it though never
// started.
func TestFaultClaimReplyLost(t *testing.T) {
	srv, _ := start(t)
	ctx := context.Background()
	proxy := faultproxy.New(t, srv.Addr)
	queue := fmt.Sprintf("claim-%x", rand.Uint64())
	pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", proxy.Addr), 1)
	s := postgres.NewDeadLetters(pool)
	for _, id := range []string{"a", "b"} {
		if err := s.Put(ctx, letter(queue+"-"+id, queue, t0)); err != nil {
			t.Fatal(err)
		}
	}
	// Claim's statement is prepared on the one connection, so that the
	// reply dropped is that of the UPDATE itself.
	if _, err := s.Claim(ctx, queue+"-none", t0, 1, deadletter.DefaultLease); err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: queue,
		Handler: func(_ context.Context, l deadletter.Letter) error { ran[l.ID]++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	proxy.DropNextReply()
	rep, err := r.RedriveAt(ctx, t0)
	if err != nil || rep != (deadletter.Report{Claimed: 2, Done: 2}) {
		t.Errorf("pass whose claim's reply was lost: %+v, %v: want both letters claimed and done", rep, err)
	}
	left, err := s.List(ctx, queue, "", 10)
	if err != nil || len(left) != 0 {
		t.Errorf("letters left: %s %v: want none", show(left...), err)
	}
	for _, id := range []string{"a", "b"} {
		if n := ran[queue+"-"+id]; n != 1 {
			t.Errorf("letter %s run %d times, want once", id, n)
		}
	}
}
