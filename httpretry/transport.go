// Package httpretry is package retry specialised to HTTP: an
// http.RoundTripper that sends a request again when an attempt fails for a
// while, and gets the HTTP parts right.
//
// Most callers want
//
//	client := httpretry.NewClient(retry.Policy{})
//	resp, err := client.Get(url)
//
// or, to keep an existing transport and client settings,
//
//	client.Transport = &httpretry.Transport{Base: client.Transport}
//
// What is retried: the statuses 408, 429, 500, 502, 503 and 504 (429 and
// 503 count as throttling: the backoff starts from Policy.ThrottleBase), a
// 409 with Retry-After to a request with an Idempotency-Key (the server
// still runs the key's first request), and transport errors that can
// succeed later (see Classify). Which requests: GET, HEAD, OPTIONS,
// TRACE, PUT and DELETE; POST, PATCH and other methods only when they
// carry an Idempotency-Key (given by the caller, or created by the
// transport when told to, see KeyMode); any request whose connection could
// not even be made, or whose HTTP/2 stream the server refused
// (REFUSED_STREAM: not processed, RFC 9113 §8.7). When: after the policy's
// backoff, or after what the server asked for (Retry-After, the longest if
// it came more than once, or the RateLimit fields on 429 and 503) plus up
// to 20 % jitter; a server asking for more than Policy.MaxRetryAfter
// (60 s), however much more (a year, a number of seconds past what a
// time.Duration holds), or for a wait that would end after the request's
// deadline, gets its answer returned at once; a malformed hint is no hint.
//
// A Transport reads status codes, which a RoundTripper normally must not
// interpret; otherwise it keeps the RoundTripper contract: each attempt is
// sent as a clone of the caller's request, or as the request itself when
// nothing in it is to change (the request is never modified), bodies are
// replayed only through GetBody (a body without GetBody is buffered up to
// MaxBufferedBody, and a longer one is sent once), every response thrown
// away is drained (up to 64 KiB, for up to 250 ms) and closed so that its
// connection is reused, the request body is closed even when no attempt is
// made, and RoundTrip returns a response or an error, never both. The
// response's Request is the request sent to obtain it: the clone of the
// attempt that got it, whose header says its Attempt-Count and the
// Idempotency-Key the transport created (package httpletter reads both).
// When retries end on a retryable status, the caller gets the last
// response, untouched and readable, with no error, as http.Client would
// give it; when they end on a transport error, an *Error that names the
// request, counts the attempts and wraps the cause.
//
// An answer is returned at its headers, its body unread, as http.Client
// returns it; with ReadBody, each attempt reads the body (up to so many
// bytes) first, so that a body cut short is retried as the transport
// error it is (a *BodyCutError).
//
// One retrying layer: every attempt carries its number in the header
// Attempt-Count ("1" for the first), so that a server that itself calls
// other services can tell that its caller retries and make its own outgoing
// calls single-attempt (retry.SingleAttempt); a request whose context says
// retry.IsSingleAttempt makes one attempt only. A response carrying
// Do-Not-Retry: true is final whatever its status. Both header names are
// configurable.
package httpretry

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/retry"
)

// Defaults that a zero Transport field stands for.
const (
	// DefaultMaxBufferedBody is the largest request body without GetBody
	// that is buffered so that it can be sent again: 1 MiB.
	DefaultMaxBufferedBody = 1 << 20
	// NoHeader as AttemptHeader or DoNotRetryHeader turns the header off.
	NoHeader = "-"
)

// KeyMode says whether the Transport creates Idempotency-Keys.
type KeyMode uint8

const (
	// KeyOff, the zero value: the transport creates no key. A request that
	// is not idempotent (POST, PATCH, ...) is retried only if the caller set
	// an Idempotency-Key.
	KeyOff KeyMode = iota
	// KeyAuto: a request that is not idempotent and has no key gets one,
	// created once per logical request (a random UUID, version 4, from
	// crypto/rand) and sent unchanged on every attempt, so that a server
	// that honours the header executes it once. A key the caller set is
	// never replaced. Idempotent requests get none.
	KeyAuto
)

// String returns "off" or "auto".
func (m KeyMode) String() string {
	switch m {
	case KeyOff:
		return "off"
	case KeyAuto:
		return "auto"
	}
	return fmt.Sprintf("KeyMode(%d)", uint8(m))
}

// Transport is an http.RoundTripper that retries: it sends each request
// through Base, and when an attempt fails with a retryable status or
// transport error it waits as Policy says and sends it again. See the
// package documentation for the rules.
//
// The zero value is ready to use: the default retry.Policy (3 attempts,
// exponential backoff with full jitter, server hints up to 60 s) over
// http.DefaultTransport. Set fields before the first request and do not
// change them afterwards: the Transport reads them once, on first use
// (invalid values make every RoundTrip fail with an error matching
// ErrInvalidConfig; Validate reports them earlier). A Transport is safe
// for concurrent use and, like http.Transport, meant to be shared; do not
// copy it after first use.
type Transport struct {
	// Base sends each attempt. Nil: http.DefaultTransport. The body of a
	// response it returns may be closed while a Read waits on it (to cut
	// the drain of a thrown-away answer), as net/http's transports allow.
	Base http.RoundTripper

	// Policy says how often and when to retry. Its AttemptTimeout bounds
	// each attempt's wait for response headers (the body is then bounded by
	// the request's context only, so that a response handed over stays
	// readable); a timed-out attempt is sent again only if the request may
	// be (it may have been executed). Its Classify, if set, is
	// asked only about errors the HTTP rules find retryable (see Classify)
	// and may make them final or throttled; it cannot make retryable what
	// those rules refuse. Its OnRetry sees the attempt's error (a
	// *StatusError for a retryable status, whose response body is already
	// drained). Its Observer, if set, receives the same events as Observer.
	Policy retry.Policy

	// Statuses are the response statuses retried, each in 100..599. Nil:
	// DefaultStatuses (408, 429, 500, 502, 503, 504); an empty non-nil
	// slice retries no status (transport errors only). 429 and 503 are
	// classed as throttling whenever they are in the set. Besides them, a
	// 409 Conflict with Retry-After to a request with an Idempotency-Key
	// is retried after the wait it asks: the server is still running the
	// key's first request (package idempotency's in_progress), whose
	// answer a later attempt gets.
	Statuses []int

	// IdempotencyKey says whether the transport creates Idempotency-Keys
	// for requests that are not idempotent. Zero: KeyOff.
	IdempotencyKey KeyMode

	// MaxBufferedBody is the largest request body without GetBody that is
	// buffered in memory so that it can be sent again. A longer body (by
	// its ContentLength, or found while reading) is sent once, streamed,
	// and not retried: RoundTrip's *Error then matches
	// ErrBodyNotReplayable, and the observer's give-up event has reason
	// "body_not_replayable". Requests made with http.NewRequest from a
	// bytes.Buffer, bytes.Reader or strings.Reader have GetBody and are
	// never buffered. A buffered body whose length is not the request's
	// ContentLength (when that is positive) makes RoundTrip fail before
	// anything is sent, as http.Transport fails. A buffered body is sent
	// with its length as Content-Length, but for a request with a Trailer,
	// which net/http sends only after a chunked body: it goes chunked, as
	// the caller's would, with its trailer. Zero: DefaultMaxBufferedBody
	// (1 MiB); negative: never buffer.
	MaxBufferedBody int64

	// ReadBody is how many bytes of an answer's body each attempt reads
	// before the answer is returned, so that a body cut short within them
	// (the connection closed or reset before its end, the link cut as
	// the answer was due) fails the attempt, which is retried as the
	// transport error it is: the request is sent again if it may be (an
	// idempotent method, or an Idempotency-Key, whose server replays the
	// answer), and the caller gets the whole body of the attempt that
	// succeeded. Policy.AttemptTimeout then bounds the reading of those
	// bytes too. A body that fits is read whole and its connection freed
	// before RoundTrip returns; a longer one is returned with what was
	// read first and the rest as it comes, a cut in the rest not retried.
	// Only answers to be returned are read (those retried are drained). Not
	// for streams (server-sent events, long polls): RoundTrip would wait
	// for ReadBody bytes or the end. Zero: the body is returned unread, as
	// http.Client returns it, and a cut in it is the caller's to see; it
	// must not be negative.
	ReadBody int64

	// AttemptHeader names the request header that carries the attempt
	// number ("1", "2", ...), replacing any value the caller set. Empty:
	// header.AttemptCount ("Attempt-Count"); NoHeader ("-"): not sent.
	// A request that already carries it with the value "1" (and needs no
	// Idempotency-Key nor buffered body) is sent as it is on its first
	// attempt, without the copy of the request that a header to change
	// takes. A single attempt (retry.SingleAttempt: a layer above
	// retries) keeps an attempt number (a positive decimal number) the
	// request already carries, the number of that layer's attempt, for a gateway that
	// relays its caller's request.
	AttemptHeader string

	// DoNotRetryHeader names the response header by which a server asks not
	// to be retried: a response where it is "true" (in any case) is
	// returned at once. Empty: header.DoNotRetry ("Do-Not-Retry");
	// NoHeader ("-"): ignored.
	DoNotRetryHeader string

	// Observer, if set, receives every event of every request: those of
	// the retry loop (attempt start and end, retry scheduled, gave up),
	// with Component "httpretry" and the request's Method, Host (the URL's
	// host, with its port when the URL has one: event.Event.Server splits
	// it into server.address and server.port) and the response's Status
	// added. Nil (and a nil Policy.Env.Observer): no events, no cost.
	Observer event.Observer

	// Guards gives each destination host its own retry budget, circuit
	// breaker and throttle (see Guards, in hosts.go). The zero value gives
	// each host the recommended retry budget (budget.Recommended: a new
	// host's first failed call gets its two retries, further retries are
	// earned from successes) and no breaker or throttle. Guards set in Policy are
	// shared by all hosts instead.
	Guards Guards

	// Hedge, if set, hedges the requests that are safe to send twice (an
	// idempotent method, or an Idempotency-Key, which every copy carries
	// unchanged; a body that can be sent again): when an attempt has not
	// answered after the hedge delay, the same request is sent again while
	// the first still runs, and the first answer that ends the call wins;
	// the others are cancelled and their responses drained and closed.
	// Each destination host gets its own hedge.Hedger from this
	// configuration (its own latencies, budget and brownout stop; a
	// Hedger set in Policy.Env is shared by every host instead). Hedges
	// are attempts: they count towards Policy.MaxAttempts and go through
	// the host's budget, breaker and throttle as retries do. Nil: no
	// hedging, unless Policy.Env has a Hedger. &hedge.Config{} hedges with
	// the defaults (after the 97th percentile of the host's recent
	// latencies, 2 hedges at most, 5 % of requests at most); see package
	// hedge.
	Hedge *hedge.Config

	once sync.Once
	cfg  *config
	err  error
}

// config is what a Transport's fields say, checked and resolved once.
// Per-host guards (budgets, breakers, throttles keyed by destination host)
// belong here too: retrierFor is where a request meets its policy.
type config struct {
	base       http.RoundTripper
	retrier    *retry.Retrier
	attempts   int // the policy's attempt limit, 0 for unlimited
	statuses   statusSet
	attemptHdr string // canonical name, "" for none
	dnrHdr     string // canonical name, "" for none
	maxBody    int64  // -1: never buffer
	readBody   int64  // Transport.ReadBody
	// attemptTimeout is Policy.AttemptTimeout, applied here rather than
	// by the loop: it bounds the wait for response headers only, and a
	// timed-out attempt follows the HTTP rules (a POST without key is not
	// sent again).
	attemptTimeout time.Duration
	keyMode        KeyMode
	observer       event.Observer
	hosts          *hosts // per-host guards (shared when Policy sets them all)
	// hedge is the hedging configuration, nil when requests are not
	// hedged.
	hedge *hedge.Config
	// observed holds the observedCalls of unhedged calls that have
	// returned, so that observing a request costs it no allocation.
	observed sync.Pool
}

// RoundTrip sends req, retrying as the Transport's fields say; see the
// package documentation. It implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := t.config()
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("httpretry: nil Request.URL")
	}
	cl := call{c: c, req: req}
	if err := cl.prepare(); err != nil {
		closeBody(req)
		return nil, cl.fail(err)
	}
	return cl.run()
}

// Validate reports the first field that is out of range, naming it and
// what is accepted; nil if the Transport can be used.
func (t *Transport) Validate() error {
	_, err := t.build()
	return err
}

// Client returns an *http.Client that sends its requests through t.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// NewClient returns an *http.Client that retries as p says, with the
// default Transport settings over http.DefaultTransport. The zero Policy is
// the default policy.
func NewClient(p retry.Policy) *http.Client {
	return (&Transport{Policy: p}).Client()
}

// CloseIdleConnections closes the idle connections of Base, if it has a
// CloseIdleConnections method (http.Transport has); http.Client's method of
// the same name calls it.
func (t *Transport) CloseIdleConnections() {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if ci, ok := base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (t *Transport) config() (*config, error) {
	t.once.Do(func() { t.cfg, t.err = t.build() })
	return t.cfg, t.err
}

// build checks the fields and resolves their defaults.
func (t *Transport) build() (*config, error) {
	c := &config{base: t.Base, keyMode: t.IdempotencyKey, maxBody: t.MaxBufferedBody}
	if c.base == nil {
		c.base = http.DefaultTransport
	}
	if t.IdempotencyKey > KeyAuto {
		return nil, configerr.Invalid(ErrInvalidConfig, "IdempotencyKey", t.IdempotencyKey, "KeyOff (0) or KeyAuto (1)")
	}
	if t.ReadBody < 0 {
		return nil, configerr.Invalid(ErrInvalidConfig, "ReadBody", t.ReadBody, "0 (answers returned unread) or a size in bytes")
	}
	c.readBody = t.ReadBody
	switch {
	case c.maxBody == 0:
		c.maxBody = DefaultMaxBufferedBody
	case c.maxBody < 0:
		c.maxBody = -1
	}
	statuses := t.Statuses
	if statuses == nil {
		statuses = DefaultStatuses()
	}
	for _, s := range statuses {
		if s < 100 || s > 599 {
			return nil, configerr.Invalid(ErrInvalidConfig, "Statuses", s, "status codes in 100..599")
		}
		c.statuses.add(s)
	}
	var err error
	if c.attemptHdr, err = headerName("AttemptHeader", t.AttemptHeader, header.AttemptCount); err != nil {
		return nil, err
	}
	if c.dnrHdr, err = headerName("DoNotRetryHeader", t.DoNotRetryHeader, header.DoNotRetry); err != nil {
		return nil, err
	}

	p := t.Policy
	c.attemptTimeout, p.AttemptTimeout = p.AttemptTimeout, 0
	if p.Env != nil {
		p.Env = p.Env.Clone() // the caller's Env is not changed
		c.observer = event.Multi(t.Observer, p.Env.Observer)
		p.Env.Observer = nil // added back per request, wrapped, when set
	} else {
		c.observer = t.Observer
	}
	userClassify := p.Classify
	p.Classify = func(err error) retry.Class {
		class := Classify(err)
		if class == retry.ClassPermanent || userClassify == nil {
			return class
		}
		return userClassify(err)
	}
	userOnRetry := p.OnRetry
	p.OnRetry = func(w retry.Wait) {
		// The loop has decided to retry: free the connection of the
		// response thrown away now, not after the wait.
		var se *StatusError
		if errors.As(w.Err, &se) {
			se.discard()
		}
		if userOnRetry != nil {
			userOnRetry(w)
		}
	}
	if t.Policy.AttemptTimeout < 0 {
		p.AttemptTimeout = t.Policy.AttemptTimeout // for Validate's message
	}
	if c.retrier, err = retry.New(p); err != nil {
		return nil, configerr.In(ErrInvalidConfig, "Policy", err)
	}
	c.attempts = p.Attempts()
	switch {
	case t.Hedge != nil:
		if err := t.Hedge.Validate(); err != nil {
			return nil, configerr.In(ErrInvalidConfig, "Hedge", err)
		}
		c.hedge = t.Hedge
	case p.Env != nil && p.Env.Hedger != nil:
		c.hedge = &hedge.Config{} // unused: the policy's Hedger serves every host
	}
	c.hosts = newHosts(t.Guards, c.retrier)
	if c.hedge != nil {
		c.hosts.hedged = c.hedgedRetrier
		if g := c.hosts.shared; g != nil {
			g.hedged = c.hedgedRetrier(c.retrier)
		}
	}
	return c, nil
}

// headerName resolves a header-name field: "" is def, NoHeader is none.
func headerName(field, v, def string) (string, error) {
	switch v {
	case "":
		return def, nil
	case NoHeader:
		return "", nil
	}
	if !header.ValidName(v) {
		return "", &configerr.Error{Err: ErrInvalidConfig, Field: field, Value: v, Problem: "not a header name", Want: "letters, digits and !#$%&'*+-.^_`|~, or \"-\" (NoHeader) for none"}
	}
	return http.CanonicalHeaderKey(v), nil
}

// retrierFor returns the retrier that applies to req. It is the seam where
// per-host guards plug in: one Retrier per destination host, each with its
// own budget, breaker and throttle.
func (c *config) retrierFor(req *http.Request) *retry.Retrier {
	return c.hosts.retrierFor(req)
}

// closeBody closes a request body that will not be handed to Base.
func closeBody(req *http.Request) {
	if req != nil && req.Body != nil {
		_ = req.Body.Close()
	}
}

// compile-time checks
var (
	_ http.RoundTripper = (*Transport)(nil)
	_ retry.Hinter      = (*StatusError)(nil)
)
