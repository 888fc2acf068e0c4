package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrOpen matches every refusal of a Breaker: open, or half-open with all
// its probes in flight.
var ErrOpen = errors.New("breaker: open")

// OpenError is a Breaker's refusal. It says how long until the next probe
// may be sent, and implements RetryAfter so that the retry loop reports it
// (as retry.Error.Wait). errors.Is(err, ErrOpen) is true; Unwrap returns
// the failure that last tripped the breaker, if any. Refusals made within
// the same millisecond of one open period may share one *OpenError: treat
// it as read-only.
type OpenError struct {
	Name  string        // the breaker's name
	State State         // Open, or HalfOpen when every probe slot is taken
	Wait  time.Duration // until the open period ends, rounded up to the millisecond (0 when half-open)
	Trips int           // consecutive trips, counting the last one (1 after the first)
	Cause error         // the failure that tripped the breaker, if it was an error
}

// Error says that the breaker is open, until when, and what tripped it.
func (e *OpenError) Error() string {
	var b strings.Builder
	b.WriteString("breaker: ")
	if e.Name != "" {
		fmt.Fprintf(&b, "%q ", e.Name)
	}
	if e.State == HalfOpen {
		b.WriteString("half-open with every probe in flight: call refused")
	} else {
		fmt.Fprintf(&b, "open after %d trip", e.Trips)
		if e.Trips != 1 {
			b.WriteByte('s')
		}
		fmt.Fprintf(&b, ": call refused, next probe in %v", e.Wait)
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (tripped by: %v)", e.Cause)
	}
	return b.String()
}

// Is matches ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Unwrap returns the failure that tripped the breaker.
func (e *OpenError) Unwrap() error { return e.Cause }

// RetryAfter returns the time until the next probe; half-open, where that
// is unknown, it returns -1 (no hint).
func (e *OpenError) RetryAfter() time.Duration {
	if e.State == HalfOpen {
		return -1
	}
	return e.Wait
}

// PanicError is what Execute records (as a failure) when its function
// panics, before it panics again with the same value.
type PanicError struct {
	Value any // the value the function panicked with
}

// Error says that the call panicked, with the panic's value.
func (e *PanicError) Error() string { return fmt.Sprintf("breaker: call panicked: %v", e.Value) }

// Outcome is how a call's result counts.
type Outcome uint8

const (
	// Success counts as a call that succeeded.
	Success Outcome = iota
	// Failure counts as a call that failed.
	Failure
	// Ignore does not count at all (and, half-open, frees the probe slot
	// without deciding anything).
	Ignore
)

// String returns "success", "failure" or "ignore".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignore:
		return "ignore"
	}
	return "unknown"
}

// DefaultClassify is the classification used when Config.Classify is nil.
// In order:
//
//   - nil is a Success;
//   - an error matching context.Canceled is ignored: the caller gave up,
//     which says nothing about the dependency;
//   - an error matching context.DeadlineExceeded is ignored too (the
//     caller's deadline passed), unless an error in its chain has a method
//     AttemptTimeout() bool returning true: retry marks so the attempts that
//     ran into Policy.AttemptTimeout, and those are failures (a dependency
//     that hangs past every caller's deadline is caught by SlowCall);
//   - an error with a method StatusCode() int (found with errors.As)
//     returning a 4xx other than 408 and 429 is a Success: the dependency
//     answered, and the mistake was the caller's;
//   - every other error is a Failure (5xx, 408, 429, resets, refusals,
//     timeouts of the network itself).
func DefaultClassify(err error) Outcome {
	if err == nil {
		return Success
	}
	if errors.Is(err, context.Canceled) {
		return Ignore
	}
	if errors.Is(err, context.DeadlineExceeded) {
		var at interface{ AttemptTimeout() bool }
		if !errors.As(err, &at) || !at.AttemptTimeout() {
			return Ignore
		}
		return Failure
	}
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		if c := sc.StatusCode(); c >= 400 && c < 500 && c != 408 && c != 429 {
			return Success
		}
	}
	return Failure
}
