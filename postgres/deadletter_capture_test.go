package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/postgres"
)

// TestFaultCaptureStoreDown: work is captured while PostgreSQL cannot be
// reached (the link down), and while the reply to the INSERT that stored
// it is lost. Each time Capture says so and hands the letter back, ID
// included; the caller's second Capture of that letter stores it, or finds
// it stored: one letter per piece of work, none lost, none twice.
func TestFaultCaptureStoreDown(t *testing.T) {
	srv, _ := start(t)
	ctx := context.Background()
	proxy := faultproxy.New(t, srv.Addr)
	queue := fmt.Sprintf("capture-%x", rand.Uint64())
	pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", proxy.Addr), 1)
	s := postgres.NewDeadLetters(pool)
	cause := errors.New("partner: 503 Service Unavailable")

	capture := func(l deadletter.Letter) (deadletter.Letter, error) {
		return deadletter.Capture(ctx, s, l, cause, t0)
	}
	proxy.Down()
	down, err := capture(deadletter.Letter{Queue: queue, Key: "k-down", Payload: []byte("charge 1")})
	if err == nil || down.ID == "" || string(down.Payload) != "charge 1" || down.Error != cause.Error() {
		t.Fatalf("Capture with the store down: %+v, %v; want an error and the letter in hand", down, err)
	}
	proxy.Up()
	if _, err := capture(down); err != nil {
		t.Fatalf("Capture again once the store is back: %v", err)
	}

	proxy.DropNextReply() // the INSERT runs; its reply never comes
	lost, err := capture(deadletter.Letter{Queue: queue, Key: "k-lost", Payload: []byte("charge 2")})
	if err == nil || lost.ID == "" {
		t.Fatalf("Capture whose reply was lost: %+v, %v; want an error and the letter in hand", lost, err)
	}
	if _, err := capture(lost); err != nil {
		t.Fatalf("Capture again after the lost reply: %v; want nil (the same work is stored)", err)
	}

	got, err := s.List(ctx, queue, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, l := range got {
		keys[l.ID] = l.Key
	}
	if len(got) != 2 || keys[down.ID] != "k-down" || keys[lost.ID] != "k-lost" {
		t.Fatalf("letters stored: %s; want two, %s (k-down) and %s (k-lost)", show(got...), down.ID, lost.ID)
	}
}
