// Package deadlettertest checks that a deadletter.Store keeps its contract:
// TestStore runs the same steps on stepped time against any store (the
// in-memory one, PostgreSQL's, or a user's own), so that all of them behave
// alike.
package deadlettertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
)

// Lease is the lease TestStore claims with.
const Lease = time.Minute

// TestStore runs the store contract against newStore's store. Each subtest
// uses queues and IDs of its own, unique per run, so newStore may return the
// same store every time (one server for the whole run). Times are whole
// seconds in UTC (stores may keep less than nanoseconds), from an arbitrary
// instant that the store must decide by.
func TestStore(t *testing.T, newStore func(t *testing.T) deadletter.Store) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	run := time.Now().UnixNano()
	// names returns a queue and an ID prefix unique to the subtest and the
	// run, with bytes that need care in a query.
	names := func(t *testing.T) (queue, prefix string) {
		n := fmt.Sprintf("%s/%d", t.Name(), run)
		return "queue 'q' \\ " + n, "id \"é\" " + n + "/"
	}
	letter := func(queue, id string, due time.Time) deadletter.Letter {
		return deadletter.Letter{
			ID: id, Queue: queue, Key: "key-" + id, Payload: []byte(`{"charge":"` + id + `"}`),
			Reason: "attempts exhausted", Error: "partner: 503 Service Unavailable", Attempts: 3,
			Created: t0.Add(-time.Hour), Due: due,
		}
	}
	put := func(t *testing.T, s deadletter.Store, l deadletter.Letter) {
		t.Helper()
		if err := s.Put(ctx, l); err != nil {
			t.Fatalf("Put(%q): %v", l.ID, err)
		}
	}
	claim := func(t *testing.T, s deadletter.Store, queue string, now time.Time, max int) []deadletter.Letter {
		t.Helper()
		got, err := s.Claim(ctx, queue, now, max, Lease)
		if err != nil {
			t.Fatalf("Claim at %v: %v", now, err)
		}
		return got
	}
	ids := func(ls []deadletter.Letter) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = l.ID
		}
		return out
	}

	t.Run("put, get, same work again, other work under the ID", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		l := letter(q, p+"1", t0)
		l.Token, l.LeaseEnd = "ignored", t0.Add(time.Hour)
		put(t, s, l)
		got, err := s.Get(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := l
		want.Token, want.LeaseEnd = "", time.Time{}
		if !Equal(got, want) {
			t.Fatalf("Get after Put:\n got %+v\nwant %+v", got, want)
		}
		again := l
		again.Reason, again.Attempts = "deadline", 7 // the outcome may differ: same work
		if err := s.Put(ctx, again); err != nil {
			t.Fatalf("Put of the same work again: %v, want nil", err)
		}
		other := l
		other.Payload = []byte(`{"charge":"other"}`)
		if err := s.Put(ctx, other); !errors.Is(err, deadletter.ErrConflict) {
			t.Fatalf("Put of other work under a stored ID: %v, want ErrConflict", err)
		}
		if got, _ := s.Get(ctx, l.ID); !Equal(got, want) {
			t.Fatalf("after the refused Put the letter changed:\n got %+v\nwant %+v", got, want)
		}
		if _, err := s.Get(ctx, p+"absent"); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("Get of an absent ID: %v, want ErrNotFound", err)
		}
	})

	t.Run("invalid letters are refused and not stored", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		for name, mod := range map[string]func(*deadletter.Letter){
			"no queue":         func(l *deadletter.Letter) { l.Queue = "" },
			"zero Created":     func(l *deadletter.Letter) { l.Created = time.Time{} },
			"payload too big":  func(l *deadletter.Letter) { l.Payload = make([]byte, deadletter.MaxPayloadBytes+1) },
			"negative attempt": func(l *deadletter.Letter) { l.Attempts = -1 },
			"ID not UTF-8":     func(l *deadletter.Letter) { l.ID += "\xff" },
			"key with NUL":     func(l *deadletter.Letter) { l.Key = "k\x00" },
		} {
			l := letter(q, p+name, t0)
			mod(&l)
			if err := s.Put(ctx, l); !errors.Is(err, deadletter.ErrInvalid) {
				t.Errorf("Put with %s: %v, want ErrInvalid", name, err)
			}
			if _, err := s.Get(ctx, l.ID); !errors.Is(err, deadletter.ErrNotFound) {
				t.Errorf("after the refused Put with %s, Get: %v, want ErrNotFound", name, err)
			}
		}
		if err := s.Put(ctx, letter(q, "", t0)); !errors.Is(err, deadletter.ErrInvalid) {
			t.Errorf("Put with no ID: %v, want ErrInvalid", err)
		}
	})

	t.Run("messages are kept as text", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		l := letter(q, p+"1", t0)
		l.Reason, l.Error = "bad \xff byte", "a \x00 NUL"
		put(t, s, l)
		got, err := s.Get(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reason != "bad \uFFFD byte" || got.Error != "a \uFFFD NUL" {
			t.Fatalf("stored reason %q and error %q: want invalid bytes and NUL replaced by U+FFFD", got.Reason, got.Error)
		}
		c := claim(t, s, q, t0, 1)[0]
		c.Error = "fail \xfe"
		if err := s.Fail(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, l.ID); got.Error != "fail \uFFFD" {
			t.Fatalf("error stored by Fail %q, want %q", got.Error, "fail \uFFFD")
		}
	})

	t.Run("claim takes due letters of its queue, earliest first", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		other, _ := names(t)
		other += " other"
		put(t, s, letter(q, p+"c", t0))
		put(t, s, letter(q, p+"b", t0.Add(-time.Second)))
		put(t, s, letter(q, p+"a", t0)) // same Due as c: ID order
		put(t, s, letter(q, p+"later", t0.Add(time.Second)))
		parked := letter(q, p+"parked", t0.Add(-time.Hour))
		parked.Parked = true
		put(t, s, parked)
		put(t, s, letter(other, p+"elsewhere", t0.Add(-time.Hour)))

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
		h, err := s.Get(ctx, p+"a")
		if err != nil || h.Token != got[1].Token || !h.LeaseEnd.Equal(t0.Add(Lease)) {
			t.Fatalf("Get of a held letter: %+v, %v: want its claim's token", h, err)
		}
	})

	t.Run("a claim ends with its lease, and its token with it", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		put(t, s, letter(q, p+"1", t0))
		first := claim(t, s, q, t0, 1)
		if len(first) != 1 {
			t.Fatalf("Claim: %d letters, want 1", len(first))
		}
		if got := claim(t, s, q, t0.Add(Lease-time.Second), 1); len(got) != 0 {
			t.Fatalf("Claim before the lease ended: %q, want none", ids(got))
		}
		second := claim(t, s, q, t0.Add(Lease), 1)
		if len(second) != 1 || second[0].Token == first[0].Token {
			t.Fatalf("Claim when the lease ended: %+v, want the letter with a new token", second)
		}
		if err := s.Done(ctx, p+"1", first[0].Token); !errors.Is(err, deadletter.ErrLeaseLost) {
			t.Fatalf("Done with the first claim's token: %v, want ErrLeaseLost", err)
		}
		f := first[0]
		f.Redrives, f.Due = 1, t0.Add(time.Hour)
		if err := s.Fail(ctx, f); !errors.Is(err, deadletter.ErrLeaseLost) {
			t.Fatalf("Fail with the first claim's token: %v, want ErrLeaseLost", err)
		}
		if err := s.Done(ctx, p+"1", second[0].Token); err != nil {
			t.Fatalf("Done with the holder's token: %v", err)
		}
		if _, err := s.Get(ctx, p+"1"); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("Get after Done: %v, want ErrNotFound", err)
		}
		if err := s.Done(ctx, p+"1", second[0].Token); !errors.Is(err, deadletter.ErrLeaseLost) {
			t.Fatalf("Done twice: %v, want ErrLeaseLost", err)
		}
	})

	t.Run("done after the lease ended, unclaimed since, deletes", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		put(t, s, letter(q, p+"1", t0))
		c := claim(t, s, q, t0, 1)
		if err := s.Done(ctx, p+"1", c[0].Token); err != nil {
			t.Fatalf("Done by the last holder after its lease: %v, want nil (the work was done)", err)
		}
	})

	t.Run("fail stores the outcome and ends the claim", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		put(t, s, letter(q, p+"1", t0))
		c := claim(t, s, q, t0, 1)[0]
		c.Reason, c.Error, c.Attempts, c.Redrives, c.Due = "redrive failed", "partner: 502", 4, 1, t0.Add(time.Hour)
		if err := s.Fail(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, p+"1")
		if err != nil {
			t.Fatal(err)
		}
		want := letter(q, p+"1", t0.Add(time.Hour))
		want.Reason, want.Error, want.Attempts, want.Redrives = "redrive failed", "partner: 502", 4, 1
		if !Equal(got, want) {
			t.Fatalf("after Fail:\n got %+v\nwant %+v", got, want)
		}
		if got := claim(t, s, q, t0.Add(time.Hour-time.Second), 1); len(got) != 0 {
			t.Fatalf("Claim before the new Due: %q, want none", ids(got))
		}
		c = claim(t, s, q, t0.Add(time.Hour), 1)[0]
		c.Parked, c.Redrives = true, 5
		if err := s.Fail(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s, q, t0.Add(100*time.Hour), 10); len(got) != 0 {
			t.Fatalf("Claim of a parked letter: %q, want none", ids(got))
		}
		bad := c
		bad.Attempts = -1
		if err := s.Fail(ctx, bad); !errors.Is(err, deadletter.ErrInvalid) {
			t.Fatalf("Fail with Attempts -1: %v, want ErrInvalid", err)
		}
	})

	t.Run("requeue unparks, resets redrives and ends a claim", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		l := letter(q, p+"1", t0)
		l.Parked, l.Redrives = true, 5
		put(t, s, l)
		if err := s.Requeue(ctx, p+"1", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, p+"1")
		if got.Parked || got.Redrives != 0 || !got.Due.Equal(t0.Add(time.Minute)) {
			t.Fatalf("after Requeue: Parked %v Redrives %d Due %v, want false, 0, %v", got.Parked, got.Redrives, got.Due, t0.Add(time.Minute))
		}
		c := claim(t, s, q, t0.Add(time.Minute), 1)
		if len(c) != 1 {
			t.Fatalf("Claim after Requeue: %d letters, want 1", len(c))
		}
		if err := s.Requeue(ctx, p+"1", t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Done(ctx, p+"1", c[0].Token); !errors.Is(err, deadletter.ErrLeaseLost) {
			t.Fatalf("Done by a claim that a Requeue ended: %v, want ErrLeaseLost", err)
		}
		if got := claim(t, s, q, t0.Add(time.Minute), 1); len(got) != 1 {
			t.Fatalf("Claim after the Requeue that ended a claim: %d letters, want 1", len(got))
		}
		if err := s.Requeue(ctx, p+"absent", t0); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("Requeue of an absent ID: %v, want ErrNotFound", err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		put(t, s, letter(q, p+"1", t0))
		claim(t, s, q, t0, 1)
		if err := s.Delete(ctx, p+"1"); err != nil {
			t.Fatalf("Delete of a held letter: %v", err)
		}
		if err := s.Delete(ctx, p+"1"); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("Delete twice: %v, want ErrNotFound", err)
		}
	})

	t.Run("list pages through a queue in ID order", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		var want []string
		for i := range 7 {
			id := fmt.Sprintf("%s%02d", p, (i*5)%7) // put out of order
			put(t, s, letter(q, id, t0))
			want = append(want, id)
		}
		slices.Sort(want)
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			page, err := s.List(ctx, q, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 3 || pages > 3 {
				t.Fatalf("page %d of %d letters (max 3)", pages, len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, ids(page)...)
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List pages: %q, want %q", got, want)
		}
		all, err := s.List(ctx, "", p, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range all {
			if l.Queue == q {
				n++
			}
		}
		if n != len(want) {
			t.Fatalf("List of every queue from %q: %d of this queue's letters, want %d", p, n, len(want))
		}
	})

	t.Run("count", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		put(t, s, letter(q, p+"waiting", t0.Add(time.Hour)))
		put(t, s, letter(q, p+"due1", t0))
		put(t, s, letter(q, p+"due2", t0.Add(-time.Hour)))
		put(t, s, letter(q, p+"held", t0.Add(-2*time.Hour)))
		parked := letter(q, p+"parked", t0)
		parked.Parked = true
		put(t, s, parked)
		if c := claim(t, s, q, t0, 1); len(c) != 1 || c[0].ID != p+"held" {
			t.Fatalf("Claim: %q, want %q", ids(c), p+"held")
		}
		got, err := s.Count(ctx, q, t0)
		if err != nil {
			t.Fatal(err)
		}
		if want := (deadletter.Counts{Waiting: 1, Due: 2, Held: 1, Parked: 1}); got != want {
			t.Fatalf("Count at t0: %+v, want %+v", got, want)
		}
		got, _ = s.Count(ctx, q, t0.Add(Lease))
		if want := (deadletter.Counts{Waiting: 1, Due: 3, Parked: 1}); got != want {
			t.Fatalf("Count when the lease ended: %+v, want %+v", got, want)
		}
		all, _ := s.Count(ctx, "", t0)
		if all.Total() < 5 {
			t.Fatalf("Count of every queue: %+v, want at least this queue's 5", all)
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		s := newStore(t)
		q, _ := names(t)
		if _, err := s.Claim(ctx, q, t0, 0, Lease); !errors.Is(err, deadletter.ErrInvalid) {
			t.Errorf("Claim of 0 letters: %v, want ErrInvalid", err)
		}
		if _, err := s.Claim(ctx, q, t0, 1, 0); !errors.Is(err, deadletter.ErrInvalid) {
			t.Errorf("Claim with a zero lease: %v, want ErrInvalid", err)
		}
		if _, err := s.List(ctx, q, "", 0); !errors.Is(err, deadletter.ErrInvalid) {
			t.Errorf("List of 0 letters: %v, want ErrInvalid", err)
		}
	})

	t.Run("returned letters share nothing with the store", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		l := letter(q, p+"1", t0)
		put(t, s, l)
		l.Payload[0] = 'X'
		got, _ := s.Get(ctx, p+"1")
		if got.Payload[0] != '{' {
			t.Fatalf("the caller's Payload changed the stored letter: %q", got.Payload)
		}
		got.Payload[0] = 'Y'
		again, _ := s.Get(ctx, p+"1")
		if !bytes.HasPrefix(again.Payload, []byte(`{"charge"`)) {
			t.Fatalf("a returned Payload changed the stored letter: %q", again.Payload)
		}
	})

	t.Run("concurrent claims take every letter once", func(t *testing.T) {
		s := newStore(t)
		q, p := names(t)
		const letters, claimers = 60, 6
		for i := range letters {
			put(t, s, letter(q, fmt.Sprintf("%s%03d", p, i), t0))
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
					got, err := s.Claim(ctx, q, t0, 4, Lease)
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
	})
}

// Equal reports whether two letters are equal field by field, comparing
// times with Equal (stores may return another location) and treating a nil
// and an empty Payload alike.
func Equal(a, b deadletter.Letter) bool {
	return a.ID == b.ID && a.Queue == b.Queue && a.Key == b.Key && bytes.Equal(a.Payload, b.Payload) &&
		a.Reason == b.Reason && a.Error == b.Error && a.Attempts == b.Attempts && a.Redrives == b.Redrives &&
		a.Created.Equal(b.Created) && a.Due.Equal(b.Due) && a.Parked == b.Parked &&
		a.Token == b.Token && a.LeaseEnd.Equal(b.LeaseEnd)
}
