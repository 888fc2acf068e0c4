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
// Hedge and HedgeValue also cut the latency of calls that are merely slow:
// with a Hedger in the policy's Env (package hedge makes one), an attempt
// that has not answered after the Hedger's delay gets a copy sent beside
// it, and the first success wins (see HedgeValue).
//
// A call whose context has ended when an attempt is due makes no attempt:
// it gives up with ReasonCancelled, and its error and its events count
// only the attempts made before (none, when the context had ended before
// the call). The first attempt of a policy with no guard, observer,
// per-attempt timeout or overall deadline is the exception: it is made
// without looking at the context (fn sees it ended), so that a successful
// call costs one function call.
//
// Waits use timers and end at once when the context is cancelled; a wait
// that would not end before the context's deadline or Policy.MaxElapsed is
// not started at all. Tests of code that uses retry can run under
// testing/synctest, or use package retrytest to make policies not wait.
//
// Do's decisions are those of a Loop, the state machine that Do drives
// with timers and the simulator drives on virtual time; code that waits
// in its own way (several attempts in flight, an event loop) can drive a
// Loop too.
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
// p is reported before any attempt, as an error matching ErrInvalidConfig:
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
		if err := p.Validate(); err != nil {
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

// run drives a Loop with timers. caller is the caller's context; the
// attempts run under it, bounded by MaxElapsed. When f is set, the first
// attempt was already made (and failed) without reading the clock, so the
// time spent counts from its end.
func run[T any](caller context.Context, p *Policy, fn func(context.Context) (T, error), f *first[T]) (T, error) {
	var (
		l   Loop
		t   Ticket
		v   T
		d   Decision
		ctx = caller
	)
	now := time.Now()
	l.Start(caller, p, now)
	if p.MaxElapsed > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(caller, l.elapsedAt)
		defer cancel()
	}
	if f != nil {
		l.send(caller, now, &t, nil) // it was sent: a plain policy has nothing to ask
		v, d = f.v, l.After(caller, now, &t, f.err)
		t = Ticket{}
	} else {
		d = l.Before(caller, now, &t)
	}
	for {
		switch d.Verdict {
		case Send:
			var err error
			v, err = attempt(caller, ctx, &l, &t, fn)
			end := t.sent // budgets and throttles record a success at its start
			if err != nil || l.timesAttempts() {
				end = time.Now()
			}
			d = l.After(caller, end, &t, err)
			t = Ticket{}
		case Acquire:
			err := p.Env.Bulkhead.Acquire(ctx)
			d = l.Acquired(caller, time.Now(), &t, err)
		case Sleep:
			if err := p.Env.sleep(ctx, d.Wait); err != nil {
				d = l.Interrupted(caller, time.Now(), &t, err)
				continue
			}
			if l.guarded() {
				now = time.Now()
			}
			d = l.Before(caller, now, &t)
		case Done:
			return v, nil
		default:
			return v, l.Err()
		}
	}
}

// attempt calls fn for attempt t, under AttemptTimeout: an error after the
// timeout passed (and not the caller's nor MaxElapsed's end) is a
// *timeoutError. If fn panics or calls runtime.Goexit, the guards and the
// observer hear of the attempt's end (a failure) before the panic goes on
// or the goroutine exits, as in a hedged call: a bulkhead slot or a
// breaker's probe is not held for ever.
func attempt[T any](caller, ctx context.Context, l *Loop, t *Ticket, fn func(context.Context) (T, error)) (v T, err error) {
	returned := false // fn returned: it neither panicked nor called Goexit
	if l.p.Env != nil {
		defer func() {
			if returned {
				return
			}
			if rec := recover(); rec != nil {
				l.Abandon(caller, time.Now(), t, fmt.Errorf("retry: attempt panicked: %v", rec))
				panic(rec)
			}
			l.Abandon(caller, time.Now(), t, errGoexit)
		}()
	}
	d := l.p.AttemptTimeout
	if d <= 0 {
		v, err = fn(ctx)
		returned = true
		return v, err
	}
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err = fn(actx)
	returned = true
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = &timeoutError{d: d, err: err}
	}
	return v, err
}

// outcome is an attempt's outcome for its AttemptEnd event; answered is
// false for a failure after the call's time was over (the caller's context
// or MaxElapsed ended it).
func outcome(err error, class Class, answered bool) event.Outcome {
	switch {
	case err == nil:
		return event.Success
	case !answered:
		return event.Cancelled
	case class == ClassThrottled:
		return event.Throttled
	case class == ClassPermanent:
		return event.Rejected
	}
	return event.Failure
}

// classify applies the policy's classifier; Permanent marks always win.
func (p *Policy) classify(err error) Class {
	c, _ := p.classifyChecked(err)
	return c
}

// attemptClass is the class of an attempt's error as After gives it: an
// attempt that ran into AttemptTimeout is ClassTransient whatever the
// classifier says of its inner error.
func (p *Policy) attemptClass(err error) Class {
	if _, timedOut := err.(*timeoutError); timedOut {
		return ClassTransient
	}
	return p.classify(err)
}

// classifyChecked is classify, and the class the policy's Classify
// returned when it is none of the three (bad is then ClassPermanent's
// successor or above, and c is ClassPermanent): an error that the
// classifier cannot place is not retried, and is never taken for a
// success.
func (p *Policy) classifyChecked(err error) (c, bad Class) {
	if p.Classify == nil {
		return DefaultClassify(err), 0
	}
	if IsPermanent(err) {
		return ClassPermanent, 0
	}
	if c = p.Classify(err); c > ClassPermanent {
		return ClassPermanent, c
	}
	return c, 0
}

// badClassError is the Cause of the give-up after an error that
// Policy.Classify put in none of the classes.
type badClassError struct{ c Class }

func (e badClassError) Error() string {
	return fmt.Sprintf("retry: Policy.Classify returned class %d, which is none of ClassTransient (0), ClassThrottled (1) and ClassPermanent (2): the error is not retried", uint8(e.c))
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
	end := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		// The wait ended before the deadline by the loop's reckoning, but
		// its timer was late: when both are due, the wait is over,
		// whichever of the two the select happened to see first.
		if !time.Now().Before(end) {
			return nil
		}
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
