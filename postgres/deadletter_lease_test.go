package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/retry"
)

// TestFaultRedriveLeaseExpiry: two redrivers, each over its own pool (two
// processes), Batch 5 and 1, Lease 600 ms, serve ten letters whose handler
// takes 400 ms. A pass of five letters outlives its lease (the fault: lease
// expiry while the batch is handled): the redriver must not start a letter
// whose lease has ended, since the other may have claimed it, and cuts a
// handler at its lease end. Each letter's work is done once.
//
// The handlers run on the real clock, so a handler cut at its lease end
// returns a little after it, and the other redriver may claim the letter
// at that moment: runs of one letter may meet within slack (100 ms, room
// for a loaded machine to wake a goroutine late), no more; a handler that
// is not cut overlaps the next run by 200 ms or more. A letter started at
// or after its lease end fails the test however little late, and so does a
// handler whose context has no deadline or one past its lease end by more
// than slack (the redriver counts the lease from its pass's start on the
// monotonic clock, microseconds after the claim's instant).
func TestFaultRedriveLeaseExpiry(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	const n = 10
	for i := range n {
		if err := postgres.NewDeadLetters(pool).Put(ctx, letter(fmt.Sprintf("l%d", i), "q", time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	const (
		work  = 400 * time.Millisecond
		lease = 600 * time.Millisecond
		slack = 100 * time.Millisecond
	)
	type run struct{ start, end time.Time }
	var (
		mu        sync.Mutex
		runs      = map[string][]run{}
		completed = map[string]int{}
		late      []string // started after its lease end
		overrun   []string // no deadline, or one after its lease end (by more than slack)
	)
	allDone := make(chan struct{})
	handler := func(ctx context.Context, l deadletter.Letter) error {
		start := time.Now()
		defer func() {
			end := time.Now()
			mu.Lock()
			runs[l.ID] = append(runs[l.ID], run{start, end})
			mu.Unlock()
		}()
		if dl, ok := ctx.Deadline(); !ok || dl.Sub(l.LeaseEnd) > slack {
			mu.Lock()
			overrun = append(overrun, fmt.Sprintf("%s: deadline %v (set: %v), lease end %v", l.ID, dl.Format(".000"), ok, l.LeaseEnd.Format(".000")))
			mu.Unlock()
		}
		if !start.Before(l.LeaseEnd) {
			mu.Lock()
			late = append(late, fmt.Sprintf("%s by %v", l.ID, start.Sub(l.LeaseEnd)))
			mu.Unlock()
		}
		timer := time.NewTimer(work)
		defer timer.Stop()
		select {
		case <-timer.C:
			mu.Lock()
			completed[l.ID]++
			if len(completed) == n && completed[l.ID] == 1 {
				close(allDone)
			}
			mu.Unlock()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, batch := range []int{5, 1} {
		r, err := deadletter.NewRedriver(deadletter.Config{Store: postgres.NewDeadLetters(newPool(t, srv.DSN, 2)),
			Queue: "q", Handler: handler, Batch: batch, Lease: lease, Interval: 50 * time.Millisecond,
			MaxRedrives: retry.Unlimited, Backoff: backoff.Schedule{Base: time.Millisecond, Cap: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = r.Run(rctx) })
	}
	select {
	case <-allDone:
	case <-time.After(30 * time.Second):
		t.Error("after 30 s, not every letter's work was done")
	}
	// The passes in hand end: a duplicate run still going is cut and
	// recorded.
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var overlaps []string
	for id, rs := range runs {
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				if a.start.Add(slack).Before(b.end) && b.start.Add(slack).Before(a.end) {
					overlaps = append(overlaps, fmt.Sprintf("%s: %v–%v and %v–%v", id, a.start.Format(".000"), a.end.Format(".000"), b.start.Format(".000"), b.end.Format(".000")))
				}
			}
		}
	}
	if len(overlaps) > 0 || len(late) > 0 || len(overrun) > 0 {
		t.Errorf("letters in two handlers at once: %v; started after their lease end: %v; allowed to run past it: %v", overlaps, late, overrun)
	}
	for i := range n {
		if id := fmt.Sprintf("l%d", i); completed[id] != 1 {
			t.Errorf("%s's work done %d times, want 1", id, completed[id])
		}
	}
	if c, err := postgres.NewDeadLetters(pool).Count(ctx, "q", time.Now()); err != nil || c.Total() != 0 {
		t.Errorf("left: %+v %v, want every letter redriven and deleted", c, err)
	}
}
