package idempotency

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/yaoki-go/yaoki/header"
)

// The middleware's steps, for wrappers that run a keyed request their own
// way but must answer exactly as the middleware does: postgres.Atomic runs
// the handler and writes the record in one database transaction. A
// Middleware built with New provides them; its Store is not used by them.

// Verdict is what Middleware.Admit decided about a request.
type Verdict uint8

const (
	// Pass: the request's method is not one of Config.Methods; run the
	// handler as usual.
	Pass Verdict = iota + 1
	// Unkeyed: the method is covered, the request has no key and none is
	// required; run the handler as usual (no record).
	Unkeyed
	// Refused: Admit answered the request with a problem (400 or 413);
	// write nothing more.
	Refused
	// Keyed: the request carries a valid key; the Admission's ID,
	// Fingerprint and Request are set.
	Keyed
)

// Admission is the outcome of Middleware.Admit.
type Admission struct {
	// Verdict says what the caller does next: Pass, Unkeyed, Refused or
	// Keyed.
	Verdict Verdict
	// ID is the record's identity: the request's scope (Config.Scope) and
	// key.
	ID ID
	// Fingerprint is the request's fingerprint (Config.FingerprintHeaders).
	Fingerprint Fingerprint
	// Request is the request to hand to the handler: a shallow copy whose
	// body is the bytes Admit read to fingerprint it.
	Request *http.Request
}

// Admit does what the middleware does to a request before it asks its
// store: it checks the method, parses the Idempotency-Key (refusing a
// malformed one, or a missing one when require is true, with 400), reads the
// body within Config.MaxRequestBytes (413 beyond) and computes the scope and
// the fingerprint (refusing a scope that is not UTF-8 with 400). A refusal
// is written to w, with its event.
func (m *Middleware) Admit(w http.ResponseWriter, r *http.Request, require bool) Admission {
	c := &m.c
	if !c.covers(r.Method) {
		return Admission{Verdict: Pass, Request: r}
	}
	key, ok, err := keyFrom(r.Header)
	switch {
	case err != nil:
		c.refuse(w, r, key, Problem{Status: http.StatusBadRequest, Reason: ReasonKeyMalformed, Detail: err.Error()}, -1)
		return Admission{Verdict: Refused}
	case !ok && require:
		c.refuse(w, r, "", Problem{Status: http.StatusBadRequest, Reason: ReasonKeyMissing,
			Detail: fmt.Sprintf("idempotency: %s %s requires an %s header: send a unique key (such as a UUID) and the same key on every retry of the request", r.Method, r.URL.Path, header.IdempotencyKey)}, -1)
		return Admission{Verdict: Refused}
	case !ok:
		return Admission{Verdict: Unkeyed, Request: r}
	}
	body, p := c.readBody(r)
	if p.Status != 0 {
		c.refuse(w, r, key, p, -1)
		return Admission{Verdict: Refused}
	}
	a := Admission{Verdict: Keyed, ID: ID{Key: key}}
	if c.Scope != nil {
		a.ID.Scope = c.scope(r, body)
		if p := scopeProblem(a.ID.Scope); p.Status != 0 {
			c.refuse(w, r, key, p, -1)
			return Admission{Verdict: Refused}
		}
	}
	// After Scope, as the middleware does: a form that Scope parsed takes
	// part.
	a.Fingerprint = c.fingerprint(r, body)
	r2 := new(http.Request) // a shallow copy, as WithContext makes
	*r2 = *r
	br := &bodyReader{}
	br.Reset(body)
	r2.Body = br
	r2.ContentLength = int64(len(body))
	a.Request = r2
	return a
}

// Answer answers a request whose key already has a record, rec, that the
// request did not claim, as the middleware does: 422 key_reused when the
// fingerprints differ, 409 in_progress while rec is InProgress, 410
// response_too_large when the response was not kept, 410 response_cut
// when it was broken (Response.Cut), and otherwise the
// replay of rec's response marked "Idempotent-Replayed: true".
func (m *Middleware) Answer(w http.ResponseWriter, r *http.Request, a Admission, rec *Record) {
	m.c.answer(w, r, a.ID.Key, a.Fingerprint, rec)
}

// Refuse answers r with the problem p (its Type and Title are filled in)
// and reports it to Config.Observer as the middleware reports its own
// refusals. A 409 or 503 carries Retry-After (Config.RetryAfter).
func (m *Middleware) Refuse(w http.ResponseWriter, r *http.Request, key string, p Problem) {
	retryAfter := -1
	if p.Status == http.StatusConflict || p.Status == http.StatusServiceUnavailable {
		retryAfter = m.c.retryAfterSeconds()
	}
	m.c.refuse(w, r, key, p, retryAfter)
}

// Config returns the middleware's configuration, with every default filled
// in.
func (m *Middleware) Config() Config { return m.c }

// RecordHeader returns the header fields a record keeps of a response whose
// header was before when the handler started (fields set by outer
// handlers) and after when it answered, by the middleware's rule: the
// fields the handler set or changed, except Set-Cookie (a cookie belongs to
// the client that got the first response, never to whoever replays its
// key), the hop-by-hop fields, those the server computes for each response
// (Date, Content-Length), trailer declarations and Idempotent-Replayed. It
// returns nil when no field is kept.
func RecordHeader(before, after http.Header) http.Header { return keptHeader(after, before) }

// RecordTrailers returns kept, the fields RecordHeader returned, with the
// trailers of a response added under http.TrailerPrefix, as a record keeps
// them for the replay to send as trailers: the fields named in declared
// (the values of the Trailer field when the handler wrote its status,
// which is when net/http reads them) and those set under the prefix, their
// values taken from h, the header when the handler returned; never
// Set-Cookie. It returns kept itself when there are none.
func RecordTrailers(kept http.Header, declared []string, h http.Header) http.Header {
	return withTrailers(kept, declared, h)
}

// DeclaredLength returns the Content-Length in h, the header a handler
// answered with status, that net/http holds the body to, as net/http reads
// it: ok is false when h has none, or one that is not a length, and for an
// answer to a HEAD request (head; its Content-Length describes a GET's
// body) or of a status without a body (204, 304). A body of another
// length reaches the client broken: the middleware records it as
// Response.Cut.
func DeclaredLength(h http.Header, head bool, status int) (n int64, ok bool) {
	vs := h["Content-Length"]
	if len(vs) != 1 || head || status == http.StatusNoContent || status == http.StatusNotModified {
		return 0, false
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	return n, err == nil && n >= 0
}
