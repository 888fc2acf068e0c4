// Package retry runs a call again when it fails for a while: at the right
// moments (exponential backoff with jitter, or the server's own hint), for
// the right errors (a classifier; Permanent marks the rest), within bounds
// (attempts, an overall deadline, per-attempt timeouts), and no more than
// the system can bear (a retry budget, a circuit breaker, adaptive
// throttling and a bulkhead, each optional and defined here as a small
// interface).
//
// Most callers want
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return callPartner(ctx)
//	})
//
// The zero Policy is the default policy; see Policy. When the first attempt
// succeeds and the policy has no guards, observer, per-attempt timeout or
// overall deadline, Do costs one function call: no allocation, no clock
// read, no goroutine.
//
// When the loop stops without success it returns an *Error that wraps the
// last error: errors.Is(err, io.ErrUnexpectedEOF) still works, errors.Is(err,
// retry.ErrExhausted) says why it stopped, and errors.As(err, &e) with e of
// type *retry.Error gives the attempts, the time spent and the reason.
//
// Waits use timers and end at once when the context is cancelled; a wait
// that would end after the context's deadline or after Policy.MaxElapsed is
// not started at all. Tests of code that uses retry can run under
// testing/synctest, or use package retrytest to make policies not wait.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// Do calls fn until it succeeds or p says to stop, and returns nil or the
// give-up *Error. fn gets the context for one attempt (ctx itself, or a
// child bounded by Policy.AttemptTimeout and Policy.MaxElapsed). An invalid
// p is reported before any attempt, as an error matching ErrInvalidPolicy:
// a policy is checked on every call, so that a bad one is refused on its
// first call rather than at the first failure; New checks once.
//
// The first attempt and the check are inlined at the call site, so a call
// that succeeds at once costs fn's call and a few instructions (one
// comparison for a zero Policy literal), and allocates nothing.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	return firstAttempt(ctx, &p, fn, (*Policy).quick, (*Policy).rest)
}

// DoValue is Do for a call that returns a value. On success it returns the
// value of the successful attempt. When it gives up it returns the value of
// the last attempt made (the zero T if none was) with the *Error, so that a
// caller such as an HTTP transport can still hand over the last response.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	if !p.quick() {
		if err := p.check(); err != nil {
			var zero T
			return zero, err
		}
		if !p.plain() {
			return run(ctx, &p, fn, nil)
		}
	}
	v, err := fn(ctx)
	if err == nil {
		return v, nil
	}
	return run(ctx, &p, fn, &first[T]{v: v, err: err})
}

func unit(fn func(context.Context) error) func(context.Context) (struct{}, error) {
	return func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) }
}

// first is the outcome of a first attempt made before run was entered.
type first[T any] struct {
	v   T
	err error
}

// refusal is a guard's "no" to an attempt.
type refusal struct {
	reason Reason
	cause  error
	wait   time.Duration
	limit  time.Duration // for Deadline: the time that was left
}

// run is the loop. caller is the caller's context; ctx may be bounded by
// MaxElapsed. When f is set, the first attempt was already made (and failed)
// without reading the clock, so the time spent counts from its end.
func run[T any](caller context.Context, p *Policy, fn func(context.Context) (T, error), f *first[T]) (T, error) {
	var (
		start    time.Time
		attempts int
		prev     time.Duration
		v        T
		err      error
		limit    = p.Attempts()
		ctx      = caller
		st       Stepper // made on the first retry when p.Stepper is set
		e        = p.env()
	)
	start = time.Now()
	pending := f != nil // the first attempt was made by the caller and failed
	if pending {
		v, err, attempts = f.v, f.err, 1
	}
	if p.MaxElapsed > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(caller, start.Add(p.MaxElapsed))
		defer cancel()
	}
	giveUp := func(ge *Error) (T, error) {
		ge.Attempts = attempts
		ge.Elapsed = time.Since(start)
		if ge.Last == nil && ge.Reason != Cancelled {
			ge.Last = err
		}
		if o := e.Observer; o != nil {
			o.Observe(caller, event.Event{Kind: event.GaveUp, Time: time.Now(), Component: "retry",
				Attempt: ge.Attempts, Err: ge, Duration: ge.Elapsed, Reason: ge.Reason.Key()})
		}
		return v, ge
	}
	for {
		var class Class
		if pending {
			pending = false
			class = p.classify(err)
		} else {
			var at time.Time // the first attempt reuses the loop's start; later ones read the clock
			if attempts == 0 {
				at = start
			}
			nv, nerr, nclass, r := attempt(caller, ctx, p, &e, fn, attempts+1, at)
			if r != nil { // refused before it was sent: the last error stays the previous attempt's
				if r.reason == Cancelled {
					return giveUp(stopped(caller, ctx, p, err))
				}
				return giveUp(&Error{Reason: r.reason, Cause: r.cause, Wait: r.wait, Limit: r.limit, Last: err})
			}
			attempts++
			v, err, class = nv, nerr, nclass
			if err == nil {
				return v, nil
			}
		}
		if ctx.Err() != nil {
			return giveUp(stopped(caller, ctx, p, err))
		}
		if class == Final {
			return giveUp(&Error{Reason: PermanentError, Last: unmark(err)})
		}
		if limit > 0 && attempts >= limit {
			return giveUp(&Error{Reason: Exhausted})
		}
		if IsSingleAttempt(caller) {
			return giveUp(&Error{Reason: OuterLayer})
		}

		var (
			wait    time.Duration
			stepped bool
		)
		if p.Stepper != nil {
			if st == nil {
				st = p.Stepper()
			}
			w, ok := st.Step(attempts, err, class, e.draw())
			if !ok {
				return giveUp(&Error{Reason: Exhausted})
			}
			wait, stepped = w, true
		}
		src := event.Backoff
		if h, ok := HintOf(err); ok {
			if max := p.maxRetryAfter(); h > max {
				return giveUp(&Error{Reason: HintTooLong, Wait: h, Limit: max})
			}
			wait = h + time.Duration(float64(h)*HintJitter*e.draw())
			src = event.ServerHint
		} else if !stepped {
			s := p.Backoff
			if class == Throttled {
				s.Base = p.throttleBase()
			}
			wait = s.Delay(attempts, prev, e.draw())
			prev = wait
		}
		now := time.Now()
		if dl, ok := ctx.Deadline(); ok && now.Add(wait).After(dl) {
			return giveUp(&Error{Reason: Deadline, Wait: wait, Limit: dl.Sub(now)})
		}
		if b := e.Budget; b != nil && !b.AllowRetryAt(now, errors.Is(err, ErrAttemptTimeout)) {
			if o := e.Observer; o != nil {
				o.Observe(caller, event.Event{Kind: event.BudgetRefused, Time: now, Component: "retry",
					Attempt: attempts, Err: err, Reason: BudgetExhausted.Key()})
			}
			return giveUp(&Error{Reason: BudgetExhausted})
		}
		if p.OnRetry != nil {
			p.OnRetry(Wait{Attempt: attempts, Err: err, Class: class, Delay: wait, Source: src})
		}
		if o := e.Observer; o != nil {
			o.Observe(caller, event.Event{Kind: event.RetryScheduled, Time: now, Component: "retry",
				Attempt: attempts, Err: err, Wait: wait, Source: src})
		}
		if e.sleep(ctx, wait) != nil {
			return giveUp(stopped(caller, ctx, p, err))
		}
	}
}

// stopped builds the give-up error for a context that ended: the caller's
// (Cancelled) or the loop's own MaxElapsed bound (Deadline).
func stopped(caller, ctx context.Context, p *Policy, last error) *Error {
	if cerr := caller.Err(); cerr != nil {
		return &Error{Reason: Cancelled, Cause: cerr, Last: last}
	}
	return &Error{Reason: Deadline, Limit: p.MaxElapsed, Cause: ctx.Err(), Last: last}
}

// attempt makes attempt number n through the guards. It returns the
// attempt's value and error and the error's class (Transient for an attempt
// that hit AttemptTimeout, whatever the classifier would say), or a refusal
// when a guard said no before the attempt was sent.
//
// now is the attempt's start when the caller just read the clock (zero
// otherwise). The clock is read only when something needs it: a guard's
// decision at the start, and the end only for what needs a duration (the
// breaker's slow calls, the observer's attempt durations); budgets and
// throttles record the outcome at the attempt's start instant.
func attempt[T any](caller, ctx context.Context, p *Policy, e *Env, fn func(context.Context) (T, error), n int, now time.Time) (v T, err error, class Class, r *refusal) {
	guarded := e.guarded()
	if guarded && now.IsZero() {
		now = time.Now()
	}
	if b := e.Bulkhead; b != nil {
		if berr := b.Acquire(ctx); berr != nil {
			if ctx.Err() != nil {
				return v, nil, 0, &refusal{reason: Cancelled}
			}
			e.emitRejected(caller, now, n, berr)
			return v, nil, 0, &refusal{reason: RejectedLocally, cause: berr}
		}
		defer b.Release()
	}
	if t := e.Throttle; t != nil {
		w, terr := t.AdmitAt(now)
		if terr != nil {
			e.emitRejected(caller, now, n, terr)
			return v, nil, 0, &refusal{reason: RejectedLocally, cause: terr}
		}
		if w > 0 {
			if dl, ok := ctx.Deadline(); ok && now.Add(w).After(dl) {
				cancelAdmit(t, now)
				return v, nil, 0, &refusal{reason: Deadline, wait: w, limit: dl.Sub(now)}
			}
			if e.sleep(ctx, w) != nil {
				cancelAdmit(t, time.Now())
				return v, nil, 0, &refusal{reason: Cancelled}
			}
			now = time.Now()
		}
	}
	var ticket uint64
	if b := e.Breaker; b != nil {
		var berr error
		ticket, berr = b.AllowAt(now, n > 1)
		if berr != nil {
			if t := e.Throttle; t != nil {
				cancelAdmit(t, now)
			}
			wait, _ := HintOf(berr)
			if o := e.Observer; o != nil {
				o.Observe(caller, event.Event{Kind: event.BreakerRejected, Time: now, Component: "retry",
					Attempt: n, Err: berr, Wait: wait})
			}
			return v, nil, 0, &refusal{reason: BreakerOpen, cause: berr, wait: wait}
		}
		defer func() {
			if rec := recover(); rec != nil {
				b.DoneAt(time.Now(), ticket, time.Since(now), fmt.Errorf("retry: attempt panicked: %v", rec))
				panic(rec)
			}
		}()
	}
	if o := e.Observer; o != nil {
		o.Observe(caller, event.Event{Kind: event.AttemptStart, Time: now, Component: "retry", Attempt: n})
	}
	actx := ctx
	var cancel context.CancelFunc
	if p.AttemptTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, p.AttemptTimeout)
	}
	v, err = fn(actx)
	timedOut := false
	if cancel != nil {
		if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			timedOut = true
			err = &timeoutError{d: p.AttemptTimeout, err: err}
		}
		cancel()
	}
	if err != nil && !timedOut {
		class = p.classify(err)
	}
	if !guarded {
		return v, err, class, nil
	}
	end := now
	if e.Breaker != nil || e.Observer != nil {
		end = time.Now()
	}
	if b := e.Breaker; b != nil {
		b.DoneAt(end, ticket, end.Sub(now), err)
	}
	if t := e.Throttle; t != nil {
		t.RecordAt(end, err != nil && class == Throttled)
	}
	if b := e.Budget; b != nil {
		b.RecordAt(end, n == 1, err == nil)
	}
	if o := e.Observer; o != nil {
		o.Observe(caller, event.Event{Kind: event.AttemptEnd, Time: end, Component: "retry", Attempt: n,
			Outcome: outcome(caller, err, class), Err: err, Duration: end.Sub(now)})
	}
	return v, err, class, nil
}

// cancelAdmit hands back the turn of an attempt that t admitted but the
// loop did not send, if t keeps turns (see ThrottleCanceller).
func cancelAdmit(t Throttle, now time.Time) {
	if c, ok := t.(ThrottleCanceller); ok {
		c.CancelAt(now)
	}
}

func (e *Env) emitRejected(ctx context.Context, now time.Time, n int, err error) {
	if o := e.Observer; o != nil {
		o.Observe(ctx, event.Event{Kind: event.ThrottleRejected, Time: now, Component: "retry", Attempt: n, Err: err})
	}
}

func outcome(caller context.Context, err error, class Class) event.Outcome {
	switch {
	case err == nil:
		return event.Success
	case caller.Err() != nil:
		return event.Cancelled
	case class == Throttled:
		return event.Throttled
	case class == Final:
		return event.Rejected
	}
	return event.Failure
}

// classify applies the policy's classifier; Permanent marks always win.
func (p *Policy) classify(err error) Class {
	if p.Classify != nil {
		if IsPermanent(err) {
			return Final
		}
		return p.Classify(err)
	}
	return DefaultClassify(err)
}

// unmark removes the Permanent mark so that the caller sees its own error.
func unmark(err error) error {
	if pe, ok := err.(*permanentError); ok {
		return pe.err
	}
	return err
}

// sleep waits d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// timeoutError is an attempt that ran into Policy.AttemptTimeout.
type timeoutError struct {
	d   time.Duration
	err error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("retry: attempt timed out after %v: %v", e.d, e.err)
}
func (e *timeoutError) Unwrap() error        { return e.err }
func (e *timeoutError) Is(target error) bool { return target == ErrAttemptTimeout }
func (e *timeoutError) Timeout() bool        { return true }
