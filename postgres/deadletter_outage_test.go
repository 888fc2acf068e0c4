package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/postgres"
)

// upAfter is a database handle that brings the link back (up) once its
// statements have failed n times: an outage that lasts as many tries.
type upAfter struct {
	postgres.DB
	n     int32
	fails atomic.Int32
	up    func()
}

func (d *upAfter) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.DB.Exec(ctx, sql, args...)
	if err != nil && d.fails.Add(1) == d.n {
		d.up()
	}
	return tag, err
}

// TestFaultRedriveOutcomeOutage: the link to PostgreSQL goes down right
// after the first letter's handler succeeded, and stays down for three
// tries to store its outcome (a failover, a restart that takes a moment).
// The redriver keeps trying, with short waits, within StoreTimeout: the
// letter is deleted, not left claimed to be redriven a second time after
// its lease, and the two letters after it are redriven in the same pass
// instead of being left held, to be counted as redrives that ended with
// their lease though never started.
func TestFaultRedriveOutcomeOutage(t *testing.T) {
	srv, _ := start(t)
	ctx := context.Background()
	proxy := faultproxy.New(t, srv.Addr)
	app := fmt.Sprintf("outage-%x", rand.Uint64())
	pool := newPool(t, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s", proxy.Addr, app), 1)
	db := &upAfter{DB: pool, n: 3, up: proxy.Up}
	s := postgres.NewDeadLetters(db)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Put(ctx, letter(id, app, t0)); err != nil {
			t.Fatal(err)
		}
	}
	ran := map[string]int{}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: s, Queue: app, Batch: 3,
		Handler: func(_ context.Context, l deadletter.Letter) error {
			ran[l.ID]++
			if l.ID == "a" {
				proxy.Down()
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RedriveAt(ctx, t0)
	if err != nil || rep != (deadletter.Report{Claimed: 3, Done: 3}) {
		t.Errorf("pass: %+v, %v: want 3 claimed, 3 done, no error", rep, err)
	}
	if n := db.fails.Load(); n < 3 {
		t.Errorf("%d statements failed, want the outage to take 3", n)
	}
	rep, err = r.RedriveAt(ctx, t0.Add(deadletter.DefaultLease+time.Second))
	if err != nil || rep.Claimed != 0 {
		t.Errorf("pass after the lease: %+v, %v: want nothing claimed", rep, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if ran[id] != 1 {
			t.Errorf("letter %s run %d times, want once", id, ran[id])
		}
	}
}
