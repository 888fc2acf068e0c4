package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/idempotency"
)

// Atomic runs a keyed request's handler and writes its idempotency record in
// one PostgreSQL transaction, which the handler does its own database work
// in: the effect and the record commit together or not at all, so they can
// never disagree, even when the process dies between two steps (the design
// of Stripe's "atomic phases"). The handler gets the transaction with Tx:
//
//	atomic, err := postgres.NewAtomic(pool, idempotency.Config{Scope: clientID})
//	...
//	mux.Handle("POST /charges", atomic.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		tx := postgres.Tx(r.Context())
//		_, err := tx.Exec(r.Context(), `INSERT INTO charges ...`)
//		...
//		w.WriteHeader(http.StatusCreated)
//	})))
//
// For a request with a key, in order:
//
//  1. The key, the body and the fingerprint are read as the idempotency
//     middleware reads them (same refusals: 400, 413).
//  2. A transaction begins, and one statement takes a transaction-level
//     advisory lock on a 64-bit hash of (scope, key) without waiting and
//     claims the key's row in IdempotencyTable. If the key has a live
//     record, the answer is the middleware's: a replay, 422 key_reused, or
//     410 response_too_large (whoever holds the lock: a request replaying
//     the record holds it for a moment too). If it has none and another
//     transaction holds the lock, the request is refused with 409
//     in_progress (the other request's fingerprint cannot be seen before
//     it commits, so a different request with the key also gets 409, and
//     422 once the first has committed).
//     The lock is in the database's advisory-lock space, which the
//     application shares; two keys whose hashes collide (about one pair
//     in 2^64) only refuse each other with 409 while both run.
//  3. The handler runs with the transaction in its request's context. Its
//     response is held in memory: nothing reaches the client before the
//     commit (no Flush, no informational 1xx responses).
//  4. If Config.Keep accepts the status, the record (status, the header
//     fields the handler set except Set-Cookie, body) is written in the same
//     transaction, which then commits; only then is the response sent. A
//     response over Config.MaxResponseBytes is sent in full but recorded
//     without its body (a retry gets 410, as from the middleware).
//  5. Otherwise (5xx, 408, 429; a handler that panics; a handler that wrote
//     nothing for a request whose context is done) the transaction rolls
//     back: no effect, no record, the key is free. The handler's response
//     is sent as it wrote it (a panic goes on).
//
// If the commit fails (the handler's own statement failed and aborted the
// transaction, the connection broke), the client gets 503
// store_unavailable and nothing is recorded; when the connection broke
// during COMMIT the outcome is unknown, and the retry with the same key
// either replays the committed response or runs the request. A process
// that dies at any step before the commit leaves a transaction that
// PostgreSQL rolls back when it sees the connection close; after the commit
// the record replays. A process cut off from the database without dying
// holds the key until PostgreSQL ends its session: the transaction's
// idle_in_transaction_session_timeout is set to Config.Lease (30 s), so a
// handler must not spend longer than that between two statements (calling
// another service, say) or it loses its transaction and answers 503.
//
// Only work done through the transaction is atomic with the record; a call
// to another service is not (send it the request's key). The handler must
// not commit or roll back the transaction itself: Tx's Commit and Rollback
// return ErrTxManaged (savepoints through its Begin work). A statement that
// fails aborts the whole transaction: run a statement that may fail, and
// after which the handler still answers, in a savepoint.
//
// A request with a covered method (Config.Methods) and no key, when the key
// is not required, also runs in a transaction, committed or rolled back by
// the same rule, without a record; a request with another method passes
// through untouched and Tx returns nil for it. Each request in a
// transaction holds a connection of db from the claim to the commit.
//
// One Atomic may wrap a server (Handler around a mux) and a route inside it
// (Require): the inner layer runs the handler in the outer layer's
// transaction, under the key the outer layer holds.
//
// The records live in IdempotencyTable beside those of IdempotencyStore and
// use the same Cleanup. Config.Store must be nil (Store returns the
// IdempotencyStore over db) and Config.ReleaseTooLarge false: a record
// cannot be released without undoing its effect. Every other field of
// idempotency.Config means what it means for the middleware;
// Config.StoreTimeout bounds the record's write, the commit and a rollback.
//
// Build an Atomic with NewAtomic (the zero value is not usable). It is safe
// for concurrent use, when db is (a *pgxpool.Pool is).
type Atomic struct {
	db    DB
	m     *idempotency.Middleware
	c     idempotency.Config // m's, with the defaults filled in
	store *IdempotencyStore
	idle  string // idle_in_transaction_session_timeout for the transaction, in ms
	// step, when set (by the tests), is called at the named steps of a keyed
	// request: "claimed", "recorded" (before COMMIT), "committed" (before the
	// response is sent).
	step func(name string)
}

// ErrTxManaged is returned by Commit and Rollback of the transaction that
// Tx returns: Atomic commits or rolls it back after the handler returns.
var ErrTxManaged = errors.New("postgres: the atomic handler's transaction is committed or rolled back by postgres.Atomic, not by the handler: answer with a status that Config.Keep refuses (5xx) to roll it back")

// NewAtomic returns an Atomic over db that applies c (see Atomic for what
// each field means). A field out of range is reported as idempotency.New
// reports it, matching idempotency.ErrInvalidConfig; so is a Store or
// ReleaseTooLarge. The table must exist: call Migrate first.
func NewAtomic(db DB, c idempotency.Config) (*Atomic, error) {
	switch {
	case c.Store != nil:
		return nil, fmt.Errorf("postgres: atomic: %w: Store is set, but the atomic mode writes its records in %s through its own transaction: leave Store nil", idempotency.ErrInvalidConfig, IdempotencyTable)
	case c.ReleaseTooLarge:
		return nil, fmt.Errorf("postgres: atomic: %w: ReleaseTooLarge is set, but a record committed with its effect cannot be released: leave it false", idempotency.ErrInvalidConfig)
	}
	store := NewIdempotencyStore(db)
	c.Store = store
	m, err := idempotency.New(c)
	if err != nil {
		return nil, fmt.Errorf("postgres: atomic: %w", err)
	}
	a := &Atomic{db: db, m: m, c: m.Config(), store: store}
	a.idle = strconv.FormatInt(min(a.c.Lease.Milliseconds(), math.MaxInt32), 10)
	return a, nil
}

// Handler wraps next; the key is required if Config.Require says so.
func (a *Atomic) Handler(next http.Handler) http.Handler {
	return &atomicHandler{a: a, next: next, require: a.c.Require}
}

// Require wraps next like Handler, with the key required for the covered
// methods: a request without one is refused with 400.
func (a *Atomic) Require(next http.Handler) http.Handler {
	return &atomicHandler{a: a, next: next, require: true}
}

// Store returns the IdempotencyStore over the Atomic's db, which reads the
// records it writes.
func (a *Atomic) Store() *IdempotencyStore { return a.store }

type txKey struct{}

// Tx returns the transaction that Atomic runs the request of ctx in, or nil
// when ctx is not an Atomic handler's request context (a method that
// Atomic does not cover). Use it with the request's context; its Commit and
// Rollback return ErrTxManaged.
func Tx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(txKey{}).(pgx.Tx)
	return tx
}

// managedTx is the handler's view of the transaction; a is the Atomic that
// runs it, for the request with key ("" for none).
type managedTx struct {
	pgx.Tx
	a   *Atomic
	key string
}

func (managedTx) Commit(context.Context) error   { return ErrTxManaged }
func (managedTx) Rollback(context.Context) error { return ErrTxManaged }

type atomicHandler struct {
	a       *Atomic
	next    http.Handler
	require bool
}

// atomicClaimSQL takes the key's lock without waiting, sets the transaction's
// idle timeout, and (only with the lock) claims the row or, when it is live,
// returns it, as beginSQL does (a row committed after the statement's
// snapshot is read by a later statement).
const atomicClaimSQL = `
WITH lock AS (
	SELECT pg_try_advisory_xact_lock(hashtextextended($7::text, 0)) AS held,
	       set_config('idle_in_transaction_session_timeout', $8::text, true) AS idle
), claim AS (
	INSERT INTO yaoki_idempotency AS r (scope, key, state, fingerprint, token, expires_at, response, created_at)
	SELECT $1::text, $2::text, 1, $3::bytea, $4::text, $5::timestamptz, NULL, $6::timestamptz FROM lock WHERE lock.held
	ON CONFLICT (scope, key) DO UPDATE
		SET state = 1, fingerprint = EXCLUDED.fingerprint, token = EXCLUDED.token,
		    expires_at = EXCLUDED.expires_at, response = NULL, created_at = EXCLUDED.created_at
		WHERE r.expires_at <= EXCLUDED.created_at
	RETURNING 1
)
SELECT lock.held, lock.idle IS NOT NULL, EXISTS (SELECT 1 FROM claim), r.state, r.fingerprint, r.token, r.expires_at, r.response
FROM lock
LEFT JOIN yaoki_idempotency AS r ON r.scope = $1::text AND r.key = $2::text AND r.expires_at > $6::timestamptz`

func (h *atomicHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := h.a
	adm := a.m.Admit(w, r, h.require)
	if held, _ := r.Context().Value(txKey{}).(managedTx); held.a == a && held.key == adm.ID.Key && (adm.Verdict == idempotency.Keyed || adm.Verdict == idempotency.Unkeyed) {
		// This Atomic, in a layer outside this one (Handler around a mux,
		// Require around one of its routes), runs the request in its
		// transaction and holds its key: run the handler in it. A claim of
		// the key would meet the outer transaction's lock and answer 409,
		// which the outer layer would commit as the request's record.
		h.next.ServeHTTP(w, adm.Request)
		return
	}
	switch adm.Verdict {
	case idempotency.Pass:
		h.next.ServeHTTP(w, r)
	case idempotency.Unkeyed:
		tx, err := a.db.Begin(r.Context())
		if err != nil {
			a.unavailable(w, r, "", "begin", err)
			return
		}
		h.run(w, r, tx, nil, "")
	case idempotency.Keyed:
		h.keyed(w, r, &adm)
	}
}

// keyed claims the key in a new transaction and runs the handler in it, or
// answers from the key's record.
func (h *atomicHandler) keyed(w http.ResponseWriter, r *http.Request, adm *idempotency.Admission) {
	a := h.a
	ctx := r.Context()
	tx, err := a.db.Begin(ctx)
	if err != nil {
		a.unavailable(w, r, adm.ID.Key, "begin", err)
		return
	}
	token := rand.Text()
	rec, claimed, err := a.claim(ctx, tx, adm, token)
	switch {
	case err != nil:
		a.rollback(r, tx, adm.ID.Key)
		a.unavailable(w, r, adm.ID.Key, "claim", err)
	case !claimed:
		a.rollback(r, tx, adm.ID.Key)
		a.m.Answer(w, adm.Request, *adm, &rec)
	default:
		a.at("claimed")
		h.run(w, adm.Request, tx, adm, token)
	}
}

// claim runs atomicClaimSQL in tx. Without the lock and without a visible
// record it returns an InProgress record with the request's own
// fingerprint (the holder's is not visible before it commits).
func (a *Atomic) claim(ctx context.Context, tx pgx.Tx, adm *idempotency.Admission, token string) (idempotency.Record, bool, error) {
	id, fp, now := adm.ID, adm.Fingerprint, a.c.Now()
	for range 10 {
		var (
			held, idle, claimed bool
			row                 rowFields
		)
		err := tx.QueryRow(ctx, atomicClaimSQL, id.Scope, id.Key, fp[:], token, now.Add(a.c.Lease), now, id.String(), a.idle).
			Scan(&held, &idle, &claimed, &row.state, &row.fp, &row.token, &row.expires, &row.response)
		switch {
		case err != nil:
			return idempotency.Record{}, false, fmt.Errorf("postgres: atomic claim %s: %w", id, err)
		case claimed:
			return idempotency.Record{}, true, nil
		case !held && row.state == nil:
			// Another transaction holds the key and no record is visible:
			// a first run that has not committed yet.
			return idempotency.Record{State: idempotency.InProgress, Fingerprint: fp}, false, nil
		case row.state != nil:
			// A live record answers, whoever holds the lock (another
			// request replaying it holds it for a moment too).
			rec, err := row.record()
			if err != nil {
				return idempotency.Record{}, false, fmt.Errorf("postgres: atomic claim %s: %w", id, err)
			}
			return rec, false, nil
		}
		// The live row was committed after the statement's snapshot: a
		// new statement sees it.
		rec, ok, err := (&IdempotencyStore{db: tx}).Get(ctx, id, now)
		if err != nil || ok {
			return rec, false, err
		}
	}
	return idempotency.Record{}, false, fmt.Errorf("postgres: atomic claim %s: the record changed under 10 tries in a row", id)
}

// run runs the handler in tx and commits (with the record, for a keyed
// request) or rolls back; adm is nil for a request without a key.
func (h *atomicHandler) run(w http.ResponseWriter, r *http.Request, tx pgx.Tx, adm *idempotency.Admission, token string) {
	a := h.a
	key := ""
	if adm != nil {
		key = adm.ID.Key
	}
	hw := &heldResponse{h: w.Header(), head: r.Method == http.MethodHead}
	hw.before = hw.h.Clone()
	// Every way out ends the transaction: a panic (the handler's, or a
	// later one) or runtime.Goexit rolls it back, and the panic goes on.
	ended := false
	end := func() {
		if !ended {
			ended = true
			a.rollback(r, tx, key)
		}
	}
	defer end()
	h.next.ServeHTTP(hw, r.WithContext(context.WithValue(r.Context(), txKey{}, managedTx{tx, a, key})))

	if hw.status == 0 && r.Context().Err() != nil {
		end() // the client gave up before any answer: nothing done
		return
	}
	if declared, ok := idempotency.DeclaredLength(hw.sent, r.Method == http.MethodHead, hw.status); ok && declared != int64(len(hw.body)) {
		// net/http would break the answer on its way (a body shorter
		// than declared closes the connection; one longer is refused):
		// nothing has left yet, so the work is undone instead of
		// committed under an answer nobody can read whole.
		end()
		hw.restore()
		a.c.ErrorLog.Printf("postgres: atomic: %s %s with key %q: the handler declared Content-Length %d and wrote %d bytes; rolled back", r.Method, r.URL.EscapedPath(), key, declared, len(hw.body))
		a.m.Refuse(w, r, key, idempotency.Problem{Status: http.StatusInternalServerError, Reason: idempotency.ReasonResponseCut,
			Detail: fmt.Sprintf("postgres: the handler declared Content-Length %d and wrote %d bytes, an answer that cannot be sent whole; its transaction was rolled back and nothing was done", declared, len(hw.body))})
		return
	}
	resp := hw.response(a.c.MaxResponseBytes)
	if !a.c.Keep(resp.Status) {
		end()
		hw.send(w)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), a.c.StoreTimeout)
	defer cancel()
	if adm != nil {
		if err := (&IdempotencyStore{db: tx}).Complete(ctx, adm.ID, token, resp, a.c.Now(), a.c.TTL); err != nil {
			end()
			hw.restore()
			a.unavailable(w, r, key, "record", err)
			return
		}
		a.at("recorded")
	}
	err := tx.Commit(ctx)
	ended = true // committed, or closed by the failure
	if err != nil {
		hw.restore()
		a.c.ErrorLog.Printf("postgres: atomic: commit %s %s with key %q: %v", r.Method, r.URL.EscapedPath(), key, err)
		a.m.Refuse(w, r, key, idempotency.Problem{Status: http.StatusServiceUnavailable, Reason: idempotency.ReasonStoreUnavailable,
			Detail: "postgres: the request's transaction could not be committed; retry with the same key: a committed request is replayed, one that was not is executed"})
		return
	}
	if adm != nil {
		a.at("committed")
	}
	hw.send(w)
}

func (a *Atomic) at(step string) {
	if a.step != nil {
		a.step(step)
	}
}

// rollback rolls tx back, even when the request's context is done.
func (a *Atomic) rollback(r *http.Request, tx pgx.Tx, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), a.c.StoreTimeout)
	defer cancel()
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		a.c.ErrorLog.Printf("postgres: atomic: roll back %s %s with key %q: %v", r.Method, r.URL.EscapedPath(), key, err)
	}
}

// unavailable answers 503 when the database failed before anything was
// committed.
func (a *Atomic) unavailable(w http.ResponseWriter, r *http.Request, key, step string, err error) {
	a.c.ErrorLog.Printf("postgres: atomic: %s %s %s with key %q: %v", step, r.Method, r.URL.EscapedPath(), key, err)
	a.m.Refuse(w, r, key, idempotency.Problem{Status: http.StatusServiceUnavailable, Reason: idempotency.ReasonStoreUnavailable,
		Detail: "postgres: the request was not executed: its transaction failed (" + step + "), try again later"})
}

// heldResponse holds the handler's response until the transaction has
// committed. The handler writes its header fields into the real header
// (nothing is sent before WriteHeader), whose state when the handler
// started is before.
type heldResponse struct {
	h      http.Header // the ResponseWriter's header
	before http.Header // h when the handler started
	sent   http.Header // h when the handler wrote its status
	status int
	body   []byte
	// head: the request is a HEAD, whose body net/http drops; headSize
	// counts what the handler wrote, the Content-Length net/http would
	// announce for it.
	head     bool
	headSize int
}

func (hw *heldResponse) Header() http.Header { return hw.h }

func (hw *heldResponse) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http does: in the handler, so it rolls back
	}
	if hw.status != 0 || code < 200 && code != http.StatusSwitchingProtocols {
		return // superfluous, or informational: nothing leaves before the commit
	}
	hw.status = code
	hw.sent = hw.h.Clone()
}

func (hw *heldResponse) Write(p []byte) (int, error) {
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	if hw.status == http.StatusNoContent || hw.status == http.StatusNotModified {
		// As net/http: no body goes with them, so none is held or kept.
		return 0, http.ErrBodyNotAllowed
	}
	if hw.head {
		hw.headSize += len(p)
		return len(p), nil
	}
	hw.body = append(hw.body, p...)
	return len(p), nil
}

// response is what the record keeps: the status (200 if the handler wrote
// nothing), the fields the handler set, and the body up to max bytes.
func (hw *heldResponse) response(max int) idempotency.Response {
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	h := idempotency.RecordTrailers(idempotency.RecordHeader(hw.before, hw.sent), hw.sent["Trailer"], hw.h)
	if cl := hw.headLength(); cl != "" {
		// A HEAD answer's Content-Length describes a GET's body: the
		// replay cannot compute it, so the record keeps it.
		if h == nil {
			h = make(http.Header, 1)
		}
		h["Content-Length"] = []string{cl}
	}
	resp := idempotency.Response{Status: hw.status, Header: h, Size: int64(len(hw.body))}
	if len(hw.body) > max {
		resp.Omitted = true
	} else {
		resp.Body = hw.body
	}
	return resp
}

// headLength returns the Content-Length of a HEAD answer: the handler's,
// or the length of what it wrote, "" for none (not a HEAD request, or
// nothing written).
func (hw *heldResponse) headLength() string {
	if !hw.head {
		return ""
	}
	if cl := hw.sent.Get("Content-Length"); cl != "" {
		return cl
	}
	if hw.headSize > 0 {
		return strconv.Itoa(hw.headSize)
	}
	return ""
}

// restore gives the header back its state from before the handler, for an
// answer other than the handler's.
func (hw *heldResponse) restore() {
	clear(hw.h)
	for k, vs := range hw.before {
		hw.h[k] = vs
	}
}

// send writes the held response to w.
func (hw *heldResponse) send(w http.ResponseWriter) {
	if hw.status == 0 {
		hw.WriteHeader(http.StatusOK)
	}
	// The trailers' values are in the header as the handler left it
	// (declared in Trailer before its status, or set under
	// http.TrailerPrefix): net/http sends them after the body, read from
	// the header, which needs a chunked body.
	var trailers http.Header
	for _, v := range hw.sent["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if vs, ok := hw.h[name]; ok {
				if trailers == nil {
					trailers = make(http.Header)
				}
				trailers[name] = vs
			}
		}
	}
	for k, vs := range hw.h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			if trailers == nil {
				trailers = make(http.Header)
			}
			trailers[k] = vs
		}
	}
	clear(hw.h)
	for k, vs := range hw.sent {
		hw.h[k] = vs
	}
	for k, vs := range trailers {
		hw.h[k] = vs
	}
	if cl := hw.headLength(); cl != "" {
		hw.h.Set("Content-Length", cl)
	} else if !hw.head && len(trailers) == 0 && len(hw.sent["Trailer"]) == 0 && hw.h.Get("Content-Length") == "" && hw.status != http.StatusNoContent && hw.status != http.StatusNotModified {
		hw.h.Set("Content-Length", strconv.Itoa(len(hw.body)))
	}
	w.WriteHeader(hw.status)
	_, _ = w.Write(hw.body)
}
