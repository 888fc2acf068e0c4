package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// TestDeadLetterRedriveInterrupted: the fault is SIGTERM to redrive --once
// between sending a letter's request and storing its outcome (the server
// has the request and has not answered). The command cuts the request and
// exits 143 (128+SIGTERM) saying so; the letter stays held by its claim until the lease
// ends, since the server may have done the work: list shows it held and
// requeue refuses it. An operator who knows the redriver is gone requeues it
// with --force, and the next redrive sends it with the same
// Idempotency-Key, so that a server honouring keys does the work once.
func TestDeadLetterRedriveInterrupted(t *testing.T) {
	srv := pgtest.Start(t)
	db := newDB(t, srv, "redriveterm", true)
	var (
		mu   sync.Mutex
		keys []string
	)
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // then net/http sees the client go
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		arrived <- struct{}{}
		if first {
			select {
			case <-release:
			case <-r.Context().Done(): // the redriver cut it
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	defer close(release)
	req, _ := http.NewRequest(http.MethodPost, target.URL+"/charges", strings.NewReader(`{"order":7}`))
	req.Header.Set("Idempotency-Key", "order-7")
	l, err := httpletter.Letter("charges", req)
	if err != nil {
		t.Fatal(err)
	}
	l.ID, l.Due = "t1", time.Now().Add(-time.Second)
	db.put(t, l)

	s := startYaoki(t, "deadletter", "redrive", "--queue", "charges", "--once", "--lease", "5m", "-v", "--postgres", db.dsn)
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("no request within 20 s")
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 143 {
		t.Errorf("redrive --once stopped by SIGTERM mid-request: exit %d, want 143 (128+SIGTERM)", code)
	}
	if log := strings.Join(s.lines(), "\n"); !strings.Contains(log, "interrupted") || !strings.Contains(log, "claimed again when its lease ends") {
		t.Errorf("stderr does not say the redrive was interrupted and what becomes of the letter:\n%s", log)
	}
	got, _ := db.get(t, "t1")
	if got.Token == "" || time.Until(got.LeaseEnd) < 4*time.Minute || got.Redrives != 0 {
		t.Fatalf("t1 after the interrupted redrive: %+v; want still held by its claim, no redrive counted yet", got)
	}
	r := run(t, db.env, "deadletter", "list", "--json")
	if ls := parseLines(t, r.stdout); len(ls) != 1 || ls[0].State != "held" {
		t.Errorf("list after the interrupted redrive: %+v; want t1 held", ls)
	}
	if r = run(t, db.env, "deadletter", "requeue", "t1"); r.code != 1 || !strings.Contains(r.stderr, "held by a redriver") {
		t.Errorf("requeue: exit %d, %q; want 1, the letter held", r.code, r.stderr)
	}
	if r = run(t, db.env, "deadletter", "requeue", "--force", "t1"); r.code != 0 {
		t.Fatalf("requeue --force: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, db.env, "deadletter", "redrive", "--queue", "charges", "--once")
	if r.code != 0 || r.stdout != "claimed 1, done 1, failed 0, parked 0, lease lost 0\n" {
		t.Fatalf("redrive after requeue --force: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != "order-7" || keys[1] != "order-7" {
		t.Errorf("the server got the keys %q; want order-7 twice (cut, then redriven)", keys)
	}
}
