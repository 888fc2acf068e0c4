package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/postgres"
)

// TestFaultRedriveOutcomeLink: the link to PostgreSQL breaks once right
// after a handler succeeded, before its Done is stored: the redriver's
// single connection is ended by the server (pg_terminate_backend), the
// server restarts (fast shutdown, then up again on its port), or the reply to the Done that deleted the letter is lost (the proxy cuts the
// connection instead of passing it) or held (the connection left open and
// silent, as over a link that died without a reset). The redriver stores the outcome again
// on a new connection: the letter that succeeded is deleted, not left
// claimed to be redriven once more after its lease, and the pass goes on
// with the rest of its batch instead of leaving them held, to be counted
// later as redrives that ended with their lease though never started.
func TestFaultRedriveOutcomeLink(t *testing.T) {
	srv, direct := start(t)
	ctx := context.Background()
	proxy := faultproxy.New(t, srv.Addr)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, app string)
		// what the pass reports for the first letter, whose Done the
		// fault hits: done again, or found gone (it was deleted).
		done, leaseLost int
	}{
		{name: "session ended by the server", done: 3, fault: func(t *testing.T, app string) {
			var n int
			if err := direct.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil || n != 1 {
				t.Errorf("terminate the redriver's session: %d, %v: want one ended", n, err)
			}
		}},
		{name: "PostgreSQL restarted", done: 3, fault: func(t *testing.T, _ string) {
			direct.Reset() // its connections end with the server
			srv.Restart(t)
		}},
		{name: "reply to Done lost", done: 2, leaseLost: 1, fault: func(*testing.T, string) { proxy.DropNextReply() }},
		// The DELETE went through; its reply never comes, the connection
		// left open: the try ends at its own timeout, and the next finds
		// the letter gone.
		{name: "reply to Done held", done: 2, leaseLost: 1, fault: func(*testing.T, string) { proxy.HoldNextReply() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := fmt.Sprintf("outcome-%x", rand.Uint64())
			pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s", proxy.Addr, app), 1)
			s := postgres.NewDeadLetters(pool)
			queue := app
			for _, id := range []string{"a", "b", "c"} {
				if err := s.Put(ctx, letter(app+"-"+id, queue, t0)); err != nil {
					t.Fatal(err)
				}
			}
			// Done's statement is prepared on the one connection, so that
			// the reply dropped is that of the DELETE itself.
			if err := s.Done(ctx, "none", "none"); err == nil {
				t.Fatal("Done of no letter succeeded")
			}
			ran := map[string]int{}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: queue, Batch: 3,
				Handler: func(_ context.Context, l deadletter.Letter) error {
					ran[l.ID]++
					if l.ID == app+"-a" {
						tc.fault(t, app)
					}
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.RedriveAt(ctx, t0)
			if err != nil || rep.Claimed != 3 || rep.Done != tc.done || rep.LeaseLost != tc.leaseLost {
				t.Errorf("pass: %+v, %v: want 3 claimed, %d done, %d lease lost, no error", rep, err, tc.done, tc.leaseLost)
			}
			left, err := s.List(ctx, queue, "", 10)
			if err != nil || len(left) != 0 {
				t.Errorf("letters left after every handler succeeded: %s %v: want none", show(left...), err)
			}
			// A redriver after the lease finds nothing to redrive again.
			rep, err = r.RedriveAt(ctx, t0.Add(deadletter.DefaultLease+time.Second))
			if err != nil || rep.Claimed != 0 {
				t.Errorf("pass after the lease: %+v, %v: want nothing claimed", rep, err)
			}
			for id, n := range ran {
				if n != 1 {
					t.Errorf("letter %s run %d times, want once", id, n)
				}
			}
		})
	}
}
