package retry

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// Reason says why the loop stopped without success.
type Reason uint8

const (
	// ReasonExhausted: the last allowed attempt failed.
	ReasonExhausted Reason = iota + 1
	// ReasonDeadline: the next wait (a backoff, a server hint or a throttle's
	// wait) would not have ended before the context's deadline or
	// Policy.MaxElapsed (a wait that ends at the deadline leaves the next
	// attempt no time), so it was not started; or MaxElapsed ran out
	// during an attempt or a wait.
	ReasonDeadline
	// ReasonPermanent: the error was classified ClassPermanent (see
	// Permanent).
	ReasonPermanent
	// ReasonHintTooLong: the server asked to wait longer than
	// Policy.MaxRetryAfter.
	ReasonHintTooLong
	// ReasonCancelled: the caller's context was cancelled or its deadline passed
	// during an attempt or a wait.
	ReasonCancelled
	// ReasonBudgetExhausted: the retry budget refused the retry.
	ReasonBudgetExhausted
	// ReasonBreakerOpen: the circuit breaker refused the attempt.
	ReasonBreakerOpen
	// ReasonRejectedLocally: the client-side throttle or the bulkhead refused
	// the attempt before it was sent.
	ReasonRejectedLocally
	// ReasonOuterLayer: an outer layer already retries this call (see
	// SingleAttempt), so this layer made one attempt only.
	ReasonOuterLayer
)

var reasonNames = [...]string{
	ReasonExhausted:       "attempts exhausted",
	ReasonDeadline:        "deadline",
	ReasonPermanent:       "permanent error",
	ReasonHintTooLong:     "hint too long",
	ReasonCancelled:       "cancelled",
	ReasonBudgetExhausted: "budget exhausted",
	ReasonBreakerOpen:     "breaker open",
	ReasonRejectedLocally: "rejected locally",
	ReasonOuterLayer:      "outer layer retries",
}

// String returns the reason in words, e.g. "attempts exhausted".
func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Key returns the reason as one snake_case word for logs and metrics, e.g.
// "attempts_exhausted".
func (r Reason) Key() string { return strings.ReplaceAll(r.String(), " ", "_") }

// Sentinels, one per Reason, that errors.Is matches against an *Error.
var (
	// ErrGaveUp matches every *Error.
	ErrGaveUp          = errors.New("retry: gave up")
	ErrExhausted       = errors.New("retry: attempts exhausted")
	ErrDeadline        = errors.New("retry: deadline reached or would pass before the next attempt")
	ErrPermanent       = errors.New("retry: permanent error")
	ErrHintTooLong     = errors.New("retry: server hint longer than MaxRetryAfter")
	ErrCancelled       = errors.New("retry: cancelled")
	ErrBudgetExhausted = errors.New("retry: budget exhausted")
	ErrBreakerOpen     = errors.New("retry: circuit breaker open")
	ErrRejectedLocally = errors.New("retry: rejected locally")
	ErrOuterLayer      = errors.New("retry: an outer layer retries")
	ErrAttemptTimeout  = errors.New("retry: attempt timed out")
	// ErrInvalidConfig matches the errors of Policy.Validate (and of Do,
	// DoValue and New for a policy Validate refuses); the message names the
	// field, its value and what is accepted.
	ErrInvalidConfig = errors.New("retry: invalid configuration")
)

var reasonSentinels = [...]error{
	ReasonExhausted:       ErrExhausted,
	ReasonDeadline:        ErrDeadline,
	ReasonPermanent:       ErrPermanent,
	ReasonHintTooLong:     ErrHintTooLong,
	ReasonCancelled:       ErrCancelled,
	ReasonBudgetExhausted: ErrBudgetExhausted,
	ReasonBreakerOpen:     ErrBreakerOpen,
	ReasonRejectedLocally: ErrRejectedLocally,
	ReasonOuterLayer:      ErrOuterLayer,
}

// Error is what the loop returns when it stops without success. It wraps
// the last attempt's error (and, when the caller cancelled, the context's
// error), so errors.Is and errors.As see through it to both; errors.Is also
// matches ErrGaveUp and the sentinel of its Reason.
type Error struct {
	Attempts int // attempts made
	// Elapsed is the time spent, from the first attempt's start; for a
	// policy with no guard, observer, MaxElapsed or AttemptTimeout (whose
	// first attempt does not read the clock), from that attempt's end.
	Elapsed time.Duration
	Reason  Reason // why it stopped
	// Wait is the wait that was refused, for ReasonDeadline and ReasonHintTooLong
	// (the server's hint), and the time until the next probe for
	// ReasonBreakerOpen when the breaker says.
	Wait time.Duration
	// Source is where Wait came from, for ReasonDeadline: event.ServerHint
	// (the server asked for it), event.RateLimit (the throttle) or
	// event.Backoff (the schedule, or the policy's Stepper); zero when
	// MaxElapsed ran out during an attempt or a wait.
	Source event.Source
	// Limit is what Wait was compared with: the time left before the
	// deadline, or MaxRetryAfter. For ReasonDeadline with a Cause (MaxElapsed
	// ran out during an attempt or a wait), it is MaxElapsed.
	Limit time.Duration
	Last  error // the last attempt's error (nil if no attempt was made)
	// Cause is the context's error for ReasonCancelled (joined with the
	// cause the context was cancelled with, context.Cause, when that is
	// another error: both match), and for ReasonDeadline when
	// MaxElapsed ran out; the refusal for ReasonBreakerOpen and ReasonRejectedLocally;
	// for ReasonPermanent, an error naming the class that Policy.Classify
	// returned when it was none of the three (such an error is not retried).
	Cause error
}

// Error says what was tried, how often, for how long and why it stopped.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("retry: gave up after ")
	fmt.Fprintf(&b, "%d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	fmt.Fprintf(&b, " in %v: ", e.Elapsed.Round(time.Microsecond))
	switch e.Reason {
	case ReasonDeadline:
		if e.Cause != nil {
			fmt.Fprintf(&b, "deadline: MaxElapsed %v passed", e.Limit)
		} else {
			when := "after"
			if e.Wait == e.Limit {
				when = "at"
			}
			fmt.Fprintf(&b, "deadline: waiting %v would end %s the deadline (%v left)", e.Wait, when, e.Limit)
			switch e.Source {
			case event.ServerHint:
				b.WriteString(", the wait the server asked for")
			case event.RateLimit:
				b.WriteString(", the wait the throttle asked for")
			}
		}
	case ReasonHintTooLong:
		fmt.Fprintf(&b, "server asked to wait %v, more than MaxRetryAfter %v", e.Wait, e.Limit)
	case ReasonBreakerOpen:
		b.WriteString("breaker open")
		if e.Wait > 0 {
			fmt.Fprintf(&b, ", next probe in %v", e.Wait)
		}
	default:
		b.WriteString(e.Reason.String())
	}
	if e.Cause != nil && e.Reason != ReasonBreakerOpen {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	if e.Last != nil {
		b.WriteString(": last error: ")
		b.WriteString(e.Last.Error())
	}
	return b.String()
}

// Unwrap returns the last attempt's error and the cause, those that are set.
func (e *Error) Unwrap() []error {
	switch {
	case e.Last != nil && e.Cause != nil:
		return []error{e.Last, e.Cause}
	case e.Last != nil:
		return []error{e.Last}
	case e.Cause != nil:
		return []error{e.Cause}
	}
	return nil
}

// Is matches ErrGaveUp and the sentinel of e.Reason.
func (e *Error) Is(target error) bool {
	if target == ErrGaveUp {
		return true
	}
	return int(e.Reason) < len(reasonSentinels) && reasonSentinels[e.Reason] != nil && target == reasonSentinels[e.Reason]
}
