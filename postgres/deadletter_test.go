package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
	"github.com/yaoki-go/yaoki/retry"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newPool returns a pool of at most conns connections to dsn, closed when
// tb ends.
func newPool(tb testing.TB, dsn string, conns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// letter returns a letter of queue q due at due.
func letter(id, q string, due time.Time) deadletter.Letter {
	return deadletter.Letter{ID: id, Queue: q, Key: "key-" + id, Payload: []byte("work " + id),
		Reason: "attempts exhausted", Error: "503 Service Unavailable", Attempts: 3, Created: t0, Due: due}
}

// sentinel names the deadletter error err is, "" for nil.
func sentinel(err error) string {
	for _, s := range []error{deadletter.ErrInvalidLetter, deadletter.ErrConflict, deadletter.ErrNotFound,
		deadletter.ErrLeaseLost, deadletter.ErrFull} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// show writes the letters as a transcript line: every field, times in
// seconds after t0, a token only as whether there is one (the stores make
// them differently).
func show(ls ...deadletter.Letter) string {
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "{%q %q %q %q %q %q a%d r%d c%v d%v p%v t%v l%v nil%v} ", l.ID, l.Queue, l.Key, l.Payload,
			l.Reason, l.Error, l.Attempts, l.Redrives, l.Created.Sub(t0), l.Due.Sub(t0), l.Parked,
			l.Token != "", when(l.LeaseEnd), l.Payload == nil)
		if l.Created.Location() != time.UTC || l.Due.Location() != time.UTC || l.LeaseEnd.Location() != time.UTC {
			b.WriteString("(not UTC) ")
		}
	}
	return b.String()
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(t0).String()
}

// TestDeadLettersLikeMemory runs the same random operations on a
// deadletter.Memory and on DeadLetters in lockstep, on stepped time, and
// compares every result: the PostgreSQL store behaves as the reference
// does, errors included.
func TestDeadLettersLikeMemory(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	mem, err := deadletter.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	stores := [2]deadletter.Store{mem, postgres.NewDeadLetters(pool)}
	// Each store's tokens, by letter: the one its last claim gave and the
	// one before (stale).
	type tokens struct{ last, stale map[string]string }
	tok := [2]tokens{{map[string]string{}, map[string]string{}}, {map[string]string{}, map[string]string{}}}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "B", "é", "a'b", `c\d`, "日本"}
	queues := []string{"q1", "q2"}
	now := t0
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	for step := range 3000 {
		var op string
		var do func(i int, s deadletter.Store) string
		switch r := rng.IntN(100); {
		case r < 20:
			l := letter(pick(ids), pick(queues), now.Add(time.Duration(rng.IntN(5)-1)*time.Second))
			if rng.IntN(4) == 0 {
				l.Payload = []byte("other work") // a conflict when the ID is stored
			}
			if rng.IntN(8) == 0 {
				l.Payload = nil
			}
			if rng.IntN(10) == 0 {
				l.Parked = true
			}
			if rng.IntN(20) == 0 {
				l.Created = time.Time{} // invalid
			}
			l.Token, l.LeaseEnd = "ignored", now
			op = "put " + show(l)
			do = func(i int, s deadletter.Store) string { return sentinel(s.Put(ctx, l)) }
		case r < 40:
			q, max, lease := pick(queues), rng.IntN(4), time.Duration(rng.IntN(4))*time.Second
			op = fmt.Sprintf("claim %s max %d lease %v", q, max, lease)
			do = func(i int, s deadletter.Store) string {
				ls, err := s.Claim(ctx, q, now, max, lease)
				for _, l := range ls {
					tok[i].stale[l.ID], tok[i].last[l.ID] = tok[i].last[l.ID], l.Token
				}
				return sentinel(err) + " " + show(ls...)
			}
		case r < 55:
			id, which := pick(ids), rng.IntN(3)
			op = fmt.Sprintf("done %s token %d", id, which)
			do = func(i int, s deadletter.Store) string {
				return sentinel(s.Done(ctx, id, [...]string{tok[i].last[id], tok[i].stale[id], ""}[which]))
			}
		case r < 70:
			id, which := pick(ids), rng.IntN(3)
			l := deadletter.Letter{ID: id, Reason: "redrive failed", Error: "timeout " + strconv.Itoa(step),
				Attempts: rng.IntN(6) - 1, Redrives: rng.IntN(4), Due: now.Add(time.Duration(rng.IntN(4)) * time.Second),
				Parked: rng.IntN(4) == 0}
			op = fmt.Sprintf("fail %s token %d %s", id, which, show(l))
			do = func(i int, s deadletter.Store) string {
				l := l
				l.Token = [...]string{tok[i].last[id], tok[i].stale[id], ""}[which]
				return sentinel(s.Fail(ctx, l))
			}
		case r < 76:
			id := pick(ids)
			op = "get " + id
			do = func(i int, s deadletter.Store) string {
				l, err := s.Get(ctx, id)
				return sentinel(err) + " " + show(l)
			}
		case r < 82:
			q, after, max := pick(append(queues, "")), pick(append(ids, "", "a0")), rng.IntN(5)
			op = fmt.Sprintf("list %q after %q max %d", q, after, max)
			do = func(i int, s deadletter.Store) string {
				ls, err := s.List(ctx, q, after, max)
				return sentinel(err) + " " + show(ls...)
			}
		case r < 87:
			id, at := pick(ids), now.Add(time.Duration(rng.IntN(3))*time.Second)
			op = "requeue " + id
			do = func(i int, s deadletter.Store) string { return sentinel(s.Requeue(ctx, id, at)) }
		case r < 90:
			id := pick(ids)
			op = "delete " + id
			do = func(i int, s deadletter.Store) string { return sentinel(s.Delete(ctx, id)) }
		case r < 95:
			q := pick(append(queues, ""))
			op = "count " + q
			do = func(i int, s deadletter.Store) string {
				c, err := s.Count(ctx, q, now)
				return fmt.Sprintf("%s %+v", sentinel(err), c)
			}
		default:
			now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
			continue
		}
		want, got := do(0, stores[0]), do(1, stores[1])
		if got != want {
			t.Fatalf("step %d at %v: %s\ngot  %s\nwant %s (memory)", step, now.Sub(t0), op, got, want)
		}
	}
}

// TestDeadLettersConcurrentClaimers: two claimers, each with its own pool
// (as two processes would be) and eight goroutines claiming small batches,
// take 200 due letters between them: each letter exactly once.
func TestDeadLettersConcurrentClaimers(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	const n = 200
	for i := range n {
		if err := postgres.NewDeadLetters(pool).Put(ctx, letter(fmt.Sprintf("l%03d", i), "q", t0.Add(-time.Duration(i%7)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		got = map[string]int{} // claims per letter
		wg  sync.WaitGroup
	)
	errs := make(chan error, 16)
	for c := range 2 {
		store := postgres.NewDeadLetters(newPool(t, srv.DSN, 8))
		for range 8 {
			wg.Go(func() {
				for {
					ls, err := store.Claim(ctx, "q", t0, 1+c*2, time.Hour)
					if err != nil {
						errs <- err
						return
					}
					if len(ls) == 0 {
						return
					}
					mu.Lock()
					for _, l := range ls {
						got[l.ID]++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("%d letters claimed, want %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("letter %s claimed %d times, want once", id, k)
		}
	}
	c, err := postgres.NewDeadLetters(pool).Count(ctx, "q", t0)
	if err != nil || c != (deadletter.Counts{Held: n}) {
		t.Errorf("count after the claims: %+v %v, want %d held", c, err, n)
	}
}

// TestDeadLettersClaimSkipsLocked: a row locked by another transaction
// (another claimer in the middle of its statement, an operator's
// transaction) is passed over, not waited for.
func TestDeadLettersClaimSkipsLocked(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	store := postgres.NewDeadLetters(pool)
	for _, id := range []string{"a", "b", "c"} {
		if err := store.Put(ctx, letter(id, "q", t0)); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+postgres.DeadLettersTable+` WHERE id = 'a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second) // a claim that waited for the lock would end here
	defer cancel()
	ls, err := store.Claim(wait, "q", t0, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(ls); !slices.Equal(ids, []string{"b", "c"}) {
		t.Fatalf("claimed %v while a is locked, want [b c]", ids)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if ls, err := store.Claim(ctx, "q", t0, 10, time.Minute); err != nil || !slices.Equal(idsOf(ls), []string{"a"}) {
		t.Fatalf("claim after the lock is released: %v %v, want [a]", idsOf(ls), err)
	}
}

func idsOf(ls []deadletter.Letter) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return ids
}

// TestMigrateDeadLettersOnExisting: a database of the first release (the
// idempotency table only, with a record in it) gets the dead-letter table
// from Migrate, keeps its record, and a second Migrate changes nothing.
func TestMigrateDeadLettersOnExisting(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.DSN, 4)
	ctx := context.Background()
	if err := postgres.MigrateFirst(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+postgres.IdempotencyTable+` VALUES ('s', 'k', 2, '\x00', NULL, $1, NULL, $1)`, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT 1 FROM `+postgres.DeadLettersTable); err == nil {
		t.Fatal("the dead-letter table exists before its migration")
	}
	for range 2 {
		if err := postgres.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		var names []string
		rows, err := pool.Query(ctx, `SELECT name FROM `+postgres.MigrationsTable+` ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"0001_idempotency", "0002_dead_letters"}; !slices.Equal(names, want) {
			t.Fatalf("migrations recorded: %v, want %v", names, want)
		}
	}
	var records int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+postgres.IdempotencyTable).Scan(&records); err != nil || records != 1 {
		t.Fatalf("idempotency records after the migration: %d %v, want 1", records, err)
	}
	store := postgres.NewDeadLetters(pool)
	if err := store.Put(ctx, letter("x", "q", t0)); err != nil {
		t.Fatal(err)
	}
	if ls, err := store.Claim(ctx, "q", t0, 1, time.Minute); err != nil || len(ls) != 1 {
		t.Fatalf("claim on the migrated database: %v %v", ls, err)
	}
}

// TestDeadLettersLargePayload: a payload of deadletter.MaxPayloadBytes (1
// MiB, every byte value) goes in and comes back whole, from Get and from
// Claim; one byte more is refused.
func TestDeadLettersLargePayload(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	store := postgres.NewDeadLetters(pool)
	big := make([]byte, deadletter.MaxPayloadBytes)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	l := letter("big", "q", t0)
	l.Payload = big
	if err := store.Put(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, l); err != nil { // a retried Put: compared, the same
		t.Fatalf("put again: %v", err)
	}
	l.Payload = slices.Clone(big)
	l.Payload[len(big)-1]++
	if err := store.Put(ctx, l); !errors.Is(err, deadletter.ErrConflict) {
		t.Fatalf("put of the ID with a payload differing in its last byte: %v, want ErrConflict", err)
	}
	got, err := store.Get(ctx, "big")
	if err != nil || !bytes.Equal(got.Payload, big) {
		t.Fatalf("get: %d bytes, equal %v, %v", len(got.Payload), bytes.Equal(got.Payload, big), err)
	}
	ls, err := store.Claim(ctx, "q", t0, 1, time.Minute)
	if err != nil || len(ls) != 1 || !bytes.Equal(ls[0].Payload, big) {
		t.Fatalf("claim: %d letters, %v", len(ls), err)
	}
	l = letter("bigger", "q", t0)
	l.Payload = make([]byte, deadletter.MaxPayloadBytes+1)
	if err := store.Put(ctx, l); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Fatalf("put of %d bytes: %v, want ErrInvalid", len(l.Payload), err)
	}
}

// oddIDs are IDs and keys that SQL quoting, escaping or a collation could
// get wrong. They sort bytewise in Go: List must return them in that order.
var oddIDs = []string{`it's`, `"quoted"`, `back\slash`, `\\x00`, `%_like`, `semi;colon`, `--comment`,
	"tab\tnewline\n", "A", "a", "Z", "z", "é", "e\u0301", "日本語", "🙂", "ß", "İ", "ﬃ", "\u00a0nbsp"}

// TestDeadLettersOddText: such IDs, queues and keys go in and come back
// unchanged, and List pages through them in Go's order, in a database of
// the C collation and in one whose default collation is ICU's English
// (where "a" sorts before "Z").
func TestDeadLettersOddText(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	_, icuErr := pool.Exec(ctx, `CREATE DATABASE icu TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`)
	if icuErr != nil {
		t.Logf("no ICU database (%v): testing the C collation only", icuErr)
	}
	u, err := url.Parse(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/icu"
	dbs := map[string]*pgxpool.Pool{"C": pool}
	if icuErr == nil {
		icu := newPool(t, u.String(), 4)
		if err := postgres.Migrate(ctx, icu); err != nil {
			t.Fatal(err)
		}
		var aFirst bool
		if err := icu.QueryRow(ctx, `SELECT 'a' < 'Z'`).Scan(&aFirst); err != nil || !aFirst {
			t.Fatalf("the ICU database does not sort a before Z (%v): the test would prove nothing", err)
		}
		dbs["ICU en-US"] = icu
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			store := postgres.NewDeadLetters(db)
			for i, id := range oddIDs {
				l := letter(id, oddIDs[len(oddIDs)-1-i], t0)
				l.Key, l.Reason, l.Error = id, id, id
				if err := store.Put(ctx, l); err != nil {
					t.Fatalf("put %q: %v", id, err)
				}
				got, err := store.Get(ctx, id)
				if err != nil || show(got) != show(l) {
					t.Fatalf("get %q: %v\ngot  %s\nwant %s", id, err, show(got), show(l))
				}
				if ls, err := store.List(ctx, l.Queue, "", 10); err != nil || len(ls) != 1 || ls[0].ID != id {
					t.Fatalf("list of queue %q: %v %v, want [%q]", l.Queue, idsOf(ls), err, id)
				}
			}
			want := slices.Sorted(slices.Values(oddIDs))
			var got []string
			for after := ""; ; {
				ls, err := store.List(ctx, "", after, 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(ls) == 0 {
					break
				}
				got = append(got, idsOf(ls)...)
				after = ls[len(ls)-1].ID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("listed in pages of 3:\n%q\nwant Go's order\n%q", got, want)
			}
		})
	}
}

// TestDeadLettersNotText: what a text column cannot hold. ID, Queue and
// Key must be valid UTF-8 without NUL (refused with ErrInvalid, and never
// found); Reason and Error are stored with such bytes replaced.
func TestDeadLettersNotText(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	store := postgres.NewDeadLetters(pool)
	for _, bad := range []string{"\xff", "a\x00b", "\xc3("} {
		for field, set := range map[string]func(*deadletter.Letter){
			"ID":    func(l *deadletter.Letter) { l.ID = bad },
			"Queue": func(l *deadletter.Letter) { l.Queue = bad },
			"Key":   func(l *deadletter.Letter) { l.Key = bad },
		} {
			l := letter("ok", "q", t0)
			set(&l)
			if err := store.Put(ctx, l); !errors.Is(err, deadletter.ErrInvalidLetter) || !strings.Contains(err.Error(), field) {
				t.Errorf("put with %s %q: %v, want ErrInvalid naming %s", field, bad, err, field)
			}
		}
		if _, err := store.Get(ctx, bad); !errors.Is(err, deadletter.ErrNotFound) {
			t.Errorf("get %q: %v, want ErrNotFound", bad, err)
		}
		if err := store.Delete(ctx, bad); !errors.Is(err, deadletter.ErrNotFound) {
			t.Errorf("delete %q: %v, want ErrNotFound", bad, err)
		}
		if err := store.Requeue(ctx, bad, t0); !errors.Is(err, deadletter.ErrNotFound) {
			t.Errorf("requeue %q: %v, want ErrNotFound", bad, err)
		}
		if err := store.Done(ctx, "ok", bad); !errors.Is(err, deadletter.ErrLeaseLost) {
			t.Errorf("done with token %q: %v, want ErrLeaseLost", bad, err)
		}
		if ls, err := store.Claim(ctx, bad, t0, 1, time.Minute); err != nil || len(ls) != 0 {
			t.Errorf("claim in queue %q: %v %v, want nothing", bad, ls, err)
		}
		if ls, err := store.List(ctx, bad, "", 1); err != nil || len(ls) != 0 {
			t.Errorf("list of queue %q: %v %v, want nothing", bad, ls, err)
		}
		if _, err := store.List(ctx, "", bad, 1); !errors.Is(err, deadletter.ErrInvalidLetter) {
			t.Errorf("list after %q: %v, want ErrInvalid", bad, err)
		}
		if c, err := store.Count(ctx, bad, t0); err != nil || c.Total() != 0 {
			t.Errorf("count of queue %q: %+v %v, want none", bad, c, err)
		}
	}
	l := letter("msg", "q", t0)
	l.Reason, l.Error = "bad \xff byte", "nul \x00 byte and "+strings.Repeat("\xff", deadletter.MaxErrorBytes-15)
	if err := store.Put(ctx, l); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, "msg")
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != "bad \uFFFD byte" || !strings.HasPrefix(got.Error, "nul \uFFFD byte and \uFFFD") || len(got.Error) > deadletter.MaxErrorBytes {
		t.Fatalf("stored reason %q, error of %d bytes starting %q", got.Reason, len(got.Error), got.Error[:20])
	}
	if err := got.ValidateOutcome(); err != nil {
		t.Fatalf("the stored error no longer validates: %v", err)
	}
}

// TestDeadLettersTimes: times come back in UTC, truncated to the
// microsecond, whatever their location; a nil and an empty payload come
// back as they went in.
func TestDeadLettersTimes(t *testing.T) {
	_, pool := start(t)
	ctx := context.Background()
	store := postgres.NewDeadLetters(pool)
	tokyo := time.FixedZone("JST", 9*3600)
	l := letter("t", "q", t0.Add(1234567891*time.Nanosecond).In(tokyo))
	l.Created = t0.Add(-999 * time.Nanosecond).In(tokyo)
	l.Payload = nil
	if err := store.Put(ctx, l); err != nil {
		t.Fatal(err)
	}
	e := letter("e", "q", t0.Add(time.Hour))
	e.Payload = []byte{}
	if err := store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, deadletter.Letter{ID: "e", Queue: "q", Key: "key-e", Created: t0}); err != nil {
		t.Fatalf("put again with a nil payload (the same work as an empty one): %v", err)
	}
	got, err := store.Get(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	wantDue, wantCreated := t0.Add(1234567*time.Microsecond), t0.Add(-time.Microsecond)
	if got.Due != wantDue || got.Created != wantCreated || got.Payload != nil {
		t.Fatalf("got due %v, created %v, payload %#v; want %v, %v, nil", got.Due, got.Created, got.Payload, wantDue, wantCreated)
	}
	ls, err := store.Claim(ctx, "q", t0.Add(2*time.Second).In(tokyo), 5, 1500*time.Nanosecond)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	if want := t0.Add(2*time.Second + time.Microsecond); ls[0].LeaseEnd != want {
		t.Fatalf("lease end %v, want %v", ls[0].LeaseEnd, want)
	}
	if got, err := store.Get(ctx, "e"); err != nil || got.Payload == nil || len(got.Payload) != 0 {
		t.Fatalf("empty payload came back as %#v, %v", got.Payload, err)
	}
}

// TestDeadLettersRedrivers: two redrivers, each over its own pool (two
// processes), four passes at a time each (eight goroutines), redrive 120 letters: a letter is
// never in two handlers at once; the ones that work are handled once and
// deleted, the ones that fail once are handled again after their backoff,
// the permanent failures are parked.
func TestDeadLettersRedrivers(t *testing.T) {
	srv, pool := start(t)
	ctx := context.Background()
	const n = 120
	for i := range n {
		if err := postgres.NewDeadLetters(pool).Put(ctx, letter(fmt.Sprintf("l%03d", i), "q", t0)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		calls    = map[string]int{}
		overlaps []string
	)
	handler := func(ctx context.Context, l deadletter.Letter) error {
		mu.Lock()
		if inFlight[l.ID] {
			overlaps = append(overlaps, l.ID)
		}
		inFlight[l.ID] = true
		calls[l.ID]++
		k := calls[l.ID]
		mu.Unlock()
		defer func() { mu.Lock(); delete(inFlight, l.ID); mu.Unlock() }()
		i, _ := strconv.Atoi(l.ID[1:])
		switch {
		case i%10 == 9:
			return retry.Permanent(errors.New("partner: 422 unprocessable"))
		case i%2 == 1 && k == 1:
			return errors.New("partner: 503")
		}
		return nil
	}
	var redrivers []*deadletter.Redriver
	for range 2 {
		r, err := deadletter.NewRedriver(deadletter.Config{Store: postgres.NewDeadLetters(newPool(t, srv.DSN, 4)),
			Queue: "q", Handler: handler, Batch: 7})
		if err != nil {
			t.Fatal(err)
		}
		redrivers = append(redrivers, r)
	}
	drain := func(now time.Time) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for _, r := range redrivers {
			for range 4 {
				wg.Go(func() {
					for {
						rep, err := r.RedriveAt(ctx, now)
						if err != nil {
							errs <- err
							return
						}
						if rep.Claimed == 0 {
							return
						}
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	drain(t0)
	drain(t0.Add(time.Hour)) // past every first backoff (at most 5 min)
	if len(overlaps) > 0 {
		t.Fatalf("letters in two handlers at once: %v", overlaps)
	}
	for i := range n {
		id := fmt.Sprintf("l%03d", i)
		want := 1
		if i%2 == 1 && i%10 != 9 {
			want = 2
		}
		if calls[id] != want {
			t.Errorf("%s handled %d times, want %d", id, calls[id], want)
		}
	}
	c, err := postgres.NewDeadLetters(pool).Count(ctx, "", t0.Add(time.Hour))
	if err != nil || c != (deadletter.Counts{Parked: n / 10}) {
		t.Fatalf("left: %+v %v, want %d parked", c, err, n/10)
	}
}
