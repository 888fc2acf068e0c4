package httpretry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/internal/credential"
	"github.com/yaoki-go/yaoki/retry"
)

// call is one logical request: the caller's request and what its attempts
// share (the Idempotency-Key, the buffered body) and have seen.
type call struct {
	c   *config
	req *http.Request

	key        string   // the Idempotency-Key created for this call, "" if none
	keyVal     []string // key as a header value, shared by every attempt
	notRetried error    // ErrNotIdempotent or ErrBodyNotReplayable: sent once
	bodyOK     bool     // the body can be sent again (if there is one)
	buf        []byte   // the buffered body, when the caller's had no GetBody
	getBody    func() (io.ReadCloser, error)
	firstBody  io.ReadCloser // a body too long to buffer: its read prefix, then the rest
	sent       bool          // the caller's body was handed over (to Base, or read and closed)

	n          int            // attempts made (sent, once the call has ended)
	status     int            // the last attempt's status, 0 if it had none
	lastStatus int            // the last status received by any attempt, 0 if none
	unsent     bool           // an attempt was not sent (the last one, unless hedged): its request could not be built, or its context had ended
	last       *StatusError   // the last attempt's retryable (or final) status answer
	resp       *http.Response // the last response an unhedged attempt handed to the loop
	final      string         // why a retryable status was made final: an event reason

	// hs is set for a hedged call, whose attempts run concurrently: they
	// share the fields above under hs.mu.
	hs *hedgeState
	// obs is the call's observer, when the Transport has one: an unhedged
	// attempt's start is reported through it once its request leaves.
	obs *observer
}

// prepare decides, before the first attempt, whether the request may be
// sent more than once, creates its Idempotency-Key and makes its body
// replayable.
func (cl *call) prepare() error {
	req := cl.req
	replayable := Idempotent(req.Method)
	if !replayable && callerKey(req.Header) != "" {
		replayable = true
	}
	if !replayable && cl.c.keyMode == KeyAuto {
		cl.key = NewKey()
		cl.keyVal = []string{cl.key}
		replayable = true
	}
	if !replayable {
		cl.notRetried = ErrNotIdempotent
	}
	cl.bodyOK = true
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil || cl.c.attempts == 1 {
		return nil
	}
	if retry.IsSingleAttempt(req.Context()) {
		return nil
	}
	// A body without GetBody: buffer it, or send it once.
	max := cl.c.maxBody
	if max < 0 || req.ContentLength > max {
		cl.noReplay(nil)
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, max+1))
	if err != nil {
		return fmt.Errorf("httpretry: reading the request body to buffer it: %w", err)
	}
	if int64(len(data)) > max {
		cl.noReplay(data)
		return nil
	}
	if req.ContentLength > 0 && int64(len(data)) != req.ContentLength {
		// http.Transport refuses such a body; buffered, it would be sent
		// as complete with the length it happened to have.
		return fmt.Errorf("httpretry: request body has %d bytes, ContentLength says %d: set ContentLength to the body's length, or to 0 when it is not known", len(data), req.ContentLength)
	}
	cl.sent = true
	_ = req.Body.Close()
	cl.buf = data
	cl.getBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return nil
}

// noReplay makes the call single-attempt because its body cannot be sent
// again; prefix is what was read of it while trying to buffer it.
func (cl *call) noReplay(prefix []byte) {
	cl.bodyOK = false
	cl.notRetried = ErrBodyNotReplayable
	if prefix != nil {
		cl.firstBody = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(prefix), cl.req.Body), cl.req.Body}
	}
}

// run makes the attempts through the retry loop and turns its outcome into
// RoundTrip's. cl stays on the caller's stack unless the call is observed
// or hedged: it is then copied to the heap, with the observer's state, into
// an observedCall: a hedged call's is allocated (its hedges may outlive the
// call), an unhedged call's is taken from a pool and put back when the
// call returns, as nothing refers to it then.
func (cl *call) run() (*http.Response, error) {
	if cl.c.hedge != nil && cl.hedgeable() {
		if o := cl.c.observer; o != nil {
			oc := newObservedCall(cl, o)
			return oc.call.hedged(oc)
		}
		h := new(call) // its attempts share it
		*h = *cl
		return h.hedged(nil)
	}
	if o := cl.c.observer; o != nil {
		oc := pooledObservedCall(cl, o)
		resp, err := oc.observed()
		oc.release()
		return resp, err
	}
	returned := false
	defer cl.unwind(&returned)
	resp, err := retry.DoValueWith(cl.req.Context(), cl.c.retrierFor(cl.req), cl.attempt)
	returned = true
	return cl.finish(resp, err)
}

// unwind closes what an unhedged call holds when the loop panicked (its
// observer did, or a guard): the last response received, so that its
// connection goes back, and the caller's body if it was not handed over.
// returned says the loop returned: nothing to do.
func (cl *call) unwind(returned *bool) {
	if *returned {
		return
	}
	if l := cl.last; l != nil {
		l.discard()
	}
	if r := cl.resp; r != nil && (cl.last == nil || cl.last.resp != r) {
		drain(r)
	}
	if !cl.sent {
		closeBody(cl.req)
	}
}

// observed is run with the loop's events passed to the Transport's
// observer, completed with what HTTP knows.
func (oc *observedCall) observed() (*http.Response, error) {
	cl := &oc.call
	p := cl.c.retrierFor(cl.req).Policy()
	p.Env = oc.env(p.Env)
	returned := false
	defer cl.unwind(&returned)
	resp, err := retry.DoValue(cl.req.Context(), p, cl.attempt)
	returned = true
	return cl.finish(resp, err)
}

// finish turns the loop's outcome into RoundTrip's.
func (cl *call) finish(resp *http.Response, err error) (*http.Response, error) {
	if !cl.sent {
		closeBody(cl.req) // no attempt was made: a guard refused the first
	}
	if err == nil {
		return resp, nil
	}
	return cl.gaveUp(resp, err)
}

// gaveUp hands over the last response when retries ended on a status, or
// builds the error. It is kept out of finish so that the success path's
// frame stays small.
func (cl *call) gaveUp(resp *http.Response, err error) (*http.Response, error) {
	var re *retry.Error
	gaveUp := errors.As(err, &re)
	// Retries ended on a status: hand over the last answer, untouched,
	// unless it was already thrown away or the caller cancelled.
	if l := cl.last; l != nil && !l.done && gaveUp && re.Reason != retry.ReasonCancelled {
		return l.resp, nil
	}
	if l := cl.last; l != nil {
		l.discard()
	}
	if resp != nil && (cl.last == nil || resp != cl.last.resp) {
		drain(resp) // not expected: the loop returns the last value only
	}
	return nil, cl.fail(err)
}

// fail builds RoundTrip's error.
func (cl *call) fail(err error) error {
	e := &Error{Method: methodOf(cl.req), URL: credential.RedactedURL(cl.req.URL), Attempts: cl.attemptsSent(), LastStatus: cl.lastStatus, Key: cl.idempotencyKey(), Err: err}
	var re *retry.Error
	if errors.As(err, &re) {
		if cl.unsent || cl.hs != nil {
			// The loop counted attempts that never left: one whose
			// request could not be built or whose context had ended,
			// and for a hedged call, hedges that the call ended before
			// they started. re is this call's own: say what was sent in
			// its message too.
			re.Attempts = e.Attempts
		}
		e.Reason = re.Reason
		if re.Reason == retry.ReasonPermanent && cl.notRetried != nil && cl.n == 1 {
			e.NotRetried = cl.notRetried
		}
	}
	return e
}

// attemptsSent returns the number of attempts sent: those made, less those
// whose request could not be built. A hedged call's are counted apart, as
// its attempts run concurrently (fail is called under cl.hs.mu).
func (cl *call) attemptsSent() int {
	if cl.hs != nil {
		return cl.n - cl.hs.unbuilt
	}
	return cl.n
}

// attempt sends one attempt. actx is the loop's context for it: the
// caller's, or a child bounded by Policy.AttemptTimeout and
// Policy.MaxElapsed.
func (cl *call) attempt(actx context.Context) (*http.Response, error) {
	if ctx := cl.req.Context(); ctx.Err() != nil {
		// The caller's context ended before this attempt left: nothing is
		// sent, and it is not counted.
		cl.unsent = true
		return nil, context.Cause(ctx)
	}
	cl.n++
	prev := cl.status
	cl.status = 0
	if l := cl.last; l != nil {
		l.discard() // normally done in OnRetry already
		cl.last = nil
	}
	cl.resp = nil
	var b *bound
	ctx := cl.req.Context()
	if actx != ctx || cl.c.attemptTimeout > 0 {
		b = cl.bind(actx)
		ctx = b.ctx
	}
	req, err := cl.request(ctx)
	if err != nil {
		if b != nil {
			b.release(nil, err)
		}
		cl.n-- // not sent: the call ends here, so the count stays honest
		cl.status = prev
		cl.unsent = true
		return nil, retry.Permanent(err)
	}
	if o := cl.obs; o != nil {
		o.sent(cl.req.Context())
	}
	resp, err := cl.c.base.RoundTrip(req)
	if err == nil && cl.c.readBody > 0 && !cl.retries(resp) {
		if err = cl.c.readAhead(resp); err != nil {
			resp = nil
		}
	}
	if b != nil {
		resp, err = b.release(resp, err)
	}
	if err != nil {
		if resp != nil {
			drain(resp) // a RoundTripper must not return both; keep the connection anyway
		}
		if cl.notRetried != nil && !(cl.bodyOK && neverLeft(err)) {
			return nil, retry.Permanent(err)
		}
		return nil, err
	}
	cl.status = resp.StatusCode
	cl.lastStatus = resp.StatusCode
	cl.resp = resp
	if !cl.retries(resp) {
		return resp, nil
	}
	se := &StatusError{Code: resp.StatusCode, Status: resp.Status, Hint: -1, req: cl.req, resp: resp}
	cl.last = se
	switch {
	case cl.notRetried != nil:
		cl.final = reasonKey(cl.notRetried)
		return resp, retry.Permanent(se)
	case cl.c.dnrHdr != "" && doNotRetry(resp.Header, cl.c.dnrHdr):
		cl.final = "do_not_retry"
		return resp, retry.Permanent(se)
	}
	se.Hint = hint(resp, time.Now())
	return resp, se
}

// doNotRetry reports whether the do-not-retry field name of h says
// "true" (in any case). Two layers may each have added it, and a proxy
// that merges repeated fields (Node.js, Envoy) made one comma-separated
// line of them: any "true", in any line, is final.
func doNotRetry(h http.Header, name string) bool {
	for _, l := range h[name] {
		for l != "" {
			var v string
			v, l, _ = strings.Cut(l, ",")
			if strings.EqualFold(strings.TrimSpace(v), "true") {
				return true
			}
		}
	}
	return false
}

// retries reports whether resp's status is one the call retries: one of
// the Transport's Statuses, or a 409 Conflict with Retry-After to a request
// with an Idempotency-Key, by which the server says that the key's first
// request is still running (the Idempotency-Key draft; the idempotency
// middleware's in_progress): a later attempt gets its answer.
func (cl *call) retries(resp *http.Response) bool {
	if cl.c.statuses.has(resp.StatusCode) {
		return true
	}
	if resp.StatusCode != http.StatusConflict {
		return false
	}
	_, hinted := resp.Header[header.RetryAfter]
	return hinted && cl.idempotencyKey() != ""
}

// idempotencyKey returns the Idempotency-Key the call's attempts carry.
func (cl *call) idempotencyKey() string {
	if cl.key != "" {
		return cl.key
	}
	return callerKey(cl.req.Header)
}

// callerKey returns the key of the caller's Idempotency-Key field, or of
// its X-Idempotency-Key, or "". A field name is case-insensitive (RFC 9110
// §5.1): a caller may have written it into the map under a name not in
// canonical form ("idempotency-key", as HTTP/2 and configuration files
// spell it), which net/http sends as it is and the server reads as the
// key; so does the transport, rather than send the request once as if it
// had none, or add a second, created key beside it.
func callerKey(h http.Header) string {
	if k := h.Get(header.IdempotencyKey); k != "" {
		return k
	}
	if k := h.Get(header.XIdempotencyKey); k != "" {
		return k
	}
	var x string
	for name, vs := range h {
		if len(vs) == 0 || vs[0] == "" {
			continue
		}
		if strings.EqualFold(name, header.IdempotencyKey) {
			return vs[0]
		}
		if x == "" && strings.EqualFold(name, header.XIdempotencyKey) {
			x = vs[0]
		}
	}
	return x
}

// hint returns the wait the server asked for in resp, or -1. A date in
// Retry-After or a rate-limit reset time is the server's clock's: it is
// read against the answer's Date, stamped by the same clock, plus its Age
// (the seconds a cache held it), when there is a valid Date, so that a
// client whose clock is off (a VM that drifted, a device without NTP)
// waits what the server asked; against now otherwise. Retry-After is a
// singleton field: an answer that has it more than once (a proxy that
// adds its own to the server's) asked for each, and the longest valid one
// is the hint, so that the client comes back before none of them.
func hint(resp *http.Response, now time.Time) time.Duration {
	vs := resp.Header[header.RetryAfter]
	if d, ok := parseDate(resp.Header.Get(header.Date), now); ok {
		now = d
		if v := resp.Header.Get(header.Age); v != "" { // ParseUint("") allocates its error
			if a, err := strconv.ParseUint(v, 10, 32); err == nil {
				now = now.Add(time.Duration(a) * time.Second)
			}
		}
	}
	h := time.Duration(-1)
	for _, v := range vs {
		if d, ok := ParseRetryAfter(v, now); ok && d > h {
			h = d
		}
	}
	if h >= 0 {
		return h
	}
	// The rate-limit fields: on 429 and 503 (the quota is why they came),
	// and on any other status retried when they say the quota is spent.
	if d, ok := rateLimitReset(resp.Header, now, !throttledStatus(resp.StatusCode)); ok {
		return d
	}
	return -1
}

// request returns the request for the next attempt: a clone of the
// caller's, with ctx, the attempt header, the Idempotency-Key and a fresh
// body; or the caller's own request for a first attempt that needs none of
// these changes, such as one whose header already says "Attempt-Count: 1"
// (a reverse proxy that builds the outgoing request can set it there, and
// spare each request a copy of the request and of its header).
func (cl *call) request(ctx context.Context) (*http.Request, error) {
	orig := cl.req
	hdr := cl.key != "" || (cl.c.attemptHdr != "" && !cl.numbered())
	if !hdr && cl.n == 1 && cl.buf == nil && cl.firstBody == nil && ctx == orig.Context() {
		cl.sent = true
		return orig, nil // nothing to change: no clone needed
	}
	r := orig.WithContext(ctx)
	if hdr {
		r.Header = cl.header()
	}
	hasBody := orig.Body != nil && orig.Body != http.NoBody
	switch {
	case cl.buf != nil:
		r.Body, _ = cl.getBody()
		r.GetBody = cl.getBody
		if sendsTrailer(orig) {
			// Sent chunked, as the caller's would be: net/http sends a
			// trailer only after a chunked body, empty or not.
			break
		}
		r.ContentLength = int64(len(cl.buf))
		if len(cl.buf) == 0 {
			r.Body, r.GetBody = http.NoBody, nil
		}
	case cl.n == 1:
		if cl.firstBody != nil {
			r.Body = cl.firstBody
		}
		cl.sent = true
	case hasBody && orig.GetBody != nil:
		b, err := orig.GetBody()
		if err != nil {
			return nil, fmt.Errorf("httpretry: GetBody for attempt %d: %w", cl.n, err)
		}
		r.Body = b
	case hasBody:
		// Unreachable: a body that cannot be replayed makes the call
		// single-attempt. Refuse rather than send an empty body.
		return nil, errors.New("httpretry: request body cannot be sent again")
	}
	return r, nil
}

// sendsTrailer reports whether net/http sends the trailer of req, a
// request with a body: it has one, and the body goes chunked (its length
// unknown, or chunked asked for).
func sendsTrailer(req *http.Request) bool {
	return len(req.Trailer) > 0 && (req.ContentLength <= 0 || slices.Contains(req.TransferEncoding, "chunked"))
}

// numbered reports whether the caller's request already carries the
// attempt header with this attempt's number, and nothing else in it, or
// the number of a caller that retries (callerAttempt).
func (cl *call) numbered() bool {
	vs := cl.req.Header[cl.c.attemptHdr]
	return len(vs) == 1 && (vs[0] == attemptNumber(cl.n) || cl.callerAttempt(vs[0]))
}

// callerAttempt reports whether v, the attempt header of the caller's
// request, is the number of an attempt of a layer above that retries,
// which this attempt sends on: the call is a single attempt because of
// that layer (retry.SingleAttempt: layer.Middleware saw the number come
// in) and v is a positive decimal number (digits only, at most 10). A
// gateway that relays the request then tells the upstream which of its
// caller's attempts this is, where its own loop's number would always be
// 1.
func (cl *call) callerAttempt(v string) bool {
	if cl.n != 1 || len(v) == 0 || len(v) > 10 || strings.Trim(v, "0") == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return retry.IsSingleAttempt(cl.req.Context())
}

// header returns a copy of the caller's header map with the attempt number
// and the created Idempotency-Key set. The value slices are shared with the
// caller's header, as net/http's own Request.WithContext shares the whole
// map: neither side writes them (a RoundTripper must not modify its
// request). A shallow copy costs a third of a deep one (maps.Clone copies
// a small map in one block instead of iterating it).
func (cl *call) header() http.Header {
	h := maps.Clone(cl.req.Header)
	if h == nil {
		h = make(http.Header, 2)
	}
	if cl.c.attemptHdr != "" && !cl.numbered() {
		h[cl.c.attemptHdr] = []string{attemptNumber(cl.n)}
	}
	if cl.key != "" {
		h[header.IdempotencyKey] = cl.keyVal
	}
	return h
}

// attemptNumber formats n, without a call for the first attempts.
func attemptNumber(n int) string {
	if n >= 1 && n <= 9 {
		return "123456789"[n-1 : n]
	}
	return strconv.Itoa(n)
}

// reasonKey returns the event reason for a sentinel of this package.
func reasonKey(err error) string {
	switch err {
	case ErrNotIdempotent:
		return "not_idempotent"
	case ErrBodyNotReplayable:
		return "body_not_replayable"
	}
	return ""
}

// bound holds an attempt to its time limits until its response headers
// arrive. The retry loop cancels actx, its context for the attempt, when
// the attempt returns and when the loop ends; that would cut the body of a
// response handed to the caller. So the attempt runs on a child of the
// caller's context that follows actx (bounded by Policy.MaxElapsed) and
// the attempt timeout only until the headers arrive: these limits bound the
// wait for an answer, the caller's context bounds the reading of its body.
type bound struct {
	ctx     context.Context
	follows context.Context // actx, when ctx follows it
	cancel  context.CancelCauseFunc
	stop    func() bool // stops following actx
	timer   *time.Timer
	timeout time.Duration
}

// errTimedOut is the cause an attempt's context is cancelled with when its
// timeout passes.
var errTimedOut = errors.New("httpretry: attempt timed out")

func (cl *call) bind(actx context.Context) *bound {
	b := &bound{timeout: cl.c.attemptTimeout}
	b.ctx, b.cancel = context.WithCancelCause(cl.req.Context())
	if actx != cl.req.Context() {
		b.follows = actx
		b.stop = context.AfterFunc(actx, func() { b.cancel(context.Cause(actx)) })
	}
	if b.timeout > 0 {
		b.timer = time.AfterFunc(b.timeout, func() { b.cancel(errTimedOut) })
	}
	return b
}

// release ends the attempt's limits and returns what the attempt should
// return: the response, with a body that releases the context when closed,
// or the error (a *timeoutError if the attempt timed out).
func (b *bound) release(resp *http.Response, err error) (*http.Response, error) {
	fired := false
	if b.stop != nil && !b.stop() {
		fired = true
	}
	if b.timer != nil && !b.timer.Stop() {
		fired = true
	}
	if fired || err != nil {
		if err == nil || b.ctx.Err() != nil {
			// The limit passed while the headers arrived: the body is cut.
			drain(resp)
			resp = nil
			if context.Cause(b.ctx) == errTimedOut {
				err = &timeoutError{d: b.timeout}
			} else if err == nil {
				err = context.Cause(b.ctx)
			}
			if err == nil {
				// actx ended and its AfterFunc has started, but has not
				// cancelled ctx yet: the cause is actx's.
				err = context.Cause(b.follows)
			}
		}
		b.cancel(nil)
		return resp, err
	}
	if resp == nil {
		b.cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: b.cancel}
	return resp, nil
}

// timeoutError is an attempt whose response headers did not arrive within
// Policy.AttemptTimeout. It matches retry.ErrAttemptTimeout (budgets charge
// timeouts more) and is retried when the request may be sent again.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("httpretry: attempt timed out: no response headers within %v", e.d)
}
func (e *timeoutError) Is(target error) bool { return target == retry.ErrAttemptTimeout }
func (e *timeoutError) Timeout() bool        { return true }

// cancelOnClose releases an attempt's context when its response body is
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
