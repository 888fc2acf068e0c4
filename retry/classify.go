package retry

import (
	"errors"
	"time"
)

// Class says what to do with an error.
type Class uint8

const (
	// ClassTransient errors are retried after the backoff schedule's wait. It is
	// the zero value.
	ClassTransient Class = iota
	// ClassThrottled errors are retried too, but the server said it is
	// overloaded: the backoff starts from Policy.ThrottleBase (1 s), and
	// throttles and budgets count it as an overload answer.
	ClassThrottled
	// ClassPermanent errors end the loop at once.
	ClassPermanent
)

// String returns "transient", "throttled" or "permanent".
func (c Class) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassThrottled:
		return "throttled"
	case ClassPermanent:
		return "permanent"
	}
	return "unknown"
}

// DefaultClassify is the classification used when Policy.Classify is nil:
// errors marked with Permanent are ClassPermanent; errors marked with
// Throttling, or that have a method Throttled() bool returning true, are
// ClassThrottled; every other error is ClassTransient. (The caller's own cancellation is handled before
// any classifier is asked.)
func DefaultClassify(err error) Class {
	if IsPermanent(err) {
		return ClassPermanent
	}
	if t, ok := errors.AsType[interface {
		error
		Throttled() bool
	}](err); ok && t.Throttled() {
		return ClassThrottled
	}
	return ClassTransient
}

// Permanent marks err as final: the loop will not retry it, whatever the
// classifier says. The loop unwraps the mark, so the caller sees err itself
// (wrapped in the give-up *Error). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{mark{err}}
}

// mark is what the marks of this file (Permanent, Throttling, After) share:
// each wraps err, reads as err and unwraps to it, and adds only what it
// says about err.
type mark struct{ err error }

func (m mark) Error() string { return m.err.Error() }
func (m mark) Unwrap() error { return m.err }

type permanentError struct{ mark }

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	_, ok := errors.AsType[*permanentError](err)
	return ok
}

// Throttling marks err as an overload answer from the server (class
// ClassThrottled). Throttling(nil) is nil.
func Throttling(err error) error {
	if err == nil {
		return nil
	}
	return &throttledError{mark{err}}
}

type throttledError struct{ mark }

func (e *throttledError) Throttled() bool { return true }

// Hinter is implemented by errors that carry the server's word on when to
// come back (an HTTP Retry-After, a gRPC pushback). A hint replaces the
// computed backoff: the loop waits at least that long, plus up to 20 %
// jitter; a hint longer than Policy.MaxRetryAfter ends the loop at once.
// A negative hint means "no hint".
type Hinter interface {
	RetryAfter() time.Duration
}

// After attaches the hint "retry after d" to err. A negative d counts as 0,
// "now", which is no wait to spread the callers told it over: the loop
// then waits its backoff, as without a hint. After(nil, d) is nil.
func After(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	if d < 0 {
		d = 0
	}
	return &hintError{mark{err}, d}
}

type hintError struct {
	mark
	d time.Duration
}

func (e *hintError) RetryAfter() time.Duration { return e.d }

// hinterError is a Hinter found in an error's tree.
type hinterError interface {
	error
	Hinter
}

// HintOf returns the server hint that err (or an error it wraps) carries.
func HintOf(err error) (time.Duration, bool) {
	h, ok := errors.AsType[hinterError](err)
	if !ok {
		return 0, false
	}
	d := h.RetryAfter()
	return d, d >= 0
}
