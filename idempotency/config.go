package idempotency

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

// Defaults that a zero Config field stands for.
const (
	// DefaultTTL is how long a completed record is kept: 24 h, as Stripe
	// does.
	DefaultTTL = 24 * time.Hour
	// DefaultLease is how long a request holds its key without renewing
	// it. The middleware renews the lease every third of it while the
	// handler runs, so the lease bounds how long a key stays blocked after
	// the process that held it died, not how long a handler may run.
	DefaultLease = 30 * time.Second
	// MinLease is the shortest lease accepted: the middleware renews it
	// every third of it, and shorter renewals would only load the store.
	MinLease = 30 * time.Millisecond
	// DefaultRetryAfter is the wait suggested to a request refused with
	// 409 because the first one is still running.
	DefaultRetryAfter = time.Second
	// DefaultMaxRequestBytes bounds the request body read to fingerprint it.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxResponseBytes bounds the response body kept for replay.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultStoreTimeout bounds each store call (Config.StoreTimeout).
	DefaultStoreTimeout = 5 * time.Second
)

// Config configures a Middleware. The zero value means the documented
// defaults: POST and PATCH, key optional, global keys, in-memory store,
// 24 h retention, 30 s lease, 1 MiB limits on request and response bodies.
type Config struct {
	// Store keeps the records. Nil: a MemoryStore with its defaults (one
	// per Middleware, so not shared between processes).
	Store Store
	// Methods are the methods the middleware applies to; requests with
	// other methods pass through untouched, key or not. Methods are
	// case-sensitive, compared as clients send them: New refuses a
	// standard method in another case ("post"), which would cover no
	// request. Nil: POST and
	// PATCH, the methods that are not idempotent by definition (RFC 9110
	// §9.2.2).
	Methods []string
	// Require makes the key mandatory for those methods: a request without
	// one is refused with 400. False: a request without a key passes
	// through and is executed as usual. (Middleware.Require makes it
	// mandatory for one route.)
	Require bool
	// Scope returns the scope of the request's key, typically the
	// authenticated principal (a user or API client id). The scope is part
	// of the record's identity, so a key used by one principal never
	// replays another's response, and two principals may use the same key.
	// Take it from what the server verified (a session, a token's
	// subject), never from a field the client states unchecked: a client
	// that sends another's principal and key gets that principal's stored
	// response.
	// Nil: every key is global, shared by all clients of the server, and
	// anyone who learns a key (and sends the same request) gets its stored
	// response; set Scope on any server with more than one client. It is
	// called after the middleware has read the body, with r.Body reading
	// those bytes again, so a Scope may take the principal from a form
	// field (r.PostFormValue); the handler then shares the parsed form. It
	// must be safe for concurrent use.
	Scope func(r *http.Request) string
	// FingerprintHeaders are request header fields that take part in the
	// fingerprint, besides the method, the target (path and query) and the
	// body (for example Content-Type), named in any case. Host stands for
	// r.Host (net/http takes the field out of r.Header): name it when one
	// middleware serves several hosts, whose requests with the same key,
	// path and body would otherwise be one request. New refuses
	// Transfer-Encoding, Trailer and Content-Length (the body's framing
	// takes no part; its bytes do), and a
	// name that is not a field name ("Content Type"): no request carries
	// it. Nil: none.
	FingerprintHeaders []string
	// TTL is how long a completed record is kept. Zero: DefaultTTL (24 h).
	TTL time.Duration
	// Lease is how long a record in progress stays held without being
	// renewed; see DefaultLease. The middleware renews it every third of
	// it, and sooner after a failed renewal; when the store refuses a
	// renewal or the lease ends before one gets through, the handler's
	// context is cancelled (its cause a *LeaseLostError). The store counts
	// the lease from the time Begin was sent: when Begin's reply takes a
	// third of the lease or more, the lease is renewed before the handler
	// runs, and the request is refused with 503 if it has ended and cannot
	// be. At least MinLease (30 ms). Zero: 30 s.
	Lease time.Duration
	// RetryAfter is the wait suggested to a request refused because the
	// first request with its key is still running (409) or because the
	// store is unavailable (503). It is sent in whole seconds, rounded up;
	// a negative value sends "Retry-After: 0" (come back now; a yaoki
	// client then waits its backoff, which spreads the clients told).
	// Zero: DefaultRetryAfter (1 s).
	RetryAfter time.Duration
	// MaxRequestBytes bounds the request body, which the middleware reads
	// whole to fingerprint it; a larger body is refused with 413. Zero:
	// DefaultMaxRequestBytes (1 MiB).
	MaxRequestBytes int64
	// MaxResponseBytes bounds the response body kept for replay. A larger
	// response is sent to the client in full but not kept: the record
	// remembers that the request was executed, its status and the size,
	// and a retry gets a 410 problem (reason response_too_large, with the
	// original status) rather than running the handler again. With
	// ReleaseTooLarge the record is released instead. Zero:
	// DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int
	// ReleaseTooLarge releases the record of a response over
	// MaxResponseBytes, so that a retry runs the handler again: only for
	// handlers that are safe to run twice.
	ReleaseTooLarge bool
	// Keep says whether a response with this status is stored. A response
	// that is not stored releases its record, so a retry runs the handler
	// again. Nil: every status below 500 except 408 and 429 is stored (2xx,
	// 3xx and 4xx: the outcome of the request, replayed to every retry);
	// 5xx, 408 and 429 are not (they ask the client to try again, and
	// storing them would replay the failure to every retry).
	Keep func(status int) bool
	// StoreTimeout bounds each store call: Begin (a request whose Begin
	// has no reply within it gets 503, its claim released), and those made
	// after the handler started (renewals, Complete, Release), which run
	// even when the client has gone away. A failed Complete is tried again, with backoff (10 ms
	// doubled per try, full jitter, at most 1 s), while the client waits
	// for its response for up to StoreTimeout since the first try; then
	// the response is sent and Complete is tried on in the background, the
	// lease renewed, until CompleteGrace (10 min) past the lease's end, so
	// that a store back before a retry claimed the key gets the record
	// (a store refuses the late Complete once another request has claimed
	// the key). Zero: DefaultStoreTimeout (5 s).
	StoreTimeout time.Duration
	// Observer receives an event.Replay for each replay and an
	// event.Conflict for each request the middleware refuses. Nil: none.
	Observer event.Observer
	// ErrorLog receives store failures that cannot be reported to the
	// client (a Complete that failed after the response was sent). A line
	// names the request's path escaped as sent (%0A, not a line break) and
	// its key quoted, so that a client cannot write a line of its own.
	// Nil: the log package's standard logger.
	ErrorLog *log.Logger
	// Now returns the current time for the store's decisions. Nil:
	// time.Now. Tests set it to step time.
	Now func() time.Time
}

// DefaultKeep is the default Config.Keep: store every status below 500
// except 408 and 429.
func DefaultKeep(status int) bool {
	return status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// ErrInvalidConfig matches the errors of New for a Config with a field out
// of range; the message names the field, its value and what is accepted.
var ErrInvalidConfig = errors.New("idempotency: invalid configuration")

// validate fills the defaults into a copy of c, or says which field is out
// of range.
func (c Config) validate() (Config, error) {
	bad := func(field string, value any, want string) (Config, error) {
		return Config{}, configerr.Invalid(ErrInvalidConfig, field, value, want)
	}
	switch {
	case c.TTL < 0:
		return bad("TTL", c.TTL, fmt.Sprintf("> 0, or 0 for the default (%v)", DefaultTTL))
	case c.Lease < 0 || c.Lease > 0 && c.Lease < MinLease:
		return bad("Lease", c.Lease, fmt.Sprintf("≥ %v, or 0 for the default (%v)", MinLease, DefaultLease))
	case c.MaxRequestBytes < 0:
		return bad("MaxRequestBytes", c.MaxRequestBytes, fmt.Sprintf("> 0, or 0 for the default (%d)", DefaultMaxRequestBytes))
	case c.MaxResponseBytes < 0:
		return bad("MaxResponseBytes", c.MaxResponseBytes, fmt.Sprintf("> 0, or 0 for the default (%d)", DefaultMaxResponseBytes))
	case c.StoreTimeout < 0:
		return bad("StoreTimeout", c.StoreTimeout, fmt.Sprintf("> 0, or 0 for the default (%v)", DefaultStoreTimeout))
	}
	if c.Store == nil {
		s, _ := NewMemoryStore(MemoryConfig{})
		c.Store = s
	}
	if c.Methods == nil {
		c.Methods = []string{http.MethodPost, http.MethodPatch}
	} else {
		ms := make([]string, len(c.Methods))
		for i, m := range c.Methods {
			if m == "" || strings.ContainsAny(m, " \t\r\n") {
				return Config{}, &configerr.Error{Err: ErrInvalidConfig, Field: fmt.Sprintf("Methods[%d]", i), Value: m, Problem: "not an HTTP method", Want: "a method token such as POST"}
			}
			if up := strings.ToUpper(m); up != m && standardMethod(up) {
				// Methods are case-sensitive and requests keep theirs as
				// sent: "post" would cover no POST, silently.
				return Config{}, &configerr.Error{Err: ErrInvalidConfig, Field: fmt.Sprintf("Methods[%d]", i), Value: m,
					Problem: "not the method as clients send it (methods are case-sensitive)", Want: up}
			}
			ms[i] = m
		}
		c.Methods = ms
	}
	hs := make([]string, len(c.FingerprintHeaders))
	for i, h := range c.FingerprintHeaders {
		if !header.ValidName(h) {
			// No request carries it: it would take no part, silently.
			return bad(fmt.Sprintf("FingerprintHeaders[%d]", i), h, "a header field name (a token: letters, digits or !#$%&'*+-.^_`|~) such as Content-Type")
		}
		hs[i] = http.CanonicalHeaderKey(h)
		switch hs[i] {
		case "Transfer-Encoding", "Trailer", "Content-Length":
			// The body's framing: net/http takes the first two out of
			// r.Header, so they would take no part, silently; the
			// third would make a retry sent chunked another request.
			return Config{}, &configerr.Error{Err: ErrInvalidConfig, Field: fmt.Sprintf("FingerprintHeaders[%d]", i), Value: h,
				Problem: "the body's framing, which takes no part in the fingerprint (its bytes do, and so its length; net/http takes Transfer-Encoding and Trailer out of the request's header)",
				Want:    "another field name, such as Content-Type"}
		}
	}
	c.FingerprintHeaders = hs
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.RetryAfter = cmp.Or(c.RetryAfter, DefaultRetryAfter)
	c.MaxRequestBytes = cmp.Or(c.MaxRequestBytes, DefaultMaxRequestBytes)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, DefaultMaxResponseBytes)
	c.StoreTimeout = cmp.Or(c.StoreTimeout, DefaultStoreTimeout)
	if c.Keep == nil {
		c.Keep = DefaultKeep
	}
	if c.ErrorLog == nil {
		c.ErrorLog = log.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// standardMethod reports whether m is a method of RFC 9110 or PATCH.
func standardMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// retryAfterSeconds is RetryAfter in whole seconds, rounded up.
func (c *Config) retryAfterSeconds() int {
	if c.RetryAfter < 0 {
		return 0
	}
	n := int(c.RetryAfter / time.Second) // rounded up below: adding 1 s − 1 ns first would overflow
	if c.RetryAfter%time.Second != 0 {
		n++
	}
	return n
}
