// Package idempotency is server middleware that executes a request carrying
// an Idempotency-Key once and replays its response to every retry, as the
// IETF draft "The Idempotency-Key HTTP Header Field" describes and as Stripe
// does in production.
//
// Most servers want
//
//	idem, err := idempotency.New(idempotency.Config{
//		Scope: func(r *http.Request) string { return userID(r) },
//	})
//	...
//	mux.Handle("POST /payments", idem.Require(payments))
//
// For each POST or PATCH (Config.Methods) with a key, the middleware reads
// the body (bounded by Config.MaxRequestBytes), computes the request's
// fingerprint (a SHA-256 of the method, the target, selected headers and the
// body) and asks the Store to begin a record for (scope, key):
//
//   - no record: the request holds the key (a lease, renewed while the
//     handler runs), the handler runs, and its response (status, header,
//     body) is sent and stored for Config.TTL (24 h);
//   - a completed record with the same fingerprint: its response is
//     replayed, with "Idempotent-Replayed: true", and the handler does not
//     run;
//   - a record with a different fingerprint: 422, the key was used for
//     another request;
//   - a record in progress with the same fingerprint: 409 with
//     Retry-After, the first request is still running.
//
// A missing key where one is required and a malformed key are refused with
// 400. Every refusal is an RFC 9457 problem; see Problem for the list.
//
// What is stored: statuses that Config.Keep accepts (by default 2xx, 3xx and
// 4xx except 408 and 429), with the header fields the handler set (not
// those that layers outside the middleware set before it ran, and never
// Set-Cookie) and its trailers; a replay keeps the current request's own outer fields (a
// request id, CORS). A body the handler compressed (gzip, deflate) is
// decoded for a retry that does not accept that coding. Any other response
// releases the record, so that a
// retry runs the handler again; so do a handler that panics (the middleware
// releases the key and the panic goes on) and a handler that returns
// without writing anything after the request's context ended (the client
// gave up: nothing was done that a retry should see as done; so a handler
// that did its work must write its answer even when the client has gone,
// or the retry does the work again). A response
// larger than Config.MaxResponseBytes is not kept; see there for what a
// retry gets. The handler of a keyed request cannot hijack its connection
// (ErrHijack): a response written to it could not be stored.
//
// Faults. A Complete that fails (the store cut off as the handler returns)
// is tried again with backoff, the lease being renewed meanwhile: for up to
// Config.StoreTimeout before the client gets its response, then in the
// background until CompleteGrace (10 min) past the lease's end
// (Middleware.Wait holds a shutdown until those end, or its context does).
// A store takes a late Complete from the token that still holds the key,
// and refuses it once another request has claimed the key, so trying on
// past the lease never overwrites another's work: a store back before any
// retry claimed the key gets the record. A retry that reaches the instance
// meanwhile is never sent to Begin: it gets the completed record if the
// store has one (Get), 409 otherwise; elsewhere the record stays in
// progress, and retries get 409 until the lease passes, while a retry that
// claims the key after it runs the handler again (and the late Complete is
// refused). A process that dies while it
// holds a key stops renewing its lease, and the key is usable again once
// the lease (Config.Lease, 30 s) has passed. A holder that cannot renew its
// lease (the store refuses, or the lease ends before a renewal gets
// through) has lost it: the handler's context is cancelled, with a
// *LeaseLostError as its cause, at the lease's end by the process's clock,
// and whatever it does afterwards cannot be stored (Complete refuses a token
// that no longer holds the key). What remains is the time a handler takes
// to notice its cancelled context, plus the difference between the clocks
// of the processes: during it, the stale handler's effects may run beside
// those of the request that claimed the key after it. Work that must never
// run twice needs its effect and the record in one transaction.
//
// Keys are global unless Config.Scope says whose they are: set it on any
// server with more than one client.
package idempotency

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
)

// Middleware executes keyed requests once. Build it with New; it is safe for
// concurrent use, and one Middleware may wrap many handlers (they share its
// store, so a key names one request across all of them: the fingerprint
// tells them apart and refuses reuse with 422).
type Middleware struct {
	c Config

	mu   sync.Mutex
	bg   int           // Completes tried on in the background
	idle chan struct{} // closed when bg drops to 0, for Wait; nil when nobody waits
	// unstored holds the keys whose response this middleware sent and is
	// still trying to store (a Complete failed), with their fingerprints:
	// a retry that reaches it meanwhile is answered as the record in
	// progress it is, not sent to Begin, which would take the key over
	// once the lease has passed and run the handler beside the response
	// about to be stored. nunstored, its size, spares the requests the
	// lock while it is empty.
	unstored  map[ID]Fingerprint
	nunstored atomic.Int64
}

// trying notes that the response to id, whose request had fingerprint fp,
// is being stored after a failed Complete; the returned func says it no
// longer is.
func (m *Middleware) trying(id ID, fp Fingerprint) (done func()) {
	m.mu.Lock()
	if m.unstored == nil {
		m.unstored = make(map[ID]Fingerprint)
	}
	m.unstored[id] = fp
	m.nunstored.Store(int64(len(m.unstored)))
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.unstored, id)
		m.nunstored.Store(int64(len(m.unstored)))
		m.mu.Unlock()
	}
}

// storing returns the fingerprint of the request whose response to id this
// middleware is trying to store, if it is.
func (m *Middleware) storing(id ID) (Fingerprint, bool) {
	if m.nunstored.Load() == 0 {
		return Fingerprint{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fp, ok := m.unstored[id]
	return fp, ok
}

// New validates c and returns a Middleware that applies it. A field out of
// range is reported with its value and the accepted range.
func New(c Config) (*Middleware, error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	return &Middleware{c: c}, nil
}

// Handler wraps next: it is the func(http.Handler) http.Handler of the
// middleware. The key is required if Config.Require says so.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return &handler{m: m, next: next, require: m.c.Require}
}

// Require wraps next like Handler, with the key required for the
// middleware's methods: a request without one is refused with 400. It may
// wrap a route of a server that m's Handler wraps as a whole: a request
// whose key the outer layer holds runs next, and the outer layer records
// its answer.
func (m *Middleware) Require(next http.Handler) http.Handler {
	return &handler{m: m, next: next, require: true}
}

// Wait waits until every Complete that the middleware tries on in the
// background has ended, or ctx ends. Those are the responses already sent
// whose record the store did not take within Config.StoreTimeout (the
// store away): the middleware tries on until the store takes or refuses
// the record, or CompleteGrace (10 min) past the lease's end, and a process
// that exits meanwhile leaves the record in progress, so that the client's
// retry runs the handler again once the lease has passed. Call it after
// http.Server.Shutdown, before the process exits, with a context that
// allows what the deploy can afford (the lease, Config.Lease, is a good
// bound: past it a retry may claim the key anyway). It returns nil when
// none is left, or an error matching ctx's error that says how many are;
// those go on trying until the process exits. Nil says the background
// Completes have ended, not that they stored their records: one that the
// store refused (another request claimed the key after the lease, or a
// Redis without its append-only file restarted) or that ran out of time is
// logged to Config.ErrorLog.
func (m *Middleware) Wait(ctx context.Context) error {
	m.mu.Lock()
	if m.bg == 0 {
		m.mu.Unlock()
		return nil
	}
	if m.idle == nil {
		m.idle = make(chan struct{})
	}
	idle := m.idle
	m.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	n := m.bg
	m.mu.Unlock()
	if n == 0 {
		return nil
	}
	return fmt.Errorf("idempotency: wait for the responses being stored in the background: %d not stored yet: %w", n, ctx.Err())
}

// background runs f, a Complete tried on after the response was sent,
// counted for Wait.
func (m *Middleware) background(f func()) {
	m.mu.Lock()
	m.bg++
	m.mu.Unlock()
	go func() {
		defer func() {
			m.mu.Lock()
			if m.bg--; m.bg == 0 && m.idle != nil {
				close(m.idle)
				m.idle = nil
			}
			m.mu.Unlock()
		}()
		f()
	}()
}

// Store returns the middleware's store (the MemoryStore it made when
// Config.Store was nil).
func (m *Middleware) Store() Store { return m.c.Store }

type handler struct {
	m       *Middleware
	next    http.Handler
	require bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &h.m.c
	if !c.covers(r.Method) {
		h.next.ServeHTTP(w, r)
		return
	}
	key, ok, err := keyFrom(r.Header)
	switch {
	case err != nil:
		c.refuse(w, r, key, Problem{Status: http.StatusBadRequest, Reason: ReasonKeyMalformed, Detail: err.Error()}, -1)
		return
	case !ok && h.require:
		c.refuse(w, r, "", Problem{Status: http.StatusBadRequest, Reason: ReasonKeyMissing,
			Detail: fmt.Sprintf("idempotency: %s %s requires an %s header: send a unique key (such as a UUID) and the same key on every retry of the request", r.Method, r.URL.Path, header.IdempotencyKey)}, -1)
		return
	case !ok:
		h.next.ServeHTTP(w, r)
		return
	}
	if held, _ := r.Context().Value(heldKey{}).(*heldContext); held != nil && held.m == h.m && held.key == key {
		// This middleware, in a layer outside this one (Handler around a
		// mux, Require around one of its routes), holds the request's key
		// and records what the handler answers: run it. Begin would meet
		// the key held by the request itself, and the 409 it answered
		// would be kept as the response, replayed to every retry.
		h.next.ServeHTTP(w, r)
		return
	}
	body, p := c.readBody(r)
	if p.Status != 0 {
		c.refuse(w, r, key, p, -1)
		return
	}
	id := ID{Key: key}
	if c.Scope != nil {
		id.Scope = c.scope(r, body)
		if p := scopeProblem(id.Scope); p.Status != 0 {
			c.refuse(w, r, key, p, -1)
			return
		}
	}
	fp := c.fingerprint(r, body)
	if sfp, ok := h.m.storing(id); ok {
		// A retry of a request whose response this middleware sent and
		// is still trying to store: it is in progress, unless the store
		// has a completed record already (a Complete whose reply was
		// lost, or that Redis's replicas have not acknowledged yet; or
		// another request's, which took the key after the lease).
		ctx, cancel := c.storeContext(r.Context())
		rec, found, err := c.Store.Get(ctx, id, c.Now())
		cancel()
		if err != nil || !found || rec.State != Completed {
			rec = Record{State: InProgress, Fingerprint: sfp}
		}
		c.answer(w, r, key, fp, &rec)
		return
	}
	token := rand.Text()
	now := c.Now()
	// Bounded by StoreTimeout, as every store call: a Begin whose reply
	// never comes (its connection dead without a reset) would hold the
	// request until its client gave up, and its claim the key.
	bctx, cancel := c.storeContext(r.Context())
	rec, claimed, err := c.Store.Begin(bctx, id, fp, token, now, c.Lease)
	cancel()
	if err != nil {
		c.ErrorLog.Printf("idempotency: begin %s %s with key %q: %v", r.Method, r.URL.EscapedPath(), key, err)
		// The Begin may have claimed the key before its reply was lost:
		// release it, or the client's retries would be refused with 409
		// until the lease passed.
		c.unavailable(w, r, key, id, token, "idempotency: the request was not executed: its key could not be recorded, try again later")
		return
	}
	if !claimed {
		c.answer(w, r, key, fp, &rec)
		return
	}
	at := c.Now() // when Begin's reply came
	begun, err := c.slowBegin(r.Context(), id, token, now, at)
	if err != nil {
		c.ErrorLog.Printf("idempotency: %s %s with key %q not executed: %v", r.Method, r.URL.EscapedPath(), key, err)
		c.unavailable(w, r, key, id, token, "idempotency: the request was not executed: the store answered too slowly to hold its key, try again later")
		return
	}
	h.run(w, r, body, id, fp, token, begun, at)
}

// unavailable releases what token may hold of id and answers 503
// store_unavailable: nothing was executed.
func (c *Config) unavailable(w http.ResponseWriter, r *http.Request, key string, id ID, token, detail string) {
	ctx, cancel := c.storeContext(context.WithoutCancel(r.Context()))
	_ = c.Store.Release(ctx, id, token)
	cancel()
	c.refuse(w, r, key, Problem{Status: http.StatusServiceUnavailable, Reason: ReasonStoreUnavailable, Detail: detail}, c.retryAfterSeconds())
}

// slowBegin renews the lease that a Begin sent at begun claimed, when its
// reply, in at now, took a third of the lease or more (a store under load,
// a pool with no free connection): the store counts the lease from begun,
// and would let the key go before the first renewal, due a third of a
// lease after begun, got through, or has let it go already. It returns
// when the lease counts from, or an error when the handler must not run:
// the lease ended before it could be renewed (another request may have
// claimed the key; ErrLeaseLost when one has).
func (c *Config) slowBegin(ctx context.Context, id ID, token string, begun, now time.Time) (time.Time, error) {
	if now.Sub(begun) < c.Lease/3 {
		return begun, nil
	}
	ctx, cancel := c.storeContext(ctx)
	err := c.Store.Extend(ctx, id, token, now, c.Lease)
	cancel()
	switch {
	case err == nil:
		return now, nil
	case !errors.Is(err, ErrLeaseLost) && c.Now().Sub(begun) < c.Lease:
		// The claim still holds: the renewals go on trying.
		c.ErrorLog.Printf("idempotency: renew the lease of key %q after a slow begin (%v): %v", id.Key, now.Sub(begun), err)
		return begun, nil
	}
	return time.Time{}, fmt.Errorf("the reply to begin came after %v of its %v lease, and the lease could not be renewed: %w", now.Sub(begun), c.Lease, err)
}

// scope returns Scope(r), r's body being the bytes read from it, which the
// middleware had read to the end: a Scope that reads the principal from a
// form field (r.PostFormValue) parses the form as sent, and the handler,
// whose request shares r's parsed form, sees it too.
func (c *Config) scope(r *http.Request, body []byte) string {
	if r.Body != nil && r.Body != http.NoBody {
		br := &bodyReader{}
		br.Reset(body)
		r.Body = br
	}
	return c.Scope(r)
}

// scopeProblem refuses a scope that no store can keep or no log can
// show as it is: not UTF-8, or with a control character (PostgreSQL's
// text refuses invalid UTF-8 and NUL; a line break in a principal a
// client chose would forge lines in the stores' error logs, which name
// the record). Retrying cannot help, so it is a 400, not a 503 from the
// store.
func scopeProblem(scope string) Problem {
	if utf8.ValidString(scope) && strings.IndexFunc(scope, unicode.IsControl) < 0 {
		return Problem{}
	}
	return Problem{Status: http.StatusBadRequest, Reason: ReasonScopeMalformed,
		Detail: fmt.Sprintf("idempotency: the scope of the request (%q, from Config.Scope) is not valid UTF-8 or holds a control character (a NUL, a line break); the principal it names must be UTF-8 text without control characters", scope)}
}

func (c *Config) covers(method string) bool {
	for _, m := range c.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// answer answers a request whose key already has a record.
func (c *Config) answer(w http.ResponseWriter, r *http.Request, key string, fp Fingerprint, rec *Record) {
	switch {
	case rec.Fingerprint != fp:
		c.refuse(w, r, key, Problem{Status: http.StatusUnprocessableEntity, Reason: ReasonKeyReused,
			Detail: fmt.Sprintf("idempotency: key %q was already used for a different request (its %s differ); use a new key for a new request", key, c.fingerprinted())}, -1)
	case rec.State == InProgress:
		c.refuse(w, r, key, Problem{Status: http.StatusConflict, Reason: ReasonInProgress,
			Detail: fmt.Sprintf("idempotency: a request with key %q is still being processed; retry after it completes", key)}, c.retryAfterSeconds())
	case rec.Response.Cut:
		c.refuse(w, r, key, Problem{Status: http.StatusGone, Reason: ReasonResponseCut, OriginalStatus: rec.Response.Status,
			Detail: fmt.Sprintf("idempotency: the request with key %q was executed (status %d) but its handler wrote %d bytes of a body it declared with another Content-Length, so its response was broken and is not replayed; it will not be executed again", key, rec.Response.Status, rec.Response.Size)}, -1)
	case rec.Response.Omitted:
		c.refuse(w, r, key, Problem{Status: http.StatusGone, Reason: ReasonResponseTooLarge, OriginalStatus: rec.Response.Status,
			Detail: fmt.Sprintf("idempotency: the request with key %q was executed (status %d) but its response (%d bytes) was too large to keep for replay; it will not be executed again", key, rec.Response.Status, rec.Response.Size)}, -1)
	default:
		c.replay(w, r, key, &rec.Response)
	}
}

// fingerprinted names what the fingerprint covers, for the 422's detail:
// "method, target or body", with the FingerprintHeaders among them. The
// fingerprint is one hash over all of them (records of every version of
// the middleware compare as equal), so which of them differ is not known.
func (c *Config) fingerprinted() string {
	var b strings.Builder
	b.WriteString("method, target")
	for _, h := range c.FingerprintHeaders {
		b.WriteString(", ")
		b.WriteString(h)
		b.WriteString(" header")
	}
	b.WriteString(" or body")
	return b.String()
}

func (c *Config) replay(w http.ResponseWriter, r *http.Request, key string, resp *Response) {
	// The stored fields are the handler's; the fields outer layers set for
	// this request (a request id, CORS) stay as they are. Set-Cookie is
	// never replayed, under any spelling of its name (records written
	// before it was left out may hold one). The values are copied, in one
	// backing array: the record's slices may be shared (the MemoryStore's
	// are) and an outer layer may edit its response's values in place.
	h := w.Header()
	nv := 0
	for _, vs := range resp.Header {
		nv += len(vs)
	}
	// Trailers, stored under http.TrailerPrefix, are declared and sent as
	// trailers, which needs a chunked body: no Content-Length then. A
	// HEAD request's record keeps the handler's Content-Length, if any (the
	// fingerprint holds the method, so only a HEAD request replays it).
	// A body compressed for the first request is decoded for a retry that
	// does not accept its coding (see decodedFor): sent without
	// Content-Encoding and the fields that describe the encoded bytes.
	body, decoded := resp.Body, false
	if _, ok := resp.Header["Content-Encoding"]; ok {
		if b, ok := decodedFor(r, resp, min(int64(c.MaxResponseBytes), math.MaxInt64/maxDecodedFactor-1)*maxDecodedFactor); ok {
			body, decoded = b, true
		}
	}
	values := make([]string, 0, nv)
	trailers := false
	for k, vs := range resp.Header {
		name, trailer := strings.CutPrefix(k, http.TrailerPrefix)
		switch http.CanonicalHeaderKey(name) {
		case "Set-Cookie":
			continue
		case "Content-Length":
			if trailer || r.Method != http.MethodHead {
				continue
			}
		case "Content-Encoding", "Content-Digest", "Repr-Digest", "Digest", "Content-Md5":
			if decoded { // as a trailer too: they describe the encoded bytes
				continue
			}
		case "Etag":
			if decoded {
				vs = weakETag(vs)
			}
		}
		values = append(values, vs...)
		h[k] = values[len(values)-len(vs) : len(values) : len(values)]
		if trailer {
			h.Add("Trailer", name)
			trailers = true
		}
	}
	// A 204 or a 304 has no body and, unlike the length of an empty one,
	// no Content-Length (RFC 9110 §8.6), which HTTP/2 would send as set.
	if !trailers && r.Method != http.MethodHead && resp.Status != http.StatusNoContent && resp.Status != http.StatusNotModified {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	h.Set(header.IdempotentReplayed, "true")
	if c.Observer != nil {
		c.Observer.Observe(r.Context(), event.Event{Kind: event.Replay, Time: c.Now(), Component: "idempotency",
			Method: r.Method, Status: resp.Status, Key: key})
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(body)
}

func (c *Config) refuse(w http.ResponseWriter, r *http.Request, key string, p Problem, retryAfter int) {
	if c.Observer != nil {
		c.Observer.Observe(r.Context(), event.Event{Kind: event.Conflict, Time: c.Now(), Component: "idempotency",
			Method: r.Method, Status: p.Status, Reason: p.Reason, Key: key})
	}
	writeProblem(w, p, retryAfter)
}

// run runs the handler for the request that holds id and stores or releases
// the record afterwards. The handler's context is cancelled, with a
// *LeaseLostError as its cause, if the request loses its hold on the key
// while the handler runs.
func (h *handler) run(w http.ResponseWriter, r *http.Request, body []byte, id ID, fp Fingerprint, token string, begun, now time.Time) {
	c := &h.m.c
	// One allocation for what the request needs while it holds the key.
	f := &inflight{cw: capture{w: w, max: c.MaxResponseBytes, declared: -1, outer: snapshot(w.Header()), head: r.Method == http.MethodHead}}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ls := &f.ls
	c.hold(ls, r.Context(), id, token, begun, now, cancel)
	background := false // the lease goes on with a Complete tried in the background
	defer func() {
		if !background {
			ls.stop()
		}
	}()
	bg := context.Context(ls) // the request's values, without its cancellation
	f.ctx = heldContext{Context: ctx, m: h.m, key: id.Key}
	r2 := r.WithContext(&f.ctx)
	f.body.Reset(body)
	r2.Body = &f.body
	r2.ContentLength = int64(len(body))
	cw := &f.cw
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit): release the key
		// so that a retry runs it again; the panic goes on.
		ls.stop()
		c.release(bg, id, token, "after a panic")
	}()
	h.next.ServeHTTP(cw, r2)
	finished = true

	wrote := cw.status != 0
	resp := cw.response()
	switch {
	case !wrote && ctx.Err() != nil:
		// Nothing written and the request is over (the client went away,
		// or the lease was lost): nothing happened that a retry should
		// see as done.
		ls.stop()
		c.release(bg, id, token, "after the request was cancelled with nothing written")
	case !c.Keep(resp.Status) || resp.Omitted && c.ReleaseTooLarge:
		ls.stop()
		c.release(bg, id, token, "after status "+strconv.Itoa(resp.Status))
	default:
		// The lease is renewed while Complete is tried again.
		ls.complete()
		// done: once a Complete failed, the key is noted as being stored.
		done, err := c.complete(bg, id, token, resp, c.StoreTimeout, h.m, fp)
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			// The client has waited StoreTimeout: it gets its response,
			// and Complete goes on while the lease holds the key, and
			// CompleteGrace past it: a store takes a late Complete from
			// the token that still holds the key, and refuses it once
			// another request has claimed the key, so that trying on
			// never overwrites another's work. A store back before a
			// retry claimed the key gets the record; otherwise the retry
			// runs the handler again.
			left := ls.end().Add(CompleteGrace).Sub(c.Now())
			c.ErrorLog.Printf("idempotency: store the response to key %q (status %d): %v; trying on for %v (until CompleteGrace past the lease's end)", id.Key, resp.Status, err, left.Round(time.Millisecond))
			background = true
			if done == nil { // the first try failed at the timeout
				done = h.m.trying(id, fp)
			}
			h.m.background(func() {
				_, err := c.complete(bg, id, token, resp, left, nil, Fingerprint{})
				ls.stop()
				done()
				if err != nil {
					c.ErrorLog.Printf("idempotency: store the response to key %q (status %d): %v", id.Key, resp.Status, err)
				}
			})
			return
		}
		ls.stop()
		if done != nil {
			done()
		}
		if err != nil {
			c.ErrorLog.Printf("idempotency: store the response to key %q (status %d): %v", id.Key, resp.Status, err)
		}
	}
}

// inflight is what a request that holds its key needs until it is done.
type inflight struct {
	cw   capture
	body bodyReader
	ls   lease
	ctx  heldContext
}

// heldKey is the context key under which the handler's context of a
// request that holds its key gives itself (its Middleware and key), so
// that the same middleware nested inside runs the handler (see ServeHTTP).
type heldKey struct{}

// heldContext is the handler's context of a request that holds key through
// m: the request's, cancellable, whose value for heldKey is itself. Done,
// Err and the cancellation's cause are those of the embedded context,
// which contexts derived from it find and use directly, as they would the
// embedded one.
type heldContext struct {
	context.Context
	m   *Middleware
	key string
}

func (c *heldContext) Value(key any) any {
	if key == (heldKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func (c *Config) release(ctx context.Context, id ID, token, why string) {
	ctx, cancel := c.storeContext(ctx)
	defer cancel()
	if err := c.Store.Release(ctx, id, token); err != nil {
		c.ErrorLog.Printf("idempotency: release key %q %s: %v", id.Key, why, err)
	}
}
