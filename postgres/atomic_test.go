package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
)

// chargesTable is the handler's own table in the Atomic tests: one row per
// charge, with the key it was made under.
const chargesTable = `CREATE TABLE IF NOT EXISTS charges (
	id  bigserial PRIMARY KEY,
	key text NOT NULL,
	pid integer NOT NULL
)`

// charge is the Atomic tests' handler: it inserts a charge through the
// request's transaction and answers 201 with its id. Request headers steer
// it: X-Status answers that status after the insert, X-Fail runs a failing
// statement first (ignoring its error), X-Big writes that many bytes,
// X-Length declares a Content-Length it does not write.
func charge(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tx := postgres.Tx(ctx)
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Header.Get("X-Fail") != "" {
		_, _ = tx.Exec(ctx, `SELECT 1/0`) // aborts the transaction; the handler does not look
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO charges (key, pid) VALUES ($1, 0) RETURNING id`,
		r.Header.Get("Idempotency-Key")).Scan(&id); err != nil && r.Header.Get("X-Fail") == "" {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Charge", fmt.Sprint(id))
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret-of-the-first-client"})
	status := http.StatusCreated
	if s := r.Header.Get("X-Status"); s != "" {
		fmt.Sscan(s, &status)
	}
	if n := r.Header.Get("X-Length"); n != "" {
		w.Header().Set("Content-Length", n) // not what it writes: a handler's bug
	}
	w.WriteHeader(status)
	if n := r.Header.Get("X-Big"); n != "" {
		var size int
		fmt.Sscan(n, &size)
		_, _ = w.Write([]byte(strings.Repeat("x", size)))
		return
	}
	fmt.Fprintf(w, `{"charge":%d}`, id)
}

// requestID is an outer middleware: a header of its own on every response.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		next.ServeHTTP(w, r)
	})
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

func (a answer) reason() string {
	var p idempotency.Problem
	_ = json.Unmarshal([]byte(a.body), &p)
	return p.Reason
}

// post sends a POST with key (none if "") and the header fields h to url.
func post(t *testing.T, url, key, body string, h ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// charges counts the charges made under key.
func charges(t *testing.T, pool *pgxpool.Pool, key string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM charges WHERE key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// record returns key's live record (global scope), if any.
func record(t *testing.T, pool *pgxpool.Pool, key string) (idempotency.Record, bool) {
	t.Helper()
	rec, ok, err := postgres.NewIdempotencyStore(pool).Get(context.Background(), idempotency.ID{Key: key}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return rec, ok
}

func newAtomic(t *testing.T, pool *pgxpool.Pool, c idempotency.Config) *postgres.Atomic {
	t.Helper()
	if c.ErrorLog == nil {
		c.ErrorLog = log.New(testLog{t}, "", 0)
	}
	a, err := postgres.NewAtomic(pool, c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// servePanicking serves a keyed POST with h, which must panic with want.
func servePanicking(t *testing.T, h http.Handler, key string, want any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	r.Header.Set("Idempotency-Key", key)
	defer func() {
		if p := recover(); p != want {
			t.Errorf("recovered %v, want the panic %v", p, want)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), r)
}

func TestAtomic(t *testing.T) {
	_, pool := start(t)
	if _, err := pool.Exec(context.Background(), chargesTable); err != nil {
		t.Fatal(err)
	}
	a := newAtomic(t, pool, idempotency.Config{MaxResponseBytes: 1000})
	srv := httptest.NewServer(requestID(a.Handler(http.HandlerFunc(charge))))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	newKey := func() string { return "k-" + rand.Text() }

	t.Run("declared length not written rolls back", func(t *testing.T) {
		// A handler that declares a Content-Length it does not write
		// would have its client's answer broken by net/http, and the
		// record would replay the short body as whole. Nothing has left
		// before the commit: the work is rolled back, the client told,
		// and its retry runs the handler.
		key := newKey()
		for _, length := range []string{"100", "3"} {
			got := post(t, srv.URL, key, `{"amount":1}`, "X-Length", length)
			if got.status != 500 || got.reason() != idempotency.ReasonResponseCut || !strings.Contains(got.body, "Content-Length "+length) {
				t.Fatalf("Content-Length %s not written: %v, want 500 response_cut naming it", length, got)
			}
			if n := charges(t, pool, key); n != 0 {
				t.Fatalf("%d charges after a rolled-back request, want 0", n)
			}
		}
		if got := post(t, srv.URL, key, `{"amount":1}`); got.status != 201 || charges(t, pool, key) != 1 {
			t.Fatalf("the retry: %v with %d charges, want 201 and one charge", got, charges(t, pool, key))
		}
	})

	t.Run("once then replay", func(t *testing.T) {
		key := newKey()
		first := post(t, srv.URL, key, `{"amount":1}`, "X-Request-Id", "r1")
		if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" || first.header.Get("Set-Cookie") == "" {
			t.Fatalf("first: %v %v, want 201 with its cookie, not replayed", first, first.header)
		}
		if n := charges(t, pool, key); n != 1 {
			t.Fatalf("%d charges after the first request, want 1", n)
		}
		rec, ok := record(t, pool, key)
		if !ok || rec.State != idempotency.Completed || rec.Response.Status != 201 || string(rec.Response.Body) != first.body {
			t.Fatalf("record: %v %+v, want completed with the first response", ok, rec)
		}
		if rec.Response.Header.Get("Set-Cookie") != "" || rec.Response.Header.Get("X-Request-Id") != "" {
			t.Fatalf("the record keeps %v: want neither Set-Cookie nor the outer middleware's field", rec.Response.Header)
		}
		again := post(t, srv.URL, key, `{"amount":1}`, "X-Request-Id", "r2")
		switch {
		case again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true":
			t.Fatalf("retry: %v replayed %q, want the replay of %v", again, again.header.Get("Idempotent-Replayed"), first)
		case again.header.Get("X-Charge") != first.header.Get("X-Charge") || again.header.Get("Set-Cookie") != "":
			t.Fatalf("retry header %v: want the handler's X-Charge and no cookie", again.header)
		case again.header.Get("X-Request-Id") != "r2":
			t.Fatalf("retry X-Request-Id %q, want the current request's r2", again.header.Get("X-Request-Id"))
		}
		if n := charges(t, pool, key); n != 1 {
			t.Fatalf("%d charges after the retry, want 1", n)
		}
		if reused := post(t, srv.URL, key, `{"amount":2}`); reused.status != 422 || reused.reason() != idempotency.ReasonKeyReused {
			t.Fatalf("another payload with the key: %v, want 422 key_reused", reused)
		}
	})

	t.Run("5xx rolls back", func(t *testing.T) {
		key := newKey()
		failed := post(t, srv.URL, key, `{}`, "X-Status", "503")
		if failed.status != 503 || !strings.HasPrefix(failed.body, `{"charge":`) {
			t.Fatalf("first: %v, want the handler's own 503", failed)
		}
		if _, ok := record(t, pool, key); ok || charges(t, pool, key) != 0 {
			t.Fatalf("after a 503: record %v, %d charges; want neither", ok, charges(t, pool, key))
		}
		if ok := post(t, srv.URL, key, `{}`); ok.status != 201 || ok.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry after a 503: %v, want a new run (201)", ok)
		}
		if n := charges(t, pool, key); n != 1 {
			t.Fatalf("%d charges, want 1", n)
		}
	})

	t.Run("failed transaction is not a success", func(t *testing.T) {
		// The handler's statement fails and it answers 201 anyway: the
		// transaction cannot commit, so the client must not hear 201.
		key := newKey()
		got := post(t, srv.URL, key, `{}`, "X-Fail", "1")
		if got.status != 503 || got.reason() != idempotency.ReasonStoreUnavailable || got.header.Get("X-Charge") != "" {
			t.Fatalf("got %v %v, want 503 store_unavailable without the handler's fields", got, got.header)
		}
		if _, ok := record(t, pool, key); ok || charges(t, pool, key) != 0 {
			t.Fatalf("record %v, %d charges; want neither", ok, charges(t, pool, key))
		}
	})

	t.Run("panic rolls back", func(t *testing.T) {
		key := newKey()
		h := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := postgres.Tx(r.Context()).Exec(r.Context(), `INSERT INTO charges (key, pid) VALUES ($1, 0)`, key); err != nil {
				t.Error(err)
			}
			panic("boom")
		}))
		servePanicking(t, h, key, "boom")
		if _, ok := record(t, pool, key); ok || charges(t, pool, key) != 0 {
			t.Fatalf("after a panic: record %v, %d charges; want neither", ok, charges(t, pool, key))
		}
	})

	t.Run("a panic after the handler rolls back", func(t *testing.T) {
		// Config.Keep is the user's code, called after the handler: when it
		// panics the transaction must still end, or its lock would hold the
		// key.
		keepPanics := newAtomic(t, pool, idempotency.Config{Keep: func(int) bool { panic("keep") }})
		key := newKey()
		servePanicking(t, keepPanics.Handler(http.HandlerFunc(charge)), key, "keep")
		if got := post(t, srv.URL, key, `{}`); got.status != 201 || charges(t, pool, key) != 1 {
			t.Fatalf("retry: %v, %d charges; want 201 and 1 (the key free, nothing committed before)", got, charges(t, pool, key))
		}
	})

	t.Run("in progress", func(t *testing.T) {
		key := newKey()
		inside, release := make(chan struct{}), make(chan struct{})
		slow := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inside)
			<-release
			charge(w, r)
		}))
		slowSrv := httptest.NewServer(slow)
		defer slowSrv.Close()
		done := make(chan answer, 1)
		go func() { done <- post(t, slowSrv.URL, key, `{}`) }()
		<-inside
		for _, body := range []string{`{}`, `{"other":1}`} {
			if got := post(t, srv.URL, key, body); got.status != 409 || got.reason() != idempotency.ReasonInProgress || got.header.Get("Retry-After") == "" {
				t.Fatalf("while the first runs, %s: %v, want 409 in_progress with Retry-After", body, got)
			}
		}
		close(release)
		first := <-done
		if got := post(t, srv.URL, key, `{}`); first.status != 201 || got.body != first.body || got.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("first %v, then %v: want 201 and its replay", first, got)
		}
		if n := charges(t, pool, key); n != 1 {
			t.Fatalf("%d charges, want 1", n)
		}
	})

	t.Run("lock held by another request", func(t *testing.T) {
		// Another transaction holds the keys' locks, as a request that is
		// running (or replaying) does: a key with a record is replayed all
		// the same, a key without one is refused with 409 until the lock
		// goes.
		done, fresh := newKey(), newKey()
		first := post(t, srv.URL, done, `{}`)
		holder, err := pool.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback(context.Background())
		for _, k := range []string{done, fresh} {
			if _, err := holder.Exec(context.Background(), `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, idempotency.ID{Key: k}.String()); err != nil {
				t.Fatal(err)
			}
		}
		if got := post(t, srv.URL, done, `{}`); got.status != 201 || got.body != first.body || got.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("completed key while its lock is held: %v, want the replay of %v", got, first)
		}
		if got := post(t, srv.URL, fresh, `{}`); got.status != 409 || got.reason() != idempotency.ReasonInProgress {
			t.Fatalf("new key while its lock is held: %v, want 409 in_progress", got)
		}
		if err := holder.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := post(t, srv.URL, fresh, `{}`); got.status != 201 || charges(t, pool, fresh) != 1 {
			t.Fatalf("new key once the lock is gone: %v, want 201 and one charge", got)
		}
	})

	t.Run("response too large", func(t *testing.T) {
		key := newKey()
		first := post(t, srv.URL, key, `{}`, "X-Big", "5000")
		if first.status != 201 || len(first.body) != 5000 {
			t.Fatalf("first: %d with %d bytes, want 201 with all 5000", first.status, len(first.body))
		}
		got := post(t, srv.URL, key, `{}`)
		if got.status != 410 || got.reason() != idempotency.ReasonResponseTooLarge || charges(t, pool, key) != 1 {
			t.Fatalf("retry: %v, %d charges; want 410 response_too_large and 1 charge", got, charges(t, pool, key))
		}
	})

	// A 204 or a 304 whose handler writes a body anyway (net/http would
	// refuse it): the held body was kept and counted, so that over
	// MaxResponseBytes the retry got 410 response_too_large instead of the
	// replay of the 204 its client got.
	t.Run("no body status", func(t *testing.T) {
		for _, status := range []int{http.StatusNoContent, http.StatusNotModified} {
			a := newAtomic(t, pool, idempotency.Config{MaxResponseBytes: 10})
			srv := httptest.NewServer(a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v1"`)
				w.WriteHeader(status)
				io.WriteString(w, strings.Repeat("a body that goes nowhere ", 4))
			})))
			key := newKey()
			first := post(t, srv.URL, key, `{}`)
			got := post(t, srv.URL, key, `{}`)
			srv.Close()
			if first.status != status || first.body != "" || got.status != status || got.body != "" ||
				got.header.Get("Idempotent-Replayed") != "true" || got.header.Get("ETag") != `"v1"` {
				t.Errorf("%d: first %v, retry %v (replayed %q, ETag %q); want the replay of %d without a body",
					status, first, got, got.header.Get("Idempotent-Replayed"), got.header.Get("ETag"), status)
			}
		}
	})

	// The handler's trailers (declared in Trailer before its status, or
	// set under http.TrailerPrefix): the held answer dropped their values
	// and sent a Content-Length, so that the client got none, and the
	// record kept none, so that the retry got none either.
	// A HEAD request (among Config.Methods) whose handler writes the body
	// a GET would get, as handlers shared by GET and HEAD do: net/http
	// drops it, but the held body was kept and counted, so that over
	// MaxResponseBytes the retry got 410 response_too_large instead of the
	// replay of the first answer.
	t.Run("HEAD", func(t *testing.T) {
		a := newAtomic(t, pool, idempotency.Config{Methods: []string{"HEAD", "POST"}, MaxResponseBytes: 10})
		srv := httptest.NewServer(a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			io.WriteString(w, strings.Repeat("a body a GET would get ", 10))
		})))
		defer srv.Close()
		key := newKey()
		var got [2]*http.Response
		for i := range got {
			req, _ := http.NewRequest(http.MethodHead, srv.URL, nil)
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got[i] = resp
		}
		if got[1].StatusCode != http.StatusOK || got[1].Header.Get("Idempotent-Replayed") != "true" || got[1].Header.Get("ETag") != `"v1"` ||
			got[1].ContentLength != got[0].ContentLength {
			t.Errorf("HEAD retry: %d replayed %q ETag %q Content-Length %d (first %d %d); want the replay of the first answer",
				got[1].StatusCode, got[1].Header.Get("Idempotent-Replayed"), got[1].Header.Get("ETag"), got[1].ContentLength, got[0].StatusCode, got[0].ContentLength)
		}
	})

	t.Run("trailers", func(t *testing.T) {
		a := newAtomic(t, pool, idempotency.Config{})
		srv := httptest.NewServer(a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "body")
			w.Header().Set("X-Sum", "42")
			w.Header().Set(http.TrailerPrefix+"X-Rows", "3")
		})))
		defer srv.Close()
		key := newKey()
		for i, want := range []string{"", "true"} {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || string(body) != "body" || resp.Header.Get("Idempotent-Replayed") != want ||
				resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Rows") != "3" {
				t.Errorf("answer %d: %d %q replayed %q, trailers %v; want 201 body with X-Sum 42 and X-Rows 3", i, resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"), resp.Trailer)
			}
		}
	})

	t.Run("without a key", func(t *testing.T) {
		// No key, not required: the handler still runs in a transaction,
		// committed or rolled back by its status.
		if got := post(t, srv.URL, "", `{}`, "X-Status", "500"); got.status != 500 {
			t.Fatalf("got %v, want the handler's 500", got)
		}
		if got := post(t, srv.URL, "", `{}`); got.status != 201 {
			t.Fatalf("got %v, want 201", got)
		}
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM charges WHERE key = ''`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d charges without a key (%v), want 1 (the 500 rolled back)", n, err)
		}
		called, tx := false, pgx.Tx(nil)
		get := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called, tx = true, postgres.Tx(r.Context()) }))
		get.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if !called || tx != nil {
			t.Fatalf("GET: handler called %v, Tx %v; want called, without a transaction (not a covered method)", called, tx)
		}
	})

	t.Run("the handler cannot end the transaction", func(t *testing.T) {
		var commit, rollback error
		h := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tx := postgres.Tx(r.Context())
			commit, rollback = tx.Commit(r.Context()), tx.Rollback(r.Context())
			w.WriteHeader(http.StatusNoContent)
		}))
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Idempotency-Key", newKey())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !errors.Is(commit, postgres.ErrTxManaged) || !errors.Is(rollback, postgres.ErrTxManaged) || w.Code != 204 {
			t.Fatalf("Commit %v, Rollback %v, status %d; want ErrTxManaged twice and the handler's 204", commit, rollback, w.Code)
		}
	})

	t.Run("cancelled before any answer", func(t *testing.T) {
		key := newKey()
		ctx, cancel := context.WithCancel(context.Background())
		h := a.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := postgres.Tx(r.Context()).Exec(r.Context(), `INSERT INTO charges (key, pid) VALUES ($1, 0)`, key); err != nil {
				t.Error(err)
			}
			cancel() // the client gives up
			<-r.Context().Done()
		}))
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
		r.Header.Set("Idempotency-Key", key)
		h.ServeHTTP(httptest.NewRecorder(), r)
		if _, ok := record(t, pool, key); ok || charges(t, pool, key) != 0 {
			t.Fatalf("record %v, %d charges; want neither", ok, charges(t, pool, key))
		}
	})

	t.Run("idle past the lease", func(t *testing.T) {
		// A holder that stops talking to the database for longer than the
		// lease loses its transaction (idle_in_transaction_session_timeout):
		// the key is free again and the holder's answer is 503.
		short := newAtomic(t, pool, idempotency.Config{Lease: 100 * time.Millisecond})
		key := newKey()
		h := short.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			tx := postgres.Tx(ctx)
			var pid int
			if err := tx.QueryRow(ctx, `INSERT INTO charges (key, pid) VALUES ($1, pg_backend_pid()) RETURNING pid`, key).Scan(&pid); err != nil {
				t.Error(err)
			}
			idemproc.WaitFor(t, "PostgreSQL to end the idle session", func() bool {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n)
				return err == nil && n == 0
			})
			w.WriteHeader(http.StatusCreated)
		}))
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 503 || charges(t, pool, key) != 0 {
			t.Fatalf("status %d, %d charges; want 503 and none", w.Code, charges(t, pool, key))
		}
		if got := post(t, srv.URL, key, ``); got.status != 201 || charges(t, pool, key) != 1 {
			t.Fatalf("retry: %v, %d charges; want 201 and 1", got, charges(t, pool, key))
		}
	})

	t.Run("scoped", func(t *testing.T) {
		scoped := newAtomic(t, pool, idempotency.Config{Scope: func(r *http.Request) string { return r.Header.Get("X-Client") }})
		ssrv := httptest.NewServer(scoped.Handler(http.HandlerFunc(charge)))
		defer ssrv.Close()
		key := newKey()
		alice := post(t, ssrv.URL, key, `{}`, "X-Client", "alice")
		bob := post(t, ssrv.URL, key, `{}`, "X-Client", "bob")
		if alice.status != 201 || bob.status != 201 || alice.body == bob.body || bob.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("alice %v, bob %v: want two executions", alice, bob)
		}
		if n := charges(t, pool, key); n != 2 {
			t.Fatalf("%d charges, want 2", n)
		}
	})
}

func TestNewAtomicConfig(t *testing.T) {
	for _, c := range []idempotency.Config{
		{Store: postgres.NewIdempotencyStore(nil)},
		{ReleaseTooLarge: true},
		{Lease: -time.Second},
	} {
		if _, err := postgres.NewAtomic(nil, c); !errors.Is(err, idempotency.ErrInvalidConfig) {
			t.Errorf("NewAtomic(%+v): %v, want ErrInvalidConfig", c, err)
		}
	}
}
