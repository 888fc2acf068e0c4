// Package idempotencytest checks that an idempotency.Store keeps its
// contract: TestStore runs the same transitions on stepped time against any
// store (the in-memory one, Redis, PostgreSQL, or a user's own), so that all
// of them behave alike, and replays a response through the middleware over
// the store behind a real HTTP server on loopback (every field, value and
// byte as the first request got them); ExactlyOnce and Scoped run the middleware over the
// store behind a real HTTP server on loopback (500 concurrent retrying
// clients with one key; two principals with one key); Benchmark measures the
// middleware's cost per request over the store.
package idempotencytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// Lease is the lease TestStore asks for. Stores that also expire records by
// their own clock (Redis) see real time pass during the test, far less than
// this, while the test steps its own now past it.
const Lease = 30 * time.Second

// TTL is the retention TestStore asks for.
const TTL = time.Hour

// TestStore runs the store contract against newStore's store. Each subtest
// uses IDs of its own, so newStore may return the same store every time
// (one server for the whole run). It uses t0, an arbitrary instant, and
// steps from it: the store must decide by the now it is given.
func TestStore(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	fp := fingerprint("a request")
	other := fingerprint("another request")
	resp := idempotency.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}},
		Body:   []byte(`{"id":"ch_1","amount":1000}`),
		Size:   27,
	}
	ids := func(t *testing.T) (idempotency.ID, idempotency.ID) {
		// Unique per subtest and per run, with bytes that need care.
		n := fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano())
		return idempotency.ID{Scope: "tenant:" + n, Key: "k \"1\" \\ " + n}, idempotency.ID{Scope: "tenant:" + n + "2", Key: "k \"1\" \\ " + n}
	}

	t.Run("claim, hold, complete, replay", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		if _, ok, err := s.Get(ctx, id, t0); err != nil || ok {
			t.Fatalf("Get before Begin: ok %v err %v, want no record", ok, err)
		}
		_, claimed, err := s.Begin(ctx, id, fp, "tok-a", t0, Lease)
		if err != nil || !claimed {
			t.Fatalf("first Begin: claimed %v err %v, want claimed", claimed, err)
		}
		rec, ok, err := s.Get(ctx, id, t0.Add(time.Second))
		if err != nil || !ok || rec.State != idempotency.InProgress || rec.Fingerprint != fp || rec.Token != "tok-a" || !rec.Expires.Equal(t0.Add(Lease)) {
			t.Fatalf("Get in progress: %+v ok %v err %v; want in progress, token tok-a, expires t0+%v", rec, ok, err, Lease)
		}
		rec, claimed, err = s.Begin(ctx, id, fp, "tok-b", t0.Add(time.Second), Lease)
		if err != nil || claimed || rec.State != idempotency.InProgress || rec.Fingerprint != fp {
			t.Fatalf("second Begin while held: %+v claimed %v err %v; want the in-progress record", rec, claimed, err)
		}
		if err := s.Complete(ctx, id, "tok-b", resp, t0.Add(2*time.Second), TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by a request that does not hold the key: got %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, id, "tok-a", resp, t0.Add(2*time.Second), TTL); err != nil {
			t.Fatalf("Complete by the holder: %v", err)
		}
		rec, claimed, err = s.Begin(ctx, id, other, "tok-c", t0.Add(3*time.Second), Lease)
		if err != nil || claimed || rec.State != idempotency.Completed || rec.Fingerprint != fp {
			t.Fatalf("Begin after Complete: %+v claimed %v err %v; want the completed record with the first fingerprint", rec, claimed, err)
		}
		if !rec.Expires.Equal(t0.Add(2*time.Second + TTL)) {
			t.Errorf("completed record expires %v, want %v", rec.Expires, t0.Add(2*time.Second+TTL))
		}
		checkResponse(t, rec.Response, resp)
		if err := s.Release(ctx, id, "tok-a"); err != nil {
			t.Fatalf("Release of a completed record: %v", err)
		}
		if rec, ok, _ := s.Get(ctx, id, t0.Add(4*time.Second)); !ok || rec.State != idempotency.Completed {
			t.Fatalf("Release deleted a completed record: %+v ok %v", rec, ok)
		}
		if err := s.Extend(ctx, id, "tok-a", t0.Add(4*time.Second), Lease); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Extend of a completed record: got %v, want ErrLeaseLost", err)
		}
	})

	t.Run("retention ends", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		mustComplete(t, s, id, fp, resp, t0)
		if _, ok, _ := s.Get(ctx, id, t0.Add(TTL-time.Millisecond)); !ok {
			t.Fatal("record gone before its TTL")
		}
		if _, ok, _ := s.Get(ctx, id, t0.Add(TTL)); ok {
			t.Fatal("record still there at its TTL")
		}
		mustClaim(t, s, id, other, "tok-b", t0.Add(TTL))
	})

	t.Run("release lets the next request run", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "tok-a", t0)
		if err := s.Release(ctx, id, "tok-x"); err != nil {
			t.Fatalf("Release by a non-holder: %v", err)
		}
		if _, claimed, _ := s.Begin(ctx, id, fp, "tok-b", t0, Lease); claimed {
			t.Fatal("Release by a non-holder released the record")
		}
		if err := s.Release(ctx, id, "tok-a"); err != nil {
			t.Fatalf("Release by the holder: %v", err)
		}
		if _, ok, _ := s.Get(ctx, id, t0); ok {
			t.Fatal("record still there after Release")
		}
		mustClaim(t, s, id, fp, "tok-b", t0)
		if err := s.Release(ctx, id, "tok-a"); err != nil {
			t.Fatalf("second Release by the old holder: %v", err)
		}
		if rec, ok, _ := s.Get(ctx, id, t0); !ok || rec.Token != "tok-b" {
			t.Fatalf("the old holder's Release removed the new holder's record: %+v ok %v", rec, ok)
		}
	})

	t.Run("lease passes", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "dead", t0)
		if _, claimed, _ := s.Begin(ctx, id, fp, "tok-b", t0.Add(Lease-time.Millisecond), Lease); claimed {
			t.Fatal("claimed 1 ms before the lease passed")
		}
		at := t0.Add(Lease)
		mustClaim(t, s, id, fp, "tok-b", at)
		if err := s.Extend(ctx, id, "dead", at, Lease); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Extend by the old holder: got %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, id, "dead", resp, at, TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the old holder: got %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, id, "tok-b", resp, at, TTL); err != nil {
			t.Fatalf("Complete by the new holder: %v", err)
		}
	})

	t.Run("a lost reply is sent again", func(t *testing.T) {
		// A client whose reply was lost sends the same call again (go-redis
		// re-runs a script after a network error; the middleware retries
		// Complete): the store must recognise the token that made the change.
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "tok-a", t0)
		mustClaim(t, s, id, fp, "tok-a", t0.Add(time.Second)) // Begin again by the holder
		if _, claimed, _ := s.Begin(ctx, id, fp, "tok-b", t0.Add(time.Second), Lease); claimed {
			t.Fatal("another token claimed the key after the holder's repeated Begin")
		}
		if err := s.Complete(ctx, id, "tok-a", resp, t0.Add(2*time.Second), TTL); err != nil {
			t.Fatalf("Complete by the holder: %v", err)
		}
		if err := s.Complete(ctx, id, "tok-a", resp, t0.Add(3*time.Second), TTL); err != nil {
			t.Fatalf("Complete again by the token that completed the record: got %v, want nil", err)
		}
		if _, claimed, _ := s.Begin(ctx, id, fp, "tok-a", t0.Add(4*time.Second), Lease); claimed {
			t.Fatal("Begin by the token of a completed record claimed it again")
		}
		if err := s.Complete(ctx, id, "tok-b", idempotency.Response{Status: 500}, t0.Add(4*time.Second), TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by another token of a completed record: got %v, want ErrLeaseLost", err)
		}
		rec, ok, err := s.Get(ctx, id, t0.Add(5*time.Second))
		if err != nil || !ok || rec.State != idempotency.Completed {
			t.Fatalf("Get: %+v ok %v err %v, want the completed record", rec, ok, err)
		}
		checkResponse(t, rec.Response, resp)
	})

	t.Run("a stale holder is fenced off", func(t *testing.T) {
		// The holder's lease passed (it was cut off from the store), another
		// request claimed the key and completed it: nothing the stale holder
		// does changes the record.
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "stale", t0)
		at := t0.Add(Lease)
		mustClaim(t, s, id, fp, "fresh", at)
		if err := s.Extend(ctx, id, "stale", at, Lease); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Extend by the stale holder: got %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, id, "fresh", resp, at, TTL); err != nil {
			t.Fatalf("Complete by the new holder: %v", err)
		}
		stale := idempotency.Response{Status: http.StatusAccepted, Body: []byte("stale")}
		if err := s.Complete(ctx, id, "stale", stale, at.Add(time.Second), TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the stale holder: got %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, id, "stale"); err != nil {
			t.Fatalf("Release by the stale holder: %v", err)
		}
		rec, ok, _ := s.Get(ctx, id, at.Add(time.Second))
		if !ok || rec.State != idempotency.Completed {
			t.Fatalf("the stale holder changed the record: %+v ok %v", rec, ok)
		}
		checkResponse(t, rec.Response, resp)
	})

	t.Run("a late holder completes", func(t *testing.T) {
		// The holder answers after its lease has passed (its process
		// paused, its link to the store cut for longer than the lease) and
		// nobody claimed the key meanwhile: its Complete stores the
		// response, up to idempotency.CompleteGrace past the lease, even
		// when other keys come and go and the store cleans up meanwhile.
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "late", t0)
		late := t0.Add(Lease + idempotency.CompleteGrace - time.Second)
		for i := range 8 { // other keys, past every lease: a store may clean up as they come
			n := fmt.Sprintf("%s/other%d/%d", t.Name(), i, time.Now().UnixNano())
			mustClaim(t, s, idempotency.ID{Key: n}, fp, "tok-o", t0)
			mustClaim(t, s, idempotency.ID{Key: n + "/late"}, fp, "tok-o", late)
		}
		cleanup(t, s, late)
		if err := s.Complete(ctx, id, "late", resp, late, TTL); err != nil {
			t.Fatalf("Complete by the holder %v past its lease, nobody having claimed the key: got %v, want nil", late.Sub(t0.Add(Lease)), err)
		}
		rec, ok, err := s.Get(ctx, id, late)
		if err != nil || !ok || rec.State != idempotency.Completed {
			t.Fatalf("Get after the late Complete: %+v ok %v err %v, want the completed record", rec, ok, err)
		}
		checkResponse(t, rec.Response, resp)
	})

	t.Run("a late holder is refused once another claimed", func(t *testing.T) {
		// The holder answers after its lease has passed and another request
		// has claimed the key: its Complete is refused whatever the other
		// request did since (still running, released, completed), and
		// changes nothing.
		s := newStore(t)
		id, _ := ids(t)
		stale := idempotency.Response{Status: http.StatusAccepted, Body: []byte("stale")}
		mustClaim(t, s, id, fp, "stale", t0)
		at := t0.Add(Lease)
		mustClaim(t, s, id, fp, "fresh", at)
		if err := s.Complete(ctx, id, "stale", stale, at, TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the stale holder while another holds the key: got %v, want ErrLeaseLost", err)
		}
		if rec, ok, _ := s.Get(ctx, id, at); !ok || rec.State != idempotency.InProgress || rec.Token != "fresh" {
			t.Fatalf("after the stale holder's Complete: %+v ok %v, want in progress, held by fresh", rec, ok)
		}
		if err := s.Release(ctx, id, "fresh"); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, id, "stale", stale, at, TTL); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete by the stale holder after the other released the key: got %v, want ErrLeaseLost", err)
		}
		if rec, ok, _ := s.Get(ctx, id, at); ok {
			t.Fatalf("the stale holder's Complete after a release stored %+v, want no record", rec)
		}
	})

	t.Run("extend keeps the key held", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "tok-a", t0)
		if err := s.Extend(ctx, id, "tok-a", t0.Add(Lease/2), Lease); err != nil {
			t.Fatalf("Extend by the holder: %v", err)
		}
		if err := s.Extend(ctx, id, "tok-b", t0.Add(Lease/2), Lease); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Extend by a non-holder: got %v, want ErrLeaseLost", err)
		}
		rec, claimed, err := s.Begin(ctx, id, fp, "tok-b", t0.Add(Lease+time.Second), Lease)
		if err != nil || claimed {
			t.Fatalf("Begin after the first lease but within the extended one: claimed %v err %v", claimed, err)
		}
		if want := t0.Add(Lease/2 + Lease); !rec.Expires.Equal(want) {
			t.Fatalf("extended lease ends %v, want %v", rec.Expires, want)
		}
		mustClaim(t, s, id, fp, "tok-b", t0.Add(Lease/2+Lease))
	})

	t.Run("scopes are separate", func(t *testing.T) {
		s := newStore(t)
		a, b := ids(t)
		mustComplete(t, s, a, fp, resp, t0)
		mustClaim(t, s, b, fp, "tok-b", t0)
		// "x:y" + "z" and "x" + "y:z" must not meet either.
		n := fmt.Sprint(time.Now().UnixNano())
		mustClaim(t, s, idempotency.ID{Scope: n + "x:y", Key: "z"}, fp, "t1", t0)
		mustClaim(t, s, idempotency.ID{Scope: n + "x", Key: "y:z"}, fp, "t2", t0)
		mustClaim(t, s, idempotency.ID{Scope: n + "x", Key: "y:z "}, fp, "t3", t0)
	})

	t.Run("empty and omitted responses", func(t *testing.T) {
		s := newStore(t)
		id, id2 := ids(t)
		mustClaim(t, s, id, fp, "tok-a", t0)
		empty := idempotency.Response{Status: http.StatusNoContent}
		if err := s.Complete(ctx, id, "tok-a", empty, t0, TTL); err != nil {
			t.Fatal(err)
		}
		rec, _, _ := s.Get(ctx, id, t0)
		checkResponse(t, rec.Response, empty)
		mustClaim(t, s, id2, fp, "tok-a", t0)
		omitted := idempotency.Response{Status: http.StatusOK, Header: http.Header{"X-A": {""}}, Omitted: true, Size: 5 << 20}
		if err := s.Complete(ctx, id2, "tok-a", omitted, t0, TTL); err != nil {
			t.Fatal(err)
		}
		rec, _, _ = s.Get(ctx, id2, t0)
		checkResponse(t, rec.Response, omitted)
	})

	// A field without values is kept as one: the middleware stores
	// "Content-Type" so when net/http sent none, and the replay needs it
	// present to send none too rather than a sniffed type.
	t.Run("field without values", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		mustClaim(t, s, id, fp, "tok-a", t0)
		resp := idempotency.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {}, "X-A": {"1"}}, Body: []byte("<p>"), Size: 3}
		if err := s.Complete(ctx, id, "tok-a", resp, t0, TTL); err != nil {
			t.Fatal(err)
		}
		rec, _, _ := s.Get(ctx, id, t0)
		if vs, ok := rec.Response.Header["Content-Type"]; !ok || len(vs) != 0 {
			t.Fatalf("stored header %#v: want Content-Type present without values", rec.Response.Header)
		}
		checkResponse(t, rec.Response, resp)
	})

	t.Run("replay over HTTP", func(t *testing.T) { replayOverHTTP(t, newStore(t)) })

	t.Run("one claim among many", func(t *testing.T) {
		s := newStore(t)
		id, _ := ids(t)
		const n = 50
		var wg sync.WaitGroup
		claims := make(chan string, n)
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				tok := fmt.Sprintf("tok-%d", i)
				_, claimed, err := s.Begin(ctx, id, fp, tok, t0, Lease)
				if err != nil {
					errs <- err
				}
				if claimed {
					claims <- tok
				}
			})
		}
		wg.Wait()
		close(claims)
		close(errs)
		for err := range errs {
			t.Errorf("concurrent Begin: %v", err)
		}
		var got []string
		for tok := range claims {
			got = append(got, tok)
		}
		if len(got) != 1 {
			t.Fatalf("%d of %d concurrent Begins claimed the key (%v), want exactly 1", len(got), n, got)
		}
		rec, _, _ := s.Get(ctx, id, t0)
		if rec.Token != got[0] {
			t.Fatalf("record held by %q, want the claimer %q", rec.Token, got[0])
		}
	})
}

// Cleaner is a store that deletes dead records when asked
// (postgres.IdempotencyStore); TestStore asks it where the contract says
// what cleaning up must keep.
type Cleaner interface {
	// Cleanup deletes the records that are dead at now and returns how
	// many it deleted.
	Cleanup(ctx context.Context, now time.Time) (int64, error)
}

// cleanup cleans s up at now, if it is a Cleaner.
func cleanup(t *testing.T, s idempotency.Store, now time.Time) {
	t.Helper()
	if c, ok := s.(Cleaner); ok {
		if _, err := c.Cleanup(context.Background(), now); err != nil {
			t.Fatalf("Cleanup at %v: %v", now, err)
		}
	}
}

func mustClaim(t *testing.T, s idempotency.Store, id idempotency.ID, fp idempotency.Fingerprint, tok string, now time.Time) {
	t.Helper()
	rec, claimed, err := s.Begin(context.Background(), id, fp, tok, now, Lease)
	if err != nil || !claimed {
		t.Fatalf("Begin(%v) at %v: claimed %v err %v (record %+v), want claimed", id, now, claimed, err, rec)
	}
}

// mustComplete claims id with token "tok-a" at now and completes it with
// resp, kept for TTL.
func mustComplete(t *testing.T, s idempotency.Store, id idempotency.ID, fp idempotency.Fingerprint, resp idempotency.Response, now time.Time) {
	t.Helper()
	mustClaim(t, s, id, fp, "tok-a", now)
	if err := s.Complete(context.Background(), id, "tok-a", resp, now, TTL); err != nil {
		t.Fatal(err)
	}
}

func checkResponse(t *testing.T, got, want idempotency.Response) {
	t.Helper()
	if got.Status != want.Status || got.Omitted != want.Omitted || got.Size != want.Size ||
		!bytes.Equal(got.Body, want.Body) || len(got.Header) != len(want.Header) ||
		(len(want.Header) > 0 && !reflect.DeepEqual(got.Header, want.Header)) {
		t.Fatalf("stored response:\n got %+v\nwant %+v", got, want)
	}
}

func fingerprint(s string) idempotency.Fingerprint { return sha256.Sum256([]byte(s)) }
