package idemproc

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// LeaseAfterKill shows that a process that dies while it holds a key does
// not block the key for longer than the lease. A child holds a key in a
// handler that never finishes and is killed (SIGKILL: it releases nothing);
// a second child, whose clock is within the lease, is refused with 409; a
// third, whose clock is past the lease, runs the handler; and the second
// then replays the third's response. store is the test's own view of the
// store at addr, used to see when the first child holds the key.
func LeaseAfterKill(t *testing.T, store idempotency.Store, addr string) {
	const lease = 5 * time.Second
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	key := "lease-" + rand.Text()
	body := `{"amount":1}`

	holder := Start(t, Options{Addr: addr, Lease: lease, Hang: true})
	hung := make(chan error, 1)
	go func() {
		_, _, _, err := holder.Post(ctx, client, "/hang", key, body)
		hung <- err
	}()
	WaitFor(t, "the first child to hold the key", func() bool {
		rec, ok, err := store.Get(ctx, idempotency.ID{Key: key}, time.Now())
		return err == nil && ok && rec.State == idempotency.InProgress
	})
	holder.Kill()
	if err := <-hung; err == nil {
		t.Fatal("the request to the killed child got an answer")
	}

	within := Start(t, Options{Addr: addr, Lease: lease})
	status, b, _, err := within.Post(ctx, client, "/hang", key, body)
	if err != nil || status != http.StatusConflict || !strings.Contains(b, idempotency.ReasonInProgress) {
		t.Fatalf("within the lease of the killed holder: %d %s %v, want 409 in_progress", status, b, err)
	}

	after := Start(t, Options{Addr: addr, Lease: lease, ClockOffset: lease + time.Second})
	status, b, replayed, err := after.Post(ctx, client, "/hang", key, body)
	if err != nil || status != http.StatusCreated || replayed != "" || !strings.Contains(b, fmt.Sprintf(`"pid":%d`, after.Pid)) {
		t.Fatalf("after the lease: %d %s replayed %q %v, want 201 from a new run in pid %d", status, b, replayed, err, after.Pid)
	}
	status, b2, replayed, err := within.Post(ctx, client, "/hang", key, body)
	if err != nil || status != http.StatusCreated || replayed != "true" || b2 != b {
		t.Fatalf("then: %d %s replayed %q %v, want the replay of %s", status, b2, replayed, err, b)
	}
}

// SurvivesRestart shows that a record outlives the process that wrote it:
// a child executes a request and is killed, restart (if not nil) restarts
// the store's server, and a new child replays the first one's response.
func SurvivesRestart(t *testing.T, addr string, restart func(t *testing.T)) {
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	key := "durable-" + rand.Text()
	body := `{"amount":1000}`

	first := Start(t, Options{Addr: addr})
	status, b, _, err := first.Post(ctx, client, "/charges", key, body)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("first: %d %s %v", status, b, err)
	}
	first.Kill()
	client.CloseIdleConnections()
	if restart != nil {
		restart(t)
	}
	second := Start(t, Options{Addr: addr})
	status, b2, replayed, err := second.Post(ctx, client, "/charges", key, body)
	if err != nil || status != http.StatusCreated || replayed != "true" || b2 != b || !strings.Contains(b2, fmt.Sprintf(`"pid":%d`, first.Pid)) {
		t.Fatalf("after the restart: %d %s replayed %q %v; want the replay of %s written by pid %d", status, b2, replayed, err, b, first.Pid)
	}
}
