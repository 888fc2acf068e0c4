// Package event is the one event model of the toolkit: every package that
// retries, refuses, trips or replays reports what it did as an Event to an
// Observer.
//
// An Observer is optional everywhere: a nil Observer costs nothing (the
// packages check for nil before they build an event, so the success path of
// a call stays free of allocations). Observers must be safe for concurrent
// use and must not block: they are called inline, outside any lock of the
// reporting package.
//
// Observers that turn events into logs or metrics name what they write with
// the Attr constants (OpenTelemetry's semantic conventions where they
// exist: http.request.method, server.address, error.type; "yaoki.*"
// otherwise), and derive low-cardinality values with Event.ErrorType,
// Event.StatusClass and Event.Server, none of which allocates. Two come with
// the toolkit: package eventlog (log/slog) and module yaoki/otel
// (OpenTelemetry metrics).
package event

import (
	"context"
	"fmt"
	"time"
)

// Kind says what happened.
type Kind uint8

const (
	// AttemptStart: an attempt is about to be sent (Attempt is its number,
	// from 1).
	AttemptStart Kind = iota + 1
	// AttemptEnd: an attempt finished (Outcome, Status, Err, Duration).
	AttemptEnd
	// RetryScheduled: the loop will wait Wait (from Source) and try again.
	// With Source RateLimit no retry is scheduled: the throttle (a
	// client-side rate limiter) makes attempt number Attempt, the first
	// one too, wait Wait before it is sent; with Reason "bulkhead", attempt
	// Attempt waited Wait, from Time, for a slot of a full bulkhead
	// (reported when the slot is granted: the wait is not known before).
	RetryScheduled
	// GaveUp: the loop stopped without success (Reason, Err, Attempt is
	// the number of attempts made, Duration the time spent).
	GaveUp
	// BudgetRefused: a retry budget refused a retry.
	BudgetRefused
	// BreakerStateChange: a circuit breaker moved From one state To another.
	BreakerStateChange
	// BreakerRejected: an open breaker refused an attempt (Wait is the time
	// until the next probe).
	BreakerRejected
	// ThrottleRejected: adaptive throttling, a rate limiter or a bulkhead
	// refused an attempt locally, before it was sent; Reason "deadline"
	// (with Wait) when the throttle's wait would end after the deadline, or
	// the deadline ended a wait for a bulkhead's slot (Wait: how long it
	// waited); a bulkhead that ran out of its own wait has Wait too.
	ThrottleRejected
	// Replay: the idempotency middleware replayed a stored response (Key).
	Replay
	// Conflict: the idempotency middleware refused a request (Status 409,
	// 422 or 400; Reason says why).
	Conflict
	// Redrive: a dead letter was redriven (Name is its queue, Key its
	// idempotency key, Attempt the redrive's number from 1, Duration the
	// handler's time). Outcome Success: done, deleted; Failure: due again
	// later; Rejected: parked. Reason is the letter's reason after it
	// (redrive_failed, redrives_exhausted, permanent_error), or lease_lost
	// when the outcome could not be stored.
	Redrive
	// Hedge: a hedge was sent, a copy of a call whose earlier attempts
	// had not answered yet (Attempt is its number, from 2; Wait is how long
	// after the call's start it was sent).
	Hedge
	// HedgeWon: a call's answer came from a hedge rather than from its
	// first attempt (Attempt is the winning attempt's number, Duration the
	// call's time).
	HedgeWon
	// HedgeRefused: a hedge was not sent (Reason: hedge_budget_exhausted
	// when the hedge budget was spent, hedge_brownout while most calls are
	// slow).
	HedgeRefused
)

var kindNames = [...]string{
	AttemptStart:       "attempt_start",
	AttemptEnd:         "attempt_end",
	RetryScheduled:     "retry_scheduled",
	GaveUp:             "gave_up",
	BudgetRefused:      "budget_refused",
	BreakerStateChange: "breaker_state_change",
	BreakerRejected:    "breaker_rejected",
	ThrottleRejected:   "throttle_rejected",
	Replay:             "replay",
	Conflict:           "conflict",
	Redrive:            "redrive",
	Hedge:              "hedge",
	HedgeWon:           "hedge_won",
	HedgeRefused:       "hedge_refused",
}

// String returns the kind's snake_case name, as used in logs and metrics.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind_%d", uint8(k))
}

// Outcome classifies how an attempt ended.
type Outcome uint8

const (
	// Success: the attempt succeeded.
	Success Outcome = iota + 1
	// Failure: the attempt failed with an error worth retrying.
	Failure
	// Throttled: the server said it is overloaded (429, 503 or an error
	// classified as throttling).
	Throttled
	// Rejected: the attempt failed with an error that is not retried.
	Rejected
	// Cancelled: the caller cancelled or its deadline passed.
	Cancelled
)

// String returns the outcome's lowercase name.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Throttled:
		return "throttled"
	case Rejected:
		return "rejected"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// Source says where a wait came from.
type Source uint8

const (
	// Backoff: the wait was computed by the backoff schedule.
	Backoff Source = iota + 1
	// ServerHint: the server said when to come back (Retry-After, a
	// RateLimit reset, or an error carrying a hint).
	ServerHint
	// RateLimit: a client-side rate limiter asked the attempt to wait, or
	// (Event.Reason "bulkhead") it waited for a bulkhead's slot.
	RateLimit
)

// String returns "backoff", "server" or "rate_limit".
func (s Source) String() string {
	switch s {
	case Backoff:
		return "backoff"
	case ServerHint:
		return "server"
	case RateLimit:
		return "rate_limit"
	}
	return "unknown"
}

// Event is one thing that happened. Fields that do not apply to its Kind
// are zero. It is passed by value so that reporting it allocates nothing.
type Event struct {
	Kind      Kind          // what happened
	Time      time.Time     // when it happened
	Component string        // the reporting package: "retry", "httpretry", "breaker", ...
	Name      string        // the instance's name, if it has one (a breaker's or budget's)
	Method    string        // HTTP method, where there is one
	Host      string        // destination "host" or "host:port", where known (see Server)
	Attempt   int           // attempt number from 1, or attempts made for GaveUp
	Outcome   Outcome       // for AttemptEnd
	Status    int           // HTTP status code, 0 if none
	Err       error         // the attempt's or the give-up's error
	Wait      time.Duration // RetryScheduled: the wait; BreakerRejected: time to next probe; ThrottleRejected: the throttle's wait; Hedge: time since the call's start
	Source    Source        // RetryScheduled: where Wait came from
	Duration  time.Duration // AttemptEnd: the attempt's duration; GaveUp, HedgeWon: time spent
	Reason    string        // GaveUp, BudgetRefused, ThrottleRejected, Conflict, HedgeRefused: why, as a short snake_case word; RetryScheduled: "bulkhead" for a bulkhead's wait
	From, To  string        // BreakerStateChange: "closed", "open", "half_open"
	Key       string        // Replay, Conflict: the Idempotency-Key
	Level     float64       // BudgetRefused: the budget's level when it refused
}

// Observer receives events. Implementations must be safe for concurrent use
// and must return quickly; ctx is the context of the call the event belongs
// to (context.Background() where there is none).
type Observer interface {
	// Observe is handed each event as it happens, inline, on the goroutine
	// of the call that reports it.
	Observe(ctx context.Context, e Event)
}

// Func adapts a function to an Observer.
type Func func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f Func) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Multi returns an Observer that passes each event to every non-nil
// observer in order. It returns nil when none is left, so that callers keep
// the zero-cost path.
func Multi(observers ...Observer) Observer {
	var out multi
	for _, o := range observers {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multi []Observer

func (m multi) Observe(ctx context.Context, e Event) {
	for _, o := range m {
		o.Observe(ctx, e)
	}
}
