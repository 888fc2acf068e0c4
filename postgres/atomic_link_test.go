package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
)

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
	proxy := faultproxy.New(t, "127.0.0.1:"+strconv.Itoa(srv.Port))
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
