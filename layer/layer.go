// Package layer keeps retries to one layer of a call chain. Retries
// multiply across layers: when A calls B calls C calls D and each hop makes
// 3 attempts, D receives 27 requests for one call to A. The fix is that
// only one layer retries, and the others fail fast with an answer the
// retrying layer understands.
//
// The protocol has two headers, both sent and honoured by httpretry:
//
//   - Attempt-Count, on requests: httpretry's transport numbers every
//     attempt ("1", "2", …). A server that sees it knows its caller
//     retries, whatever the value (a number it cannot read still comes
//     from a caller in the protocol). Middleware then serves the request
//     under retry.SingleAttempt, so every retrying loop the handler runs (an
//     httpretry transport, retry.Do) makes one attempt only, and the
//     handler's outgoing requests carry the header on in turn.
//   - Do-Not-Retry, on responses: "true" tells httpretry to return the
//     answer at once, whatever its status. A server sends it when retrying
//     cannot help: its own retries are exhausted, its retry budget or
//     circuit breaker refused.
//
// What a handler does when an outgoing call fails: with a response (httpretry
// hands over the last answer when retries end on a status), relay it; under
// Middleware that answer came from a single attempt, and the retrying
// caller will retry it. With an error, call Fail(w, r, err): it answers
// 503, which the caller retries, when the error says this layer made a
// single attempt because its caller retries (retry.ErrOuterLayer); and 503
// (502 for an error that is final) with Do-Not-Retry: true when this
// layer's own retry loop gave up, so that the layers above do not multiply
// what was already tried.
//
// Work that outlives the request (the handler answers 202 and finishes in
// the background on context.WithoutCancel(r.Context()), or queues it)
// keeps the single-attempt mark with the context's values, though the
// caller has its answer and will not retry that work: run it under
// retry.WithoutSingleAttempt, so that its own loops retry.
//
// Both header names are configurable (Config), and neutral on purpose: any
// client may send Attempt-Count and any server may read it.
package layer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/retry"
)

// Defaults of Config. The header names' defaults are header.AttemptCount
// and header.DoNotRetry, as httpretry's.
const (
	// DefaultRetryStatus answers a retrying caller whose request this
	// layer could not serve in a single attempt: 503 is retried by every
	// retrying client (httpretry, the AWS SDKs, gRPC-transcoding proxies).
	DefaultRetryStatus = http.StatusServiceUnavailable
	// DefaultGiveUpStatus answers when this layer's own retries gave up.
	DefaultGiveUpStatus = http.StatusServiceUnavailable
)

// Config configures the middleware. The zero value uses the defaults above.
type Config struct {
	// AttemptHeader is the request header whose presence says the caller
	// retries: its value is the attempt number (a positive decimal
	// integer); repeated, or as a comma-separated list, its largest valid
	// number counts. A value that is not blank but holds no valid number
	// ("0", "1.0", "attempt=2", garbage) still says the caller retries,
	// and counts as attempt 1: a caller that numbers its attempts
	// otherwise, or a proxy that mangled the value, must not make this
	// layer retry under a layer that retries. Empty:
	// header.AttemptCount ("Attempt-Count").
	AttemptHeader string
	// DoNotRetryHeader is the response header Fail and DoNotRetry set to
	// "true". Empty: header.DoNotRetry ("Do-Not-Retry").
	DoNotRetryHeader string
	// RetryStatus is what Fail answers when the failed call made a single
	// attempt because the caller retries. Zero: DefaultRetryStatus (503).
	// Accepted: a 5xx status (4xx are not retried by most clients).
	RetryStatus int
	// GiveUpStatus is what Fail answers, with Do-Not-Retry, when this
	// layer's own retries gave up. Zero: DefaultGiveUpStatus (503).
	// Accepted: 500 to 599.
	GiveUpStatus int
}

// ErrInvalidConfig matches the errors New returns for a Config field out of
// range; the message names the field, its value and what is accepted.
var ErrInvalidConfig = errors.New("layer: invalid configuration")

type ctxKey struct{}

// info is what Middleware leaves in the request's context.
type info struct {
	c       Config
	attempt int // the caller's attempt number, 0 when the caller does not retry
}

// New returns the middleware configured by c, or an error naming the first
// field out of range.
func New(c Config) (func(http.Handler) http.Handler, error) {
	if c.AttemptHeader == "" {
		c.AttemptHeader = header.AttemptCount
	}
	if c.DoNotRetryHeader == "" {
		c.DoNotRetryHeader = header.DoNotRetry
	}
	c.RetryStatus = cmp.Or(c.RetryStatus, DefaultRetryStatus)
	c.GiveUpStatus = cmp.Or(c.GiveUpStatus, DefaultGiveUpStatus)
	for _, h := range []struct{ field, v string }{{"AttemptHeader", c.AttemptHeader}, {"DoNotRetryHeader", c.DoNotRetryHeader}} {
		if !header.ValidName(h.v) {
			return nil, &configerr.Error{Err: ErrInvalidConfig, Field: h.field, Value: h.v, Problem: "not a header name", Want: "letters, digits and !#$%&'*+-.^_`|~"}
		}
	}
	if c.RetryStatus < 500 || c.RetryStatus > 599 {
		return nil, configerr.Invalid(ErrInvalidConfig, "RetryStatus", c.RetryStatus, "500..599 (0 means 503)")
	}
	if c.GiveUpStatus < 500 || c.GiveUpStatus > 599 {
		return nil, configerr.Invalid(ErrInvalidConfig, "GiveUpStatus", c.GiveUpStatus, "500..599 (0 means 503)")
	}
	c.AttemptHeader = http.CanonicalHeaderKey(c.AttemptHeader)
	c.DoNotRetryHeader = http.CanonicalHeaderKey(c.DoNotRetryHeader)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			in := &info{c: c, attempt: attemptOf(r.Header[c.AttemptHeader])}
			ctx := context.WithValue(r.Context(), ctxKey{}, in)
			if in.attempt > 0 {
				ctx = retry.SingleAttempt(ctx)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}, nil
}

// Middleware is the middleware with the default Config: requests that
// carry Attempt-Count are served under retry.SingleAttempt.
func Middleware(next http.Handler) http.Handler {
	mw, _ := New(Config{}) // the defaults are valid
	return mw(next)
}

// MaxAttempt is the largest attempt number Attempt reports: a caller's
// attempt header with a larger number (ten digits or more) still says that
// the caller retries, and reads as MaxAttempt.
const MaxAttempt = 999_999_999

// attemptOf returns the caller's attempt number in the attempt header's
// field lines, or 0 when they are absent or blank. A proxy or server
// library may have merged repeated fields into one comma-separated line
// (Node.js and Envoy do), or passed them on as several lines: each number
// is read, and the largest counts, so that a repetition does not hide a
// retrying caller. A value that is not blank but holds no valid number
// counts as 1: the caller sent the header, so it retries.
func attemptOf(lines []string) int {
	n, said := 0, false
	for _, l := range lines {
		for l != "" {
			var v string
			v, l, _ = strings.Cut(l, ",")
			if !said && strings.TrimSpace(v) != "" {
				said = true
			}
			n = max(n, parseAttempt(v))
		}
	}
	if said && n == 0 {
		n = 1
	}
	return n
}

// parseAttempt returns the attempt number in v, or 0 when v is not one
// (absent, not a decimal integer, 0). Any positive number is one: a caller
// that retries for hours numbers its attempts past 1000, and is no less a
// retrying caller then. Numbers above MaxAttempt read as MaxAttempt.
func parseAttempt(v string) int {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "+")
	if v == "" {
		return 0
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0
		}
	}
	v = strings.TrimLeft(v, "0")
	switch {
	case v == "":
		return 0
	case len(v) > 9:
		return MaxAttempt
	}
	n, _ := strconv.Atoi(v) // nine digits at most: no error
	return n
}

// Attempt returns the caller's attempt number for r (1 for its first
// attempt, and for an attempt header whose value holds no valid number),
// or 0 when the caller does not say it retries or r did not pass through
// Middleware.
func Attempt(r *http.Request) int {
	if in, ok := r.Context().Value(ctxKey{}).(*info); ok {
		return in.attempt
	}
	return 0
}

// FromRetryingCaller reports whether r came from a caller that retries (it
// carried an attempt header that is not blank through Middleware): the
// handler's own retry loops then make one attempt only.
func FromRetryingCaller(r *http.Request) bool { return Attempt(r) > 0 }

func config(r *http.Request) Config {
	if in, ok := r.Context().Value(ctxKey{}).(*info); ok {
		return in.c
	}
	return Config{AttemptHeader: header.AttemptCount, DoNotRetryHeader: header.DoNotRetry,
		RetryStatus: DefaultRetryStatus, GiveUpStatus: DefaultGiveUpStatus}
}

// DoNotRetry sets the do-not-retry header ("Do-Not-Retry: true", or the
// name configured for r's middleware) on w. Call it before writing the
// status, when retrying this request cannot help: for example when relaying
// a 503 that this layer's own retries already got three times.
func DoNotRetry(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(config(r).DoNotRetryHeader, "true")
}

// Fail answers r for a handler whose outgoing call failed with err (from
// retry.Do, or an httpretry transport, whose errors wrap *retry.Error):
//
//   - err matches retry.ErrOuterLayer: this layer made one attempt because
//     its caller retries, and that attempt failed in a way worth retrying.
//     Fail answers RetryStatus (503), with Retry-After when the failure
//     carried a server hint (rounded up to whole seconds), and without
//     Do-Not-Retry: the caller retries.
//   - err is another *retry.Error: this layer's own retry loop gave up
//     (attempts exhausted, deadline, budget exhausted, breaker open,
//     rejected locally, hint too long). Fail answers GiveUpStatus (503)
//     with Do-Not-Retry: true, and Retry-After when the loop knew a wait
//     (the breaker's next probe, the server's hint that was too long or
//     would have ended past the deadline): what this
//     layer could try was tried, and the layers above must not multiply it.
//     Its reason ReasonPermanent (the error is not retryable at all) gets
//     502 Bad Gateway with Do-Not-Retry: true.
//   - the caller's context ended (retry.ErrCancelled, context.Canceled):
//     nobody reads the answer; Fail writes 503 without headers so that
//     logs show it.
//   - any other error: 502 Bad Gateway, without Do-Not-Retry (this layer
//     does not know whether retrying could help).
//
// The body is a one-line text/plain message with err's text. Fail returns
// the status it wrote.
func Fail(w http.ResponseWriter, r *http.Request, err error) int {
	c := config(r)
	status, dnr, wait := classify(c, err)
	h := w.Header()
	if dnr {
		h.Set(c.DoNotRetryHeader, "true")
	}
	if wait > 0 {
		h.Set(header.RetryAfter, strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s: %v\n", http.StatusText(status), err)
	return status
}

// classify decides Fail's answer: status, Do-Not-Retry, Retry-After.
func classify(c Config, err error) (status int, dnr bool, wait time.Duration) {
	var re *retry.Error
	switch {
	case err == nil:
		return http.StatusInternalServerError, false, 0
	case errors.Is(err, retry.ErrCancelled) || errors.Is(err, context.Canceled) && !errors.As(err, &re):
		return http.StatusServiceUnavailable, false, 0
	case errors.As(err, &re) && re.Reason == retry.ReasonOuterLayer:
		if h, ok := retry.HintOf(re.Last); ok {
			wait = h
		}
		return c.RetryStatus, false, wait
	case errors.As(err, &re) && re.Reason == retry.ReasonPermanent:
		return http.StatusBadGateway, true, 0
	case errors.As(err, &re):
		switch {
		case re.Reason == retry.ReasonBreakerOpen, re.Reason == retry.ReasonHintTooLong,
			re.Reason == retry.ReasonDeadline && re.Source == event.ServerHint:
			wait = re.Wait
		}
		return c.GiveUpStatus, true, wait
	}
	return http.StatusBadGateway, false, 0
}
