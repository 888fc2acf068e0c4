package deadlettertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
)

// The behaviours of Claim and of what ends a claim: Done, Fail, Requeue and
// the lease.

func testClaimOrder(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	other, _ := c.names(t)
	other += " other"
	t0 := c.t0
	put(t, s, c.letter(q, p+"c", t0))
	put(t, s, c.letter(q, p+"b", t0.Add(-time.Second)))
	put(t, s, c.letter(q, p+"a", t0)) // same Due as c: ID order
	put(t, s, c.letter(q, p+"later", t0.Add(time.Second)))
	parked := c.letter(q, p+"parked", t0.Add(-time.Hour))
	parked.Parked = true
	put(t, s, parked)
	put(t, s, c.letter(other, p+"elsewhere", t0.Add(-time.Hour)))

	got := claim(t, s, q, t0, 2)
	if want := []string{p + "b", p + "a"}; !slices.Equal(ids(got), want) {
		t.Fatalf("Claim(max 2) at t0: %q, want %q", ids(got), want)
	}
	if got[0].Token == "" || got[0].Token == got[1].Token {
		t.Fatalf("tokens %q and %q: want two distinct non-empty tokens", got[0].Token, got[1].Token)
	}
	for _, l := range got {
		if !l.LeaseEnd.Equal(t0.Add(Lease)) {
			t.Fatalf("LeaseEnd %v, want now+lease %v", l.LeaseEnd, t0.Add(Lease))
		}
		if l.Payload == nil || l.Key != "key-"+l.ID || l.Attempts != 3 || !l.Created.Equal(t0.Add(-time.Hour)) {
			t.Fatalf("claimed letter lost its fields: %+v", l)
		}
	}
	if got := claim(t, s, q, t0, 10); !slices.Equal(ids(got), []string{p + "c"}) {
		t.Fatalf("second Claim at t0: %q, want only %q (the others are held, later, parked or elsewhere)", ids(got), p+"c")
	}
	if got := claim(t, s, q, t0, 10); len(got) != 0 {
		t.Fatalf("third Claim at t0: %q, want none", ids(got))
	}
	if got := claim(t, s, q, t0.Add(time.Second), 10); !slices.Equal(ids(got), []string{p + "later"}) {
		t.Fatalf("Claim at t0+1s: %q, want %q", ids(got), p+"later")
	}
	h, err := s.Get(t.Context(), p+"a")
	if err != nil || h.Token != got[1].Token || !h.LeaseEnd.Equal(t0.Add(Lease)) {
		t.Fatalf("Get of a held letter: %+v, %v: want its claim's token", h, err)
	}
}

func testLeaseEnds(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	t0 := c.t0
	first := c.held(t, s, q, p)
	if got := claim(t, s, q, t0.Add(Lease-time.Second), 1); len(got) != 0 {
		t.Fatalf("Claim before the lease ended: %q, want none", ids(got))
	}
	second := claim(t, s, q, t0.Add(Lease), 1)
	if len(second) != 1 || second[0].Token == first.Token {
		t.Fatalf("Claim when the lease ended: %+v, want the letter with a new token", second)
	}
	// The first claim ended with its lease, no outcome stored (its
	// redriver died, or its handler outlived the lease): it counts as a
	// failed redrive that made an attempt.
	if l := second[0]; l.Attempts != first.Attempts+1 || l.Redrives != first.Redrives+1 || l.Reason != deadletter.ReasonLeaseEnded || l.Error != first.Error {
		t.Fatalf("Claim after a claim that ended with its lease: Attempts %d Redrives %d Reason %q Error %q, want %d, %d, %q, %q",
			l.Attempts, l.Redrives, l.Reason, l.Error, first.Attempts+1, first.Redrives+1, deadletter.ReasonLeaseEnded, first.Error)
	}
	if g, err := s.Get(t.Context(), p+"1"); err != nil || g.Attempts != first.Attempts+1 || g.Redrives != first.Redrives+1 || g.Reason != deadletter.ReasonLeaseEnded {
		t.Fatalf("Get after a claim that counted the lease's end: %+v, %v", g, err)
	}
	if err := s.Done(t.Context(), p+"1", first.Token); !errors.Is(err, deadletter.ErrLeaseLost) {
		t.Fatalf("Done with the first claim's token: %v, want ErrLeaseLost", err)
	}
	f := first
	f.Redrives, f.Due = 1, t0.Add(time.Hour)
	if err := s.Fail(t.Context(), f); !errors.Is(err, deadletter.ErrLeaseLost) {
		t.Fatalf("Fail with the first claim's token: %v, want ErrLeaseLost", err)
	}
	if err := s.Done(t.Context(), p+"1", second[0].Token); err != nil {
		t.Fatalf("Done with the holder's token: %v", err)
	}
	if _, err := s.Get(t.Context(), p+"1"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("Get after Done: %v, want ErrNotFound", err)
	}
	if err := s.Done(t.Context(), p+"1", second[0].Token); !errors.Is(err, deadletter.ErrLeaseLost) {
		t.Fatalf("Done twice: %v, want ErrLeaseLost", err)
	}
}

// testLeaseEndsAtMaxCount: a letter whose counts are at MaxCount is still
// claimed after a claim that ended with its lease, its counts kept at
// MaxCount (a store whose integers overflow would refuse every claim of
// the queue).
func testLeaseEndsAtMaxCount(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.letter(q, p+"1", c.t0)
	l.Attempts, l.Redrives = deadletter.MaxCount, deadletter.MaxCount
	put(t, s, l)
	claim(t, s, q, c.t0, 1)
	got := claim(t, s, q, c.t0.Add(Lease), 1)
	if len(got) != 1 || got[0].Attempts != deadletter.MaxCount || got[0].Redrives != deadletter.MaxCount || got[0].Reason != deadletter.ReasonLeaseEnded {
		t.Fatalf("Claim after a claim that ended with its lease, counts at MaxCount: %+v, want the letter, Attempts and Redrives %d", got, deadletter.MaxCount)
	}
}

func testDoneAfterLease(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	h := c.held(t, s, q, p)
	if err := s.Done(t.Context(), p+"1", h.Token); err != nil {
		t.Fatalf("Done by the last holder after its lease: %v, want nil (the work was done)", err)
	}
}

// stored puts a letter p+"1" of q due at c.t0 and returns it.
func (c *contract) stored(t *testing.T, s deadletter.Store, q, p string) deadletter.Letter {
	t.Helper()
	l := c.letter(q, p+"1", c.t0)
	put(t, s, l)
	return l
}

// held stores a letter p+"1" of q due at c.t0, claims it at c.t0 and
// returns it as claimed.
func (c *contract) held(t *testing.T, s deadletter.Store, q, p string) deadletter.Letter {
	t.Helper()
	c.stored(t, s, q, p)
	h := claim(t, s, q, c.t0, 1)
	if len(h) != 1 {
		t.Fatalf("Claim: %d letters, want 1", len(h))
	}
	return h[0]
}

// failed puts a letter of q, claims it and fails it, due an hour later,
// and returns its ID.
func (c *contract) failed(t *testing.T, s deadletter.Store, q, p string) string {
	h := c.held(t, s, q, p)
	h.Reason, h.Error, h.Attempts, h.Redrives, h.Due = "redrive failed", "partner: 502", 4, 1, c.t0.Add(time.Hour)
	if err := s.Fail(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	return h.ID
}

func testFail(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	id := c.failed(t, s, q, p)
	got, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := c.letter(q, id, c.t0.Add(time.Hour))
	want.Reason, want.Error, want.Attempts, want.Redrives = "redrive failed", "partner: 502", 4, 1
	if !Equal(got, want) {
		t.Fatalf("after Fail:\n got %+v\nwant %+v", got, want)
	}
	if got := claim(t, s, q, c.t0.Add(time.Hour-time.Second), 1); len(got) != 0 {
		t.Fatalf("Claim before the new Due: %q, want none", ids(got))
	}
	// A claim that Fail ended is not counted again.
	if got := claim(t, s, q, c.t0.Add(time.Hour), 1); len(got) != 1 || got[0].Attempts != 4 || got[0].Redrives != 1 || got[0].Reason != "redrive failed" {
		t.Fatalf("Claim at the new Due: %+v, want the letter as Fail stored it", got)
	}
}

func testParkedNotClaimed(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	c.failed(t, s, q, p)
	h := claim(t, s, q, c.t0.Add(time.Hour), 1)[0]
	h.Parked, h.Redrives = true, 5
	if err := s.Fail(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, q, c.t0.Add(100*time.Hour), 10); len(got) != 0 {
		t.Fatalf("Claim of a parked letter: %q, want none", ids(got))
	}
}

func testFailInvalid(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	c.stored(t, s, q, p)
	bad := claim(t, s, q, c.t0, 1)[0]
	bad.Attempts = -1
	if err := s.Fail(t.Context(), bad); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Fatalf("Fail with Attempts -1: %v, want ErrInvalidLetter", err)
	}
	bad.Attempts = deadletter.MaxCount + 1
	if err := s.Fail(t.Context(), bad); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Fatalf("Fail with Attempts past MaxCount: %v, want ErrInvalidLetter", err)
	}
}

func testRequeue(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	t0 := c.t0
	l := c.letter(q, p+"1", t0)
	l.Parked, l.Redrives = true, 5
	put(t, s, l)
	if err := s.Requeue(t.Context(), p+"1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(t.Context(), p+"1")
	if got.Parked || got.Redrives != 0 || !got.Due.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after Requeue: Parked %v Redrives %d Due %v, want false, 0, %v", got.Parked, got.Redrives, got.Due, t0.Add(time.Minute))
	}
	if h := claim(t, s, q, t0.Add(time.Minute), 1); len(h) != 1 {
		t.Fatalf("Claim after Requeue: %d letters, want 1", len(h))
	}
	if err := s.Requeue(t.Context(), p+"absent", t0); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("Requeue of an absent ID: %v, want ErrNotFound", err)
	}
}

func testRequeueEndsClaim(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	t0 := c.t0
	h := c.held(t, s, q, p)
	if err := s.Requeue(t.Context(), p+"1", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(t.Context(), p+"1", h.Token); !errors.Is(err, deadletter.ErrLeaseLost) {
		t.Fatalf("Done by a claim that a Requeue ended: %v, want ErrLeaseLost", err)
	}
	if got := claim(t, s, q, t0.Add(time.Minute), 1); len(got) != 1 || got[0].Attempts != h.Attempts || got[0].Redrives != 0 || got[0].Reason != h.Reason {
		t.Fatalf("Claim after the Requeue that ended a claim: %+v, want the letter, its claim not counted", got)
	}
}

func testConcurrentClaims(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	const letters, claimers = 60, 6
	for i := range letters {
		put(t, s, c.letter(q, fmt.Sprintf("%s%03d", p, i), c.t0))
	}
	var (
		mu    sync.Mutex
		seen  = map[string]int{}
		wg    sync.WaitGroup
		errCh = make(chan error, claimers)
	)
	for range claimers {
		wg.Go(func() {
			for {
				got, err := s.Claim(t.Context(), q, c.t0, 4, Lease)
				if err != nil {
					errCh <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, l := range got {
					seen[l.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errCh)
	for err := range errCh {
		t.Fatal(err)
	}
	if len(seen) != letters {
		t.Fatalf("%d letters claimed, want %d", len(seen), letters)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("letter %q claimed %d times under one lease", id, n)
		}
	}
}
