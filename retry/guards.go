package retry

import (
	"context"
	"time"
)

// The interfaces below are how the loop asks for permission and reports
// outcomes. They are defined here, by their consumer; packages budget,
// breaker and throttle implement them without importing retry, and the
// simulator drives the same objects on virtual time through the same
// methods. Every method takes now, so that decisions are pure functions of
// time; implementations must be safe for concurrent use. A guard that
// panics in Before's or Hedge's questions (or whose hook does: a breaker's observer
// sees its state changes) makes the call panic with its value, once what
// the attempt held (a bulkhead slot, a throttle's turn) has been handed
// back.

// Budget limits retries to what the system can bear (a share of traffic,
// or a token bucket). It is asked before every retry, never before a first
// attempt.
type Budget interface {
	// AllowRetryAt reports whether one more retry may be sent at now, and
	// if so takes its cost. timeout says the failed attempt timed out
	// (token buckets charge more for it).
	AllowRetryAt(now time.Time, timeout bool) bool
	// RecordAt records an attempt's outcome: first is true for a logical
	// request's first attempt, success for an attempt that succeeded. The
	// loop reports successes and the failures the dependency answered
	// that are not ClassPermanent (as gRPC counts only the failures it
	// would retry): a permanent failure, an attempt cut by the caller's
	// context or the call's deadline are not reported.
	RecordAt(now time.Time, first, success bool)
}

// ClassBudget is a Budget whose retries cost by the class of the error
// that caused them: the AWS SDKs' retry quota (budget.Bucket) charges a
// retry after a throttling answer less than others. The loop calls
// AllowRetryClassAt, with throttled true for an error classed ClassThrottled,
// instead of AllowRetryAt when the Budget has it.
type ClassBudget interface {
	AllowRetryClassAt(now time.Time, throttled, timeout bool) bool
}

// BudgetCanceller is implemented by a Budget that can take back a retry it
// granted. The loop asks the budget for a retry before it waits for it;
// when the retry is then not sent (a guard refuses it in Before, the
// caller's context ends or MaxElapsed passes during the wait or before
// it), the loop calls CancelRetryAt with the instant AllowRetryAt (or
// AllowRetryClassAt) granted it and the flags it was asked with (throttled
// is false for a Budget that is not a ClassBudget), so that the budget's
// allowance is not spent on a retry that never went. budget.Bucket,
// budget.Share and the fleet's redis.Budget implement it.
type BudgetCanceller interface {
	CancelRetryAt(granted time.Time, throttled, timeout bool)
}

// allowRetry asks b for a retry after err, of class class.
func allowRetry(b Budget, now time.Time, class Class, timeout bool) bool {
	if cb, ok := b.(ClassBudget); ok {
		return cb.AllowRetryClassAt(now, class == ClassThrottled, timeout)
	}
	return b.AllowRetryAt(now, timeout)
}

// Breaker is a circuit breaker. The loop calls AllowAt before each attempt
// and, if allowed, DoneAt after it with the ticket AllowAt returned.
type Breaker interface {
	// AllowAt asks whether an attempt may be sent at now; retry is true
	// for attempts after the first. It returns a ticket for DoneAt, or an
	// error when the breaker refuses (an error that says how long until
	// the next probe should implement Hinter).
	AllowAt(now time.Time, retry bool) (ticket uint64, err error)
	// DoneAt reports the outcome of an allowed attempt that started
	// elapsed before now; err is nil on success. The breaker decides which
	// errors count as failures. The loop reports each ticket once; a
	// breaker need not tell a second report of a ticket from another
	// attempt's (package breaker's closed tickets carry no identity).
	DoneAt(now time.Time, ticket uint64, elapsed time.Duration, err error)
}

// Throttle adapts the send rate to the server's overload answers
// (adaptive client-side throttling, or a rate limiter).
type Throttle interface {
	// AdmitAt asks whether an attempt may be sent at now. It returns how
	// long to wait before sending (0 for at once), or an error when the
	// attempt is rejected locally.
	AdmitAt(now time.Time) (wait time.Duration, err error)
	// RecordAt reports the outcome of an admitted attempt: throttled is
	// true when the server answered that it is overloaded.
	RecordAt(now time.Time, throttled bool)
}

// ThrottleCanceller is implemented by a Throttle whose AdmitAt takes
// something for the attempt it admits (a rate limiter's token, reserved
// even when it asks to wait). When the loop does not send an admitted
// attempt after all (its wait would end after the deadline, the context
// ended during the wait, or the breaker refused it), it calls CancelAt, so
// that the turn goes to the next caller instead of being lost.
type ThrottleCanceller interface {
	CancelAt(now time.Time)
}

// Bulkhead limits how many attempts run at once against one dependency.
// Acquire waits, bounded by the bulkhead's own limit and by ctx, for a slot;
// every successful Acquire is followed by one Release. The loop first asks
// with a context that has already ended, and Acquire must not wait then:
// nil with a free slot taken, the context's error (context.Canceled) when
// it would wait for one (the loop then reports the wait and asks again
// with the call's context), or its refusal. package throttle's Bulkhead
// does so.
type Bulkhead interface {
	Acquire(ctx context.Context) error
	Release()
}

// AttemptTimeout marks an attempt that ran into Policy.AttemptTimeout. Its
// error wraps context.DeadlineExceeded like the caller's own deadline does;
// this method lets a breaker (which must not import retry) count the first
// as the dependency's failure and ignore the second.
func (e *timeoutError) AttemptTimeout() bool { return true }

type singleAttemptKey struct{}

// SingleAttempt returns a context under which retry loops make one attempt
// only: an outer layer (the caller of the request being served) already
// retries, and retrying here as well would multiply the load (3 layers × 3
// attempts = 27 calls at the bottom). A loop that stops for this reason
// returns an *Error with Reason ReasonOuterLayer.
func SingleAttempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, singleAttemptKey{}, true)
}

// WithoutSingleAttempt returns a context under which retry loops make
// their attempts again, whatever SingleAttempt said of ctx. It is for work
// that outlives the request being served: a handler that answers (202
// Accepted) and finishes in the background on
// context.WithoutCancel(r.Context()), or puts the work on a queue, keeps
// the context's values, the single-attempt mark with them; but its caller
// has its answer and will not retry that work, so the work's own loops
// must.
func WithoutSingleAttempt(ctx context.Context) context.Context {
	if !IsSingleAttempt(ctx) {
		return ctx
	}
	return context.WithValue(ctx, singleAttemptKey{}, false)
}

// IsSingleAttempt reports whether ctx was made by SingleAttempt (and not
// since by WithoutSingleAttempt).
func IsSingleAttempt(ctx context.Context) bool {
	v, _ := ctx.Value(singleAttemptKey{}).(bool)
	return v
}
