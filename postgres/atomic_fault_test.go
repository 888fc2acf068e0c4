package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
)

// Environment of an Atomic child process (the test binary run again).
const (
	envAtomicChild = "YAOKI_ATOMIC_CHILD" // the DSN (set: run as a child)
	envAtomicPause = "YAOKI_ATOMIC_PAUSE" // the step to stop at, forever
	envAtomicHold  = "YAOKI_ATOMIC_HOLD"  // "1": hold a run until the process refused 3 duplicates
)

// atomicChildMain serves POST /charges through postgres.Atomic when the
// process was started as an Atomic child, and never returns then. The
// handler inserts a charge (key, pid) in the request's transaction and
// answers 201 {"charge":ID,"pid":PID}. At the step named by envAtomicPause
// ("claimed", "before-write", "after-write", "recorded", "committed") the
// request stops for good after printing "paused STEP", for the test to kill
// the process there.
func atomicChildMain() {
	idemproc.RunChild(envAtomicChild, "atomic child", func(dsn string) error {
		return serveAtomic(dsn, os.Getenv(envAtomicPause), os.Getenv(envAtomicHold) == "1")
	})
}

func serveAtomic(dsn, pause string, hold bool) error {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		return err
	}
	var refused atomic.Int64
	overlap := make(chan struct{})
	var overlapOnce sync.Once
	a, err := postgres.NewAtomic(pool, idempotency.Config{
		RetryAfter: -1, // "Retry-After: 0": the clients retry at once
		ErrorLog:   log.New(os.Stderr, "atomic child: ", 0),
		Observer: event.Func(func(_ context.Context, e event.Event) {
			if e.Kind == event.Conflict && e.Reason == idempotency.ReasonInProgress && refused.Add(1) >= 3 {
				overlapOnce.Do(func() { close(overlap) })
			}
		}),
	})
	if err != nil {
		return err
	}
	at := func(step string) {
		if step == pause {
			idemproc.Pause(step)
		}
	}
	postgres.SetAtomicStep(a, at)
	pid := os.Getpid()
	charge := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		_, _ = io.Copy(io.Discard, r.Body)
		at("before-write")
		var id int64
		err := postgres.Tx(ctx).QueryRow(ctx, `INSERT INTO charges (key, pid) VALUES ($1, $2) RETURNING id`,
			r.Header.Get("Idempotency-Key"), pid).Scan(&id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		at("after-write")
		if hold {
			select {
			case <-overlap:
			case <-time.After(10 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d,"pid":%d}`, id, pid)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charges", a.Require(http.HandlerFunc(charge)))
	return idemproc.Serve(mux)
}

// spawnAtomic starts an Atomic child whose connections carry the
// application name app.
func spawnAtomic(t *testing.T, dsn, app, pause string, hold bool) *idemproc.Child {
	t.Helper()
	h := "0"
	if hold {
		h = "1"
	}
	return idemproc.Spawn(t, envAtomicChild+"="+dsn+"&application_name="+app, envAtomicPause+"="+pause, envAtomicHold+"="+h)
}

// TestFaultAtomicKill kills the process (SIGKILL) that runs a request
// through postgres.Atomic at each step of the request, then sends the
// request again to a fresh process: exactly one charge is made in the
// handler's own table, and the answer is a new run when the process died
// before the commit, the replay of the killed process's response when it
// died after.
func TestFaultAtomicKill(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, chargesTable); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, step := range []string{"claimed", "before-write", "after-write", "recorded", "committed"} {
		t.Run("kill -9 at "+step, func(t *testing.T) {
			committed := step == "committed"
			key := step + "-" + rand.Text()
			body := `{"amount":1000}`
			app := "atomic-" + strings.ToLower(rand.Text())

			first := spawnAtomic(t, srv.DSN, app, step, false)
			lost := make(chan error, 1)
			go func() {
				_, _, _, err := first.Post(ctx, client, "/charges", key, body)
				lost <- err
			}()
			first.WaitLine(t, "paused "+step)
			// Before the commit, nothing of the request is visible to
			// others; after it, the charge and its record are.
			if got := charges(t, pool, key); got != map[bool]int{false: 0, true: 1}[committed] {
				t.Fatalf("paused at %s: %d charges visible", step, got)
			}
			if _, ok := record(t, pool, key); ok != committed {
				t.Fatalf("paused at %s: record visible %v, want %v", step, ok, committed)
			}
			first.Kill()
			if err := <-lost; err == nil {
				t.Fatal("the request to the killed process got an answer")
			}
			// PostgreSQL rolls back the open transaction when it sees the
			// connection close: wait until the killed process's sessions
			// are gone.
			idemproc.WaitFor(t, "the killed process's sessions to end", func() bool {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
				return err == nil && n == 0
			})

			second := spawnAtomic(t, srv.DSN, app+"-2", "", false)
			status, b, replayed, err := second.Post(ctx, client, "/charges", key, body)
			switch {
			case err != nil || status != http.StatusCreated:
				t.Fatalf("retry after the kill: %d %s %v, want 201", status, b, err)
			case committed && (replayed != "true" || !strings.Contains(b, fmt.Sprintf(`"pid":%d}`, first.Pid))):
				t.Fatalf("retry after a kill past the commit: %s replayed %q, want the replay of the killed process's (pid %d) response", b, replayed, first.Pid)
			case !committed && (replayed != "" || !strings.Contains(b, fmt.Sprintf(`"pid":%d}`, second.Pid))):
				t.Fatalf("retry after a kill before the commit: %s replayed %q, want a new run in pid %d", b, replayed, second.Pid)
			}
			status, b2, replayed, err := second.Post(ctx, client, "/charges", key, body)
			if err != nil || status != http.StatusCreated || replayed != "true" || b2 != b {
				t.Fatalf("second retry: %d %s replayed %q %v, want the replay of %s", status, b2, replayed, err, b)
			}
			var n, pid int
			if err := pool.QueryRow(ctx, `SELECT count(*), max(pid) FROM charges WHERE key = $1`, key).Scan(&n, &pid); err != nil || n != 1 {
				t.Fatalf("%d charges (%v), want exactly 1", n, err)
			}
			if want := map[bool]int{false: second.Pid, true: first.Pid}[committed]; pid != want {
				t.Fatalf("the charge was made by pid %d, want %d", pid, want)
			}
		})
	}
}

// TestFaultAtomicLink injects network and server faults at the end of a
// request run by postgres.Atomic, through a TCP proxy between its pool and
// PostgreSQL: the link cut before the COMMIT reaches the server, the
// COMMIT's reply lost after the server committed, and PostgreSQL restarted
// while the handler runs. The client is never told 201 for work that did
// not commit, and the retry makes exactly one charge, replaying the
// committed one when the COMMIT went through.
func TestFaultAtomicLink(t *testing.T) {
	srv, direct := start(t)
	ctx := context.Background()
	if _, err := direct.Exec(ctx, chargesTable); err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, srv.Addr)
	defer http.DefaultClient.CloseIdleConnections()

	for _, tc := range []struct {
		name, step string
		fault      func(t *testing.T)
		committed  bool // the fault leaves the request committed
		status     int  // what the first client gets
	}{
		{name: "link cut before COMMIT", step: "recorded", fault: func(*testing.T) { proxy.Down() }, status: 503},
		{name: "COMMIT's reply lost", step: "recorded", fault: func(*testing.T) { proxy.DropNextReply() }, committed: true, status: 503},
		{name: "PostgreSQL restarted during the handler", step: "claimed", fault: func(t *testing.T) {
			direct.Reset() // its connections end with the server
			srv.Restart(t)
		}, status: 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := "link-" + strings.ToLower(rand.Text())
			pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s", proxy.Addr, app), 4)
			a := newAtomic(t, pool, idempotency.Config{})
			key := "link-" + rand.Text()
			// The request stops at the step; the test injects the fault and
			// lets it go on.
			paused, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once
			postgres.SetAtomicStep(a, func(step string) {
				if step == tc.step {
					once.Do(func() { close(paused); <-resume })
				}
			})
			h := httptest.NewServer(a.Handler(http.HandlerFunc(charge)))
			defer h.Close()

			answered := make(chan answer, 1)
			go func() { answered <- post(t, h.URL, key, `{}`) }()
			<-paused
			tc.fault(t)
			close(resume)
			first := <-answered
			if first.status != tc.status || first.header.Get("X-Charge") != "" {
				t.Fatalf("first: %v %v, want %d without the handler's fields", first, first.header, tc.status)
			}
			proxy.Up()
			idemproc.WaitFor(t, "the broken sessions to end", func() bool {
				var n int
				err := direct.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, app).Scan(&n)
				return err == nil && n == 0
			})
			var charged string
			if err := direct.QueryRow(ctx, `SELECT coalesce(string_agg(id::text, ','), '') FROM charges WHERE key = $1`, key).Scan(&charged); err != nil {
				t.Fatal(err)
			}
			_, recorded := record(t, direct, key)
			if recorded != tc.committed || (charged != "") != tc.committed {
				t.Fatalf("after the fault: charges %q, record %v; want both or neither (committed %v)", charged, recorded, tc.committed)
			}
			retry := post(t, h.URL, key, `{}`)
			switch {
			case retry.status != 201:
				t.Fatalf("retry: %v, want 201", retry)
			case tc.committed && (retry.header.Get("Idempotent-Replayed") != "true" || retry.body != `{"charge":`+charged+`}`):
				t.Fatalf("retry: %v replayed %q, want the replay of charge %s", retry, retry.header.Get("Idempotent-Replayed"), charged)
			case !tc.committed && retry.header.Get("Idempotent-Replayed") != "":
				t.Fatalf("retry: %v replayed, want a new run", retry)
			}
			if n := charges(t, direct, key); n != 1 {
				t.Fatalf("%d charges, want exactly 1", n)
			}
		})
	}
}

// TestAtomicConcurrentProcesses: 100 clients send one POST with one key at
// once to two processes running postgres.Atomic on the same database, each
// client through an httpretry client that retries 409 at once. The first
// run is held until its process has refused three duplicates, so that the
// requests overlap. One charge is made, every client ends with its
// response, and only one response is not a replay.
func TestAtomicConcurrentProcesses(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, chargesTable); err != nil {
		t.Fatal(err)
	}
	children := []*idemproc.Child{
		spawnAtomic(t, srv.DSN, "concurrent-a", "", true),
		spawnAtomic(t, srv.DSN, "concurrent-b", "", true),
	}
	const n = 100
	key := "concurrent-" + rand.Text()
	results := idemproc.SendAtOnce(n, func(i int) string { return children[i%2].URL + "/charges" }, key, []byte(`{"amount":1}`), nil)
	plain := 0
	for i, r := range results {
		switch {
		case r.Err != nil || r.Status != http.StatusCreated || r.Body != results[0].Body:
			t.Fatalf("client %d: %d %s %v; client 0: %s; want 201 and the same body for all", i, r.Status, r.Body, r.Err, results[0].Body)
		case r.Replayed == "":
			plain++
		}
	}
	if got := charges(t, pool, key); got != 1 || plain != 1 {
		t.Fatalf("%d charges, %d responses not replayed; want 1 and 1", got, plain)
	}
}
