package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// TestDeadLetterRequeueHeld: a redriver (the binary, its own process)
// holds a letter, its request in flight at a server that answers only when
// the test releases it. requeue refuses the held letter (exit 1, naming the
// claim and --force), so that a second redriver claims nothing and the
// request is sent once; the holder then stores its outcome (the letter
// deleted). requeue --force of a held letter frees it: the second redriver
// sends it again, and the holder's outcome is lost (lease lost).
func TestDeadLetterRequeueHeld(t *testing.T) {
	srv := pgtest.Start(t)
	db := newDB(t, srv, "requeueheld", true)
	var (
		mu      sync.Mutex
		sent    = map[string]int{} // requests per Idempotency-Key
		arrived = make(chan string, 10)
		// The first request of each key is in flight until its channel
		// is closed.
		release = map[string]chan struct{}{"key-c1": make(chan struct{}), "key-c2": make(chan struct{})}
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		sent[key]++
		first := sent[key] == 1
		mu.Unlock()
		arrived <- key
		if first {
			<-release[key]
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer target.Close()
	released := map[string]bool{} // the test's goroutine only
	unblock := func(key string) {
		if !released[key] {
			close(release[key])
			released[key] = true
		}
	}
	defer func() {
		for key := range release {
			unblock(key)
		}
	}()
	sentTo := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return sent[key]
	}
	put := func(id string) {
		req, _ := http.NewRequest(http.MethodPost, target.URL+"/charges", strings.NewReader(`{"order":"`+id+`"}`))
		req.Header.Set("Idempotency-Key", "key-"+id)
		l, err := httpletter.Letter("charges", req)
		if err != nil {
			t.Fatal(err)
		}
		l.ID, l.Due = id, time.Now().Add(-time.Second)
		db.put(t, l)
	}
	waitArrived := func(key string) {
		t.Helper()
		select {
		case k := <-arrived:
			if k != key {
				t.Fatalf("the server got %s, want %s", k, key)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no request of %s within 20 s", key)
		}
	}

	put("c1")
	holder := startYaoki(t, "deadletter", "redrive", "--queue", "charges", "--interval", "50ms", "--lease", "5m", "-v", "--postgres", db.dsn)
	waitArrived("key-c1")

	r := run(t, db.env, "deadletter", "requeue", "c1")
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("requeue of a held letter: exit %d, stdout %q, stderr %q; want exit 1, nothing requeued", r.code, r.stdout, r.stderr)
	}
	l, _ := db.get(t, "c1")
	r.wantStderr(t, "letter c1 is held by a redriver (claim "+l.Token+") until "+l.LeaseEnd.Format(time.RFC3339Nano), "--force")
	if l.Token == "" || time.Until(l.LeaseEnd) < 4*time.Minute {
		t.Fatalf("c1 after the refused requeue: %+v; want still held", l)
	}
	r = run(t, db.env, "deadletter", "redrive", "--queue", "charges", "--once")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "claimed 0,") {
		t.Fatalf("a second redriver: exit %d, stdout %q, stderr %q; want nothing claimed", r.code, r.stdout, r.stderr)
	}
	unblock("key-c1")
	if !poll(20*time.Second, 20*time.Millisecond, func() bool { _, found := db.get(t, "c1"); return !found }) {
		t.Fatalf("c1 not deleted by its holder after its 201:\n%s", strings.Join(holder.lines(), "\n"))
	}
	if n := sentTo("key-c1"); n != 1 {
		t.Errorf("c1 was sent %d times, want 1", n)
	}

	// --force: the holder's claim is ended, and another redriver sends the
	// letter again while the holder's request is in flight.
	put("c2")
	waitArrived("key-c2")
	r = run(t, db.env, "deadletter", "requeue", "--force", "c2")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "requeued c2, due ") {
		t.Fatalf("requeue --force of a held letter: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, db.env, "deadletter", "redrive", "--queue", "charges", "--once")
	if r.code != 0 || r.stdout != "claimed 1, done 1, failed 0, parked 0, lease lost 0\n" {
		t.Fatalf("a second redriver after --force: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	waitArrived("key-c2")
	unblock("key-c2")
	holder.waitLine(t, "lease lost 1")
	if n := sentTo("key-c2"); n != 2 {
		t.Errorf("c2, requeued with --force while held, was sent %d times, want 2", n)
	}
	if n, err := db.store.Count(context.Background(), "", time.Now()); err != nil || n != (deadletter.Counts{}) {
		t.Errorf("letters left: %+v, %v", n, err)
	}
	holder.stop()
}
