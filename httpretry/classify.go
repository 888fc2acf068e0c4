package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/internal/credential"
	"github.com/yaoki-go/yaoki/retry"
)

// DefaultStatuses returns the statuses retried when Transport.Statuses is
// nil: 408, 429, 500, 502, 503 and 504 (the set of curl, .NET and the AWS
// SDKs). Every other status is returned to the caller at once; in
// particular 501 (the server will never implement the method) and the other
// 4xx are final.
func DefaultStatuses() []int { return []int{408, 429, 500, 502, 503, 504} }

// statusSet is a set of HTTP status codes 100..599, as a bitmap.
type statusSet [10]uint64

func (s *statusSet) add(code int) { s[code/64] |= 1 << (code % 64) }

func (s *statusSet) has(code int) bool {
	return code >= 0 && code < 640 && s[code/64]&(1<<(code%64)) != 0
}

func throttledStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// methodOf returns req's method as sent: net/http sends "" as GET.
func methodOf(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// Idempotent reports whether requests with method m may be sent again
// without an Idempotency-Key: GET, HEAD, OPTIONS, TRACE, PUT and DELETE
// (RFC 9110 §9.2.2), and "" (which net/http sends as GET).
func Idempotent(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// StatusError is the error an attempt ends with when the server answers
// with a retryable status (see Transport.Statuses). The transport uses it
// inside its retry loop: Policy.Classify, Policy.OnRetry, observers and the
// guards of the policy (budget, breaker, throttle) see it. Callers of
// RoundTrip never get it as their error: when retries end on such a status,
// they get the response itself.
//
// It implements the interfaces package retry reads: Throttled() for 429
// and 503, RetryAfter() for the server's hint, and StatusCode() for
// packages (a circuit breaker) that classify by status.
type StatusError struct {
	// Code is the response's status code, Status its status line
	// ("503 Service Unavailable").
	Code   int
	Status string
	// Hint is the wait the server asked for (Retry-After, or a rate-limit
	// reset on 429 and 503), or -1 when it gave none.
	Hint time.Duration

	req  *http.Request // the caller's request, for the message
	resp *http.Response
	done bool // resp was drained and closed
}

// StatusCode returns the response's status code.
func (e *StatusError) StatusCode() int { return e.Code }

// Throttled reports whether the status says the server is overloaded
// (429 Too Many Requests, 503 Service Unavailable).
func (e *StatusError) Throttled() bool { return throttledStatus(e.Code) }

// RetryAfter returns the server's hint, or -1 when it gave none (the
// retry.Hinter interface).
func (e *StatusError) RetryAfter() time.Duration { return e.Hint }

// Error says which request got which status, e.g. "httpretry: GET
// http://api.example/x: 503 Service Unavailable (retry after 2s)".
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("httpretry: ")
	if e.req != nil && e.req.URL != nil {
		fmt.Fprintf(&b, "%s %s: ", methodOf(e.req), credential.RedactedURL(e.req.URL))
	}
	if e.Status != "" {
		b.WriteString(e.Status)
	} else {
		fmt.Fprintf(&b, "status %d", e.Code)
	}
	if e.Hint >= 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.Hint)
	}
	return b.String()
}

// Is matches ErrRetryableStatus.
func (e *StatusError) Is(target error) bool { return target == ErrRetryableStatus }

// discard drains (bounded) and closes the response, so that its connection
// can be reused. It is safe to call more than once.
func (e *StatusError) discard() {
	if e.done || e.resp == nil {
		return
	}
	e.done = true
	drain(e.resp)
}

// maxDrain and maxDrainTime bound how much of a thrown-away response body
// is read, and for how long, so that its connection can be reused. A
// longer body, or one that has not ended within maxDrainTime (a server that
// stalls after the headers), is closed and its connection with it: reading
// on would cost more than a new connection, and would hold up the retry.
const (
	maxDrain     = 64 << 10
	maxDrainTime = 250 * time.Millisecond
)

// drain reads up to maxDrain bytes of resp's body, for up to maxDrainTime,
// and closes it. A read still blocked when the time is up is ended by
// closing the body from a timer (closing a net/http response body ends a
// Read blocked on it).
func drain(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	body := resp.Body
	if body != http.NoBody {
		t := time.AfterFunc(maxDrainTime, func() { _ = body.Close() })
		_, _ = io.CopyN(io.Discard, body, maxDrain)
		t.Stop()
	}
	_ = body.Close()
}

// Classify is the HTTP classification the Transport applies to what an
// attempt ends with, before Policy.Classify is asked:
//
//   - a *StatusError: ClassThrottled for 429 and 503, ClassTransient otherwise;
//   - ClassPermanent: TLS certificate errors (x509's, tls.CertificateVerificationError),
//     TLS alerts from the server and non-TLS answers to a TLS handshake;
//     DNS errors that are neither temporary nor timeouts (no such host);
//     bad URLs and unsupported schemes; invalid header fields or methods;
//     a request body that does not have the request's ContentLength;
//     "stopped after N redirects"; context.Canceled;
//   - ClassTransient: everything else, notably refused and reset connections,
//     a connection closed before the response (io.EOF,
//     io.ErrUnexpectedEOF), timeouts (of one attempt, of a dial, of a TLS
//     handshake, of response headers) and temporary DNS failures.
//
// Errors of net/http that have no type of their own (bad scheme, bad
// header, redirects) are recognised by their message; an unknown error is
// ClassTransient, as package retry does by default.
func Classify(err error) retry.Class {
	var se *StatusError
	if errors.As(err, &se) {
		if se.Throttled() {
			return retry.ClassThrottled
		}
		return retry.ClassTransient
	}
	if errors.Is(err, retry.ErrAttemptTimeout) {
		return retry.ClassTransient
	}
	if finalError(err) {
		return retry.ClassPermanent
	}
	return retry.ClassTransient
}

func finalError(err error) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	var (
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
		ua  x509.UnknownAuthorityError
		ci  x509.CertificateInvalidError
		he  x509.HostnameError
		sr  x509.SystemRootsError
		cv  x509.ConstraintViolationError
		uc  x509.UnhandledCriticalExtension
		ia  x509.InsecureAlgorithmError
		op  *net.OpError
		dns *net.DNSError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &rhe), errors.As(err, &ua), errors.As(err, &ci),
		errors.As(err, &he), errors.As(err, &sr), errors.As(err, &cv), errors.As(err, &uc), errors.As(err, &ia):
		return true
	case errors.As(err, &op) && op.Op == "remote error": // a TLS alert from the server
		return true
	case errors.As(err, &dns):
		return !dns.IsTemporary && !dns.IsTimeout
	}
	msg := err.Error()
	for _, s := range finalMessages {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return strings.Contains(msg, "stopped after") && strings.Contains(msg, "redirects")
}

// finalMessages are net/http's messages for requests that cannot succeed
// on another attempt and have no error type of their own.
var finalMessages = [...]string{
	"unsupported protocol scheme",
	"no Host in request URL",
	"nil Request.URL",
	"invalid header field",
	"invalid method",
	"net/http: invalid",
	// A body that does not have the request's ContentLength: every
	// attempt replays the same body (GetBody, or none).
	"with nil Body",
	"with Body length",
}

// neverLeft reports whether err proves that the request was not
// processed: the connection to the server (or to the proxy) could not be
// made, or an HTTP/2 server refused the stream (REFUSED_STREAM, RFC 9113
// §8.7), which net/http's HTTP/2 transport retries itself 6 times, over
// about a minute, before it gives up. Such an attempt may be retried
// whatever the method. (A stream above a GOAWAY's last stream ID, also
// unprocessed, net/http sends again on a new connection itself: 9 times
// in TestH2RefusedStreamPostSentAgain/GOAWAY.)
func neverLeft(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var se h2StreamError
	return errors.As(err, &se) && se.Code == h2RefusedStream
}

// h2StreamError has the fields of net/http's HTTP/2 stream error, which
// is not exported: errors.As fills a struct with the same field names and
// convertible types (net/http's h2_error.go, for golang.org/x/net/http2's
// StreamError).
type h2StreamError struct {
	StreamID uint32
	Code     uint32
	Cause    error
}

func (e h2StreamError) Error() string {
	return fmt.Sprintf("stream error: stream ID %d; code %d", e.StreamID, e.Code)
}

// h2RefusedStream is the HTTP/2 error code REFUSED_STREAM.
const h2RefusedStream = 0x7
