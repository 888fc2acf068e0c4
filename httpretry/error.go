package httpretry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/yaoki-go/yaoki/retry"
)

// Sentinels that errors.Is matches against the errors of this package.
var (
	// ErrRetryableStatus matches every *StatusError.
	ErrRetryableStatus = errors.New("httpretry: retryable status")
	// ErrNotIdempotent matches the *Error of a request that was sent once
	// because its method is not idempotent (POST, PATCH, ...) and it had no
	// Idempotency-Key.
	ErrNotIdempotent = errors.New("httpretry: method not idempotent and no Idempotency-Key")
	// ErrBodyNotReplayable matches the *Error of a request that was sent
	// once because its body could not be replayed: no GetBody, and longer
	// than Transport.MaxBufferedBody.
	ErrBodyNotReplayable = errors.New("httpretry: request body not replayable")
	// ErrInvalidConfig matches the error RoundTrip and Validate return for
	// a Transport whose fields are out of range (including its Policy, whose
	// errors also match retry.ErrInvalidConfig); the message names the
	// field, its value and what is accepted.
	ErrInvalidConfig = errors.New("httpretry: invalid configuration")
)

// Error is what RoundTrip returns when a request ends without a response:
// the last attempt failed in transport (a refused or reset connection, a
// timeout, a TLS error, ...) and the transport stopped, or the caller
// cancelled. It names the request, counts the attempts and says why it
// stopped; it wraps the retry loop's *retry.Error, which wraps the last
// attempt's error, so errors.Is(err, syscall.ECONNREFUSED),
// errors.Is(err, retry.ErrExhausted) and errors.As(err, &retryErr) all work.
//
// When retries end on a retryable status instead, RoundTrip returns the
// last response and no error, as http.Client does.
type Error struct {
	// Method is the request's method.
	Method string
	// URL is the request's URL with its password redacted (url.Redacted)
	// and the values of the query parameters that carry credentials too
	// (api_key, access_token, client_secret, password, an AWS presigned
	// URL's signature, credential and token), as "xxxxx".
	URL string
	// Attempts is the number of attempts sent. An attempt that was not
	// sent is not counted: one due after the caller's context had ended
	// (hedged or not: a request whose context ended before RoundTrip
	// counts 0), a hedge that the call ended before it started, and one
	// whose request could not be built (its GetBody failed), which ends
	// the call unless it is a hedge beside attempts that may still
	// answer, whose answers then decide.
	Attempts int
	// Reason is why the retry loop stopped: retry.ReasonPermanent for an
	// error that is not retried and for a request that could be sent only
	// once (then NotRetried says why).
	Reason retry.Reason
	// NotRetried is ErrNotIdempotent or ErrBodyNotReplayable when the
	// request could be sent only once, nil otherwise.
	NotRetried error
	// LastStatus is the status of the last response the call received,
	// whichever attempt it came to (a 503 followed by refused connections
	// says 503), thrown away since; 0 if no attempt got a response.
	LastStatus int
	// Key is the Idempotency-Key the call's attempts carried: the one the
	// Transport created (KeyAuto), else the caller's Idempotency-Key header,
	// else its X-Idempotency-Key header; empty if they carried none. A
	// caller that keeps the request to send it again later (a dead letter)
	// must send it with this key, so that a server that executed an attempt
	// replays its answer instead of executing the request a second time.
	Key string
	// Err is the retry loop's *retry.Error, or the error that kept the
	// request from being sent.
	Err error
}

// Error says what was tried and why it stopped, e.g. "httpretry: GET
// http://api.example/x: gave up after 3 attempts in 1.2s: attempts
// exhausted: last error: dial tcp 127.0.0.1:8080: connect: connection
// refused".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "httpretry: %s %s: ", e.Method, e.URL)
	var re *retry.Error
	switch {
	case e.NotRetried != nil:
		fmt.Fprintf(&b, "sent once, not retried (%s): ", strings.TrimPrefix(e.NotRetried.Error(), "httpretry: "))
		if errors.As(e.Err, &re) && re.Last != nil {
			b.WriteString(re.Last.Error())
		} else if e.Err != nil {
			b.WriteString(e.Err.Error())
		}
	case errors.As(e.Err, &re):
		b.WriteString(strings.TrimPrefix(re.Error(), "retry: "))
		if re.Last == nil && e.LastStatus != 0 {
			fmt.Fprintf(&b, " (last status %d)", e.LastStatus)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Timeout reports whether the request ended for lack of time: its last
// attempt timed out, or a deadline passed. http.Client's *url.Error asks
// it, so that (*url.Error).Timeout and os.IsTimeout keep working through a
// Transport.
func (e *Error) Timeout() bool {
	if errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, retry.ErrDeadline) || errors.Is(e.Err, retry.ErrAttemptTimeout) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// Unwrap returns the wrapped error and NotRetried, those that are set.
func (e *Error) Unwrap() []error {
	switch {
	case e.Err != nil && e.NotRetried != nil:
		return []error{e.Err, e.NotRetried}
	case e.Err != nil:
		return []error{e.Err}
	case e.NotRetried != nil:
		return []error{e.NotRetried}
	}
	return nil
}
