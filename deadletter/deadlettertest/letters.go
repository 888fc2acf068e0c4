package deadlettertest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
)

// The behaviours of Put, Get, List, Count and Delete.

func testPutGet(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.letter(q, p+"1", c.t0)
	l.Token, l.LeaseEnd = "ignored", c.t0.Add(time.Hour)
	put(t, s, l)
	got, err := s.Get(t.Context(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := l
	want.Token, want.LeaseEnd = "", time.Time{}
	if !Equal(got, want) {
		t.Fatalf("Get after Put:\n got %+v\nwant %+v", got, want)
	}
	if _, err := s.Get(t.Context(), p+"absent"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("Get of an absent ID: %v, want ErrNotFound", err)
	}
}

func testPutSameWork(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.stored(t, s, q, p)
	again := l
	again.Reason, again.Attempts = "deadline", 7 // the outcome may differ: same work
	if err := s.Put(t.Context(), again); err != nil {
		t.Fatalf("Put of the same work again: %v, want nil", err)
	}
	unchanged(t, s, l, "the second Put")
}

func testPutConflict(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.stored(t, s, q, p)
	other := l
	other.Payload = []byte(`{"charge":"other"}`)
	if err := s.Put(t.Context(), other); !errors.Is(err, deadletter.ErrConflict) {
		t.Fatalf("Put of other work under a stored ID: %v, want ErrConflict", err)
	}
	unchanged(t, s, l, "the refused Put")
}

// unchanged fails the test unless s holds l as it was, after what happened.
func unchanged(t *testing.T, s deadletter.Store, l deadletter.Letter, after string) {
	t.Helper()
	if got, _ := s.Get(t.Context(), l.ID); !Equal(got, l) {
		t.Fatalf("after %s the letter changed:\n got %+v\nwant %+v", after, got, l)
	}
}

func testPutInvalid(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	for name, mod := range map[string]func(*deadletter.Letter){
		"no queue":                func(l *deadletter.Letter) { l.Queue = "" },
		"zero Created":            func(l *deadletter.Letter) { l.Created = time.Time{} },
		"payload too big":         func(l *deadletter.Letter) { l.Payload = make([]byte, deadletter.MaxPayloadBytes+1) },
		"negative attempt":        func(l *deadletter.Letter) { l.Attempts = -1 },
		"attempts past the limit": func(l *deadletter.Letter) { l.Attempts = deadletter.MaxCount + 1 },
		"redrives past the limit": func(l *deadletter.Letter) { l.Redrives = deadletter.MaxCount + 1 },
		"ID not UTF-8":            func(l *deadletter.Letter) { l.ID += "\xff" },
		"key with NUL":            func(l *deadletter.Letter) { l.Key = "k\x00" },
	} {
		l := c.letter(q, p+name, c.t0)
		mod(&l)
		if err := s.Put(t.Context(), l); !errors.Is(err, deadletter.ErrInvalidLetter) {
			t.Errorf("Put with %s: %v, want ErrInvalidLetter", name, err)
		}
		if _, err := s.Get(t.Context(), l.ID); !errors.Is(err, deadletter.ErrNotFound) {
			t.Errorf("after the refused Put with %s, Get: %v, want ErrNotFound", name, err)
		}
	}
	if err := s.Put(t.Context(), c.letter(q, "", c.t0)); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Errorf("Put with no ID: %v, want ErrInvalidLetter", err)
	}
	// The counts at their limit are kept.
	l := c.letter(q, p+"most", c.t0)
	l.Attempts, l.Redrives = deadletter.MaxCount, deadletter.MaxCount
	put(t, s, l)
	if got, err := s.Get(t.Context(), l.ID); err != nil || got.Attempts != deadletter.MaxCount || got.Redrives != deadletter.MaxCount {
		t.Errorf("letter with Attempts and Redrives %d: got %d and %d, %v", deadletter.MaxCount, got.Attempts, got.Redrives, err)
	}
}

func testMessages(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.letter(q, p+"1", c.t0)
	l.Reason, l.Error = "bad \xff byte", "a \x00 NUL"
	put(t, s, l)
	got, err := s.Get(t.Context(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != "bad \uFFFD byte" || got.Error != "a \uFFFD NUL" {
		t.Fatalf("stored reason %q and error %q: want invalid bytes and NUL replaced by U+FFFD", got.Reason, got.Error)
	}
	h := claim(t, s, q, c.t0, 1)[0]
	h.Error = "fail \xfe"
	if err := s.Fail(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(t.Context(), l.ID); got.Error != "fail \uFFFD" {
		t.Fatalf("error stored by Fail %q, want %q", got.Error, "fail \uFFFD")
	}
}

func testNoSharing(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	l := c.stored(t, s, q, p)
	l.Payload[0] = 'X'
	got, _ := s.Get(t.Context(), p+"1")
	if got.Payload[0] != '{' {
		t.Fatalf("the caller's Payload changed the stored letter: %q", got.Payload)
	}
	got.Payload[0] = 'Y'
	again, _ := s.Get(t.Context(), p+"1")
	if !bytes.HasPrefix(again.Payload, []byte(`{"charge"`)) {
		t.Fatalf("a returned Payload changed the stored letter: %q", again.Payload)
	}
}

func testDelete(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	c.stored(t, s, q, p)
	claim(t, s, q, c.t0, 1)
	if err := s.Delete(t.Context(), p+"1"); err != nil {
		t.Fatalf("Delete of a held letter: %v", err)
	}
	if err := s.Delete(t.Context(), p+"1"); !errors.Is(err, deadletter.ErrNotFound) {
		t.Fatalf("Delete twice: %v, want ErrNotFound", err)
	}
}

// putSeven puts seven letters of q, out of ID order, and returns their IDs
// in order.
func (c *contract) putSeven(t *testing.T, s deadletter.Store, q, p string) []string {
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("%s%02d", p, (i*5)%7) // put out of order
		put(t, s, c.letter(q, id, c.t0))
		want = append(want, id)
	}
	slices.Sort(want)
	return want
}

func testListPages(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	want := c.putSeven(t, s, q, p)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := s.List(t.Context(), q, after, 3)
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
}

func testListEveryQueue(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	want := c.putSeven(t, s, q, p)
	all, err := s.List(t.Context(), "", p, 100)
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
}

func testCount(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	t0 := c.t0
	put(t, s, c.letter(q, p+"waiting", t0.Add(time.Hour)))
	put(t, s, c.letter(q, p+"due1", t0))
	put(t, s, c.letter(q, p+"due2", t0.Add(-time.Hour)))
	put(t, s, c.letter(q, p+"held", t0.Add(-2*time.Hour)))
	parked := c.letter(q, p+"parked", t0)
	parked.Parked = true
	put(t, s, parked)
	if h := claim(t, s, q, t0, 1); len(h) != 1 || h[0].ID != p+"held" {
		t.Fatalf("Claim: %q, want %q", ids(h), p+"held")
	}
	got, err := s.Count(t.Context(), q, t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (deadletter.Counts{Waiting: 1, Due: 2, Held: 1, Parked: 1}); got != want {
		t.Fatalf("Count at t0: %+v, want %+v", got, want)
	}
	got, _ = s.Count(t.Context(), q, t0.Add(Lease))
	if want := (deadletter.Counts{Waiting: 1, Due: 3, Parked: 1}); got != want {
		t.Fatalf("Count when the lease ended: %+v, want %+v", got, want)
	}
	all, _ := s.Count(t.Context(), "", t0)
	if all.Total() < 5 {
		t.Fatalf("Count of every queue: %+v, want at least this queue's 5", all)
	}
}

func testBadArguments(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	if _, err := s.Claim(t.Context(), q, c.t0, 0, Lease); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Errorf("Claim of 0 letters: %v, want ErrInvalidLetter", err)
	}
	if _, err := s.Claim(t.Context(), q, c.t0, 1, 0); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Errorf("Claim with a zero lease: %v, want ErrInvalidLetter", err)
	}
	if _, err := s.List(t.Context(), q, "", 0); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Errorf("List of 0 letters: %v, want ErrInvalidLetter", err)
	}
}

// testListPagesWhileChanging pages through a queue, 4 letters a page,
// while another goroutine puts letters (with IDs before and after the
// pages read), deletes others, and claims, fails and requeues the rest.
// Every letter there from the first page to the last is listed exactly
// once, and the IDs come in strictly increasing order: none skipped, none
// twice.
func testListPagesWhileChanging(t *testing.T, c *contract, s deadletter.Store, q, p string) {
	id := func(i int) string { return fmt.Sprintf("%s%03d", p, i) }
	// Letters 0, 4, 8, ... stay; 2, 6, 10, ... are deleted; the odd IDs
	// are put while the pages are read; the stable ones are claimed,
	// failed and requeued meanwhile (their rows change, their IDs not).
	for i := 0; i < 120; i += 2 {
		put(t, s, c.letter(q, id(i), c.t0))
	}
	// change makes the i-th change: a put, a delete, or a claim whose
	// letters are failed and requeued.
	change := func(i int) error {
		n := (i * 37) % 120
		switch {
		case n%2 == 1:
			return s.Put(t.Context(), c.letter(q, id(n), c.t0))
		case n%4 == 2:
			if err := s.Delete(t.Context(), id(n)); !errors.Is(err, deadletter.ErrNotFound) {
				return err
			}
			return nil
		}
		got, err := s.Claim(t.Context(), q, c.t0.Add(time.Duration(i)*time.Second), 2, Lease)
		for _, l := range got {
			l.Error = "changed while listed"
			if err = s.Fail(t.Context(), l); err == nil {
				err = s.Requeue(t.Context(), l.ID, c.t0)
			}
		}
		return err
	}
	// Changes run beside the pages, and three between each two pages, so
	// that every page boundary sees some.
	stop := make(chan struct{})
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 1)
	)
	wg.Go(func() {
		for i := 0; ; i += 2 {
			select {
			case <-stop:
				return
			default:
			}
			if err := change(i); err != nil {
				errs <- err
				return
			}
		}
	})
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	step := 1
	var (
		got   []string
		after string
	)
	for {
		page, err := s.List(t.Context(), q, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, ids(page)...)
		after = page[len(page)-1].ID
		for range 3 {
			if err := change(step); err != nil {
				t.Fatal(err)
			}
			step += 2
		}
	}
	halt()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("List pages gave %q after %q: want strictly increasing IDs (none twice)", got[i], got[i-1])
		}
	}
	for i := 0; i < 120; i += 4 {
		if !slices.Contains(got, id(i)) {
			t.Fatalf("letter %q, there all along, is on no page (pages gave %q)", id(i), got)
		}
	}
}
