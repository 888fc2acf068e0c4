package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// Loop is the retry loop's decisions for one logical call: a state machine
// that its driver tells what happened and when, and that says what to do
// next. Before an attempt, Before says send it, take a bulkhead slot first,
// wait (a throttle asked for it), or give up (a guard refused, with the
// reason, the guard's error and its wait). After an attempt, After says
// done, give up (the *Error with its reason), or wait d before the next
// attempt (and why: the backoff schedule or the server's hint).
//
// A Loop never reads the clock, never sleeps and never starts a goroutine:
// every decision is a function of the instant the driver passes, the
// outcome it reports and the Loop's state. Drivers only move time: Do,
// DoValue and Retrier wait with timers, the simulator (package sim) on
// virtual time. A hedging driver, with several attempts of one call in
// flight, keeps one Ticket per attempt: each goes through the guards in
// Before and hands its outcome back with After.
//
// Before asks the guards in one fixed order: the bulkhead (a slot), the
// throttle (admission, possibly after a wait), the breaker. After reports
// the outcome to them (the bulkhead's slot is released, then breaker,
// throttle, budget), and then decides: the caller's context ended
// (ReasonCancelled), Policy.MaxElapsed passed (ReasonDeadline), the error is final
// (ReasonPermanent: classed ClassPermanent, or not matched by the policy's
// StepMatcher), the attempts are used up (ReasonExhausted), an outer layer
// retries (ReasonOuterLayer), the policy's Stepper ends the call (ReasonExhausted), the
// server's hint is too long (ReasonHintTooLong) or does not end before the
// deadline (ReasonDeadline), the backoff's wait does not end before the
// deadline (ReasonDeadline: a wait that ends at the deadline would leave
// the next attempt no time), the
// budget refuses the retry (ReasonBudgetExhausted); otherwise it calls
// Policy.OnRetry and asks for the wait. An attempt that failed after the
// caller's context ended, or once MaxElapsed had passed (which ends the
// attempts' context as a deadline of the caller's would), is not the
// dependency's failure: the breaker is told the context's error (which
// package breaker ignores), the throttle and the budget are not told at
// all, and the observer sees the attempt end cancelled. The Loop reports every step
// to Env.Observer, when there is one, with the caller's context.
//
// The zero Loop is not ready: Start it with a policy. A Loop is used by
// one call and is not safe for concurrent use (a hedging driver serialises
// its calls). It is a plain value that allocates nothing until it gives up.
type Loop struct {
	// p is a copy of the caller's policy: a pointer to it, stored beside
	// values that reach the heap (the last error, the Stepper), would
	// move the caller's Policy to the heap on every call of Do.
	p         Policy
	start     time.Time
	deadline  time.Time // the earlier of the context's deadline and elapsedAt; zero: none
	elapsedAt time.Time // start + MaxElapsed; zero: no MaxElapsed
	attempts  int       // attempts sent
	queued    time.Time // when Before said Acquire: the bulkhead's wait began
	prev      time.Duration
	st        Stepper       // made at the first retryable failure when Policy.Stepper is set
	last      error         // the last attempt's error
	charge    charge        // the retry the budget granted, until it is sent
	hint      time.Duration // the longest server hint of the round's abandoned attempts
	throttled bool          // one of the round's abandoned attempts was throttled
	gaveUp    Error         // why it gave up, when it did
	err       *Error        // gaveUp as returned by Err, made on first use
}

// charge is a retry that the budget granted and the loop has not sent yet:
// if it is not sent, the budget gets it back (BudgetCanceller).
type charge struct {
	at                 time.Time // when the budget granted it
	on                 bool
	throttled, timeout bool
}

// Ticket is one attempt's passage through the guards: Before fills it in
// and After (or Abandon) takes it back. The zero Ticket is an attempt that
// has not asked yet; use a new one for each attempt. It is a small value:
// keep it on the driver's stack.
type Ticket struct {
	n        int       // the attempt's number, from 1, once it is sent
	sent     time.Time // when it was sent
	breaker  uint64    // the breaker's ticket
	allowed  bool      // the breaker allowed it
	held     bool      // it holds a bulkhead slot
	admitted bool      // the throttle admitted it
}

// Attempt returns the attempt's number, from 1, once Before said Send; 0
// before.
func (t *Ticket) Attempt() int { return t.n }

// Verdict is what a Loop says to do.
type Verdict uint8

const (
	// Send: send the attempt now, then report its outcome with After.
	Send Verdict = iota + 1
	// Acquire: the policy's Env.Bulkhead has no free slot and waits for
	// one: call its Acquire (which waits), then report with Acquired.
	// (Before takes a free slot itself, asking Acquire with a context that
	// has ended, which does not wait.)
	Acquire
	// Sleep: wait Decision.Wait, then call Before again: with the same
	// Ticket after a throttle's wait (it is not asked twice), with a new
	// one after an attempt's failure. If the wait ends early (the context
	// ended), report it with Interrupted instead.
	Sleep
	// Done: the attempt succeeded; the call is over.
	Done
	// GiveUp: the call is over without success; Loop.Err says why.
	GiveUp
)

// Decision is a Loop's answer.
type Decision struct {
	Verdict Verdict
	// Wait is how long to wait, for Sleep.
	Wait time.Duration
	// Source says where Wait comes from: event.Backoff (the schedule, or
	// the Stepper), event.ServerHint, or event.RateLimit (the throttle).
	Source event.Source
	// Reason is why the call gave up, for GiveUp.
	Reason Reason
}

// Start begins a call at now under policy p, which must be valid (see
// Validate); l keeps a copy. ctx is the caller's
// context: its deadline, with p.MaxElapsed counted from now, bounds the
// waits. Start resets l, so one Loop may run several calls in turn.
func (l *Loop) Start(ctx context.Context, p *Policy, now time.Time) {
	*l = Loop{p: *p, start: now}
	if p.MaxElapsed > 0 {
		l.elapsedAt = now.Add(p.MaxElapsed)
		l.deadline = l.elapsedAt
	}
	if dl, ok := ctx.Deadline(); ok && (l.deadline.IsZero() || dl.Before(l.deadline)) {
		l.deadline = dl
	}
}

// Attempts returns the number of attempts sent so far.
func (l *Loop) Attempts() int { return l.attempts }

// Err returns why the call gave up, or nil before a GiveUp. The *Error is
// made on the first call (the observer's GaveUp event is one), so that a
// Loop allocates nothing until it gives up.
func (l *Loop) Err() *Error {
	if l.gaveUp.Reason == 0 {
		return nil
	}
	if l.err == nil {
		e := l.gaveUp
		l.err = &e
	}
	return l.err
}

// Before asks the guards, at now, whether attempt t may be sent. ctx is
// the caller's context (for the observer). It says Send (t is then
// attempt number Loop.Attempts()), Acquire (the bulkhead has no free slot
// and waits for one; a free slot Before takes itself, and a bulkhead that
// refuses without waiting gives up, ReasonRejectedLocally, reported as an
// event.ThrottleRejected with its error), Sleep (a throttle's wait,
// Source event.RateLimit, reported to the observer as an event.RetryScheduled
// of that source) or GiveUp (ReasonBreakerOpen, ReasonRejectedLocally, or
// ReasonDeadline when the throttle's wait would not end before the deadline,
// reported as an event.ThrottleRejected with reason deadline and the wait).
// When ctx has already ended, or MaxElapsed has passed, it gives up at
// once (ReasonCancelled, ReasonDeadline) without asking a guard: the
// attempt is not sent, the observer sees no attempt event for it, and the
// give-up counts the attempts made before.
func (l *Loop) Before(ctx context.Context, now time.Time, t *Ticket) (d Decision) {
	if ge, ok := l.stopped(ctx, now, nil); ok {
		// The caller has gone, or the call's time is up: nothing is sent,
		// no guard is asked, and no attempt is reported, so that the
		// give-up counts only the attempts that were made.
		return l.refuse(ctx, now, t, ge)
	}
	e := l.p.Env
	if e == nil {
		return l.send(ctx, now, t, nil)
	}
	if b := e.Bulkhead; b != nil && !t.held {
		// Asked with a context that has ended, the bulkhead does not
		// wait: a free slot, its refusal, or the context's error when it
		// would wait for a slot, which the driver then waits for.
		switch err := b.Acquire(endedContext{}); {
		case err == nil:
			t.held = true
		case errors.Is(err, context.Canceled):
			l.queued = now
			return Decision{Verdict: Acquire}
		default:
			return l.bulkheadRefused(ctx, now, t, err, 0)
		}
	}
	defer func() {
		if d.Verdict == 0 {
			// A guard or one of its hooks panicked (a breaker's observer,
			// say): the attempt is not sent, and the bulkhead's slot and
			// the throttle's turn go back before the panic goes on, and
			// the budget gets back the retry it paid for.
			l.release(now, t)
			l.refund()
		}
	}()
	if th := e.Throttle; th != nil && !t.admitted {
		w, err := th.AdmitAt(now)
		if err != nil {
			l.release(now, t) // before the observer, which may panic
			l.observe(ctx, event.Event{Kind: event.ThrottleRejected, Time: now, Attempt: l.attempts + 1, Err: err})
			return l.refuse(ctx, now, t, Error{Reason: ReasonRejectedLocally, Cause: err})
		}
		t.admitted = true
		if w > 0 {
			if !l.fits(now, w) {
				l.release(now, t)      // before the observer, which may panic
				if e.Observer != nil { // Key builds a string
					l.observe(ctx, event.Event{Kind: event.ThrottleRejected, Time: now, Attempt: l.attempts + 1,
						Wait: w, Reason: ReasonDeadline.Key()})
				}
				return l.refuse(ctx, now, t, Error{Reason: ReasonDeadline, Wait: w, Source: event.RateLimit, Limit: l.deadline.Sub(now)})
			}
			// The attempt waits for the throttle: the observer hears of
			// it (if it panics, the deferred release hands the turn back).
			l.observe(ctx, event.Event{Kind: event.RetryScheduled, Time: now, Attempt: l.attempts + 1, Wait: w, Source: event.RateLimit})
			return Decision{Verdict: Sleep, Wait: w, Source: event.RateLimit}
		}
	}
	if b := e.Breaker; b != nil {
		tk, err := b.AllowAt(now, l.attempts > 0)
		if err != nil {
			wait, _ := HintOf(err)
			l.release(now, t) // before the observer, which may panic
			l.observe(ctx, event.Event{Kind: event.BreakerRejected, Time: now, Attempt: l.attempts + 1, Err: err, Wait: wait})
			return l.refuse(ctx, now, t, Error{Reason: ReasonBreakerOpen, Cause: err, Wait: wait})
		}
		t.breaker, t.allowed = tk, true
	}
	d = l.send(ctx, now, t, e)
	l.charge.on = false // the retry the budget paid for has gone
	return d
}

func (l *Loop) send(ctx context.Context, now time.Time, t *Ticket, e *Env) Decision {
	l.attempts++
	t.n, t.sent = l.attempts, now
	if e != nil && e.Observer != nil {
		l.observeHolding(ctx, now, t, event.Event{Kind: event.AttemptStart, Time: now, Attempt: t.n})
	}
	return Decision{Verdict: Send}
}

// observeHolding reports ev about attempt t, which holds what the guards
// gave it and is about to be sent. If the observer panics, the attempt is
// not sent: what it holds is handed back (the bulkhead's slot, the
// breaker's ticket as cancelled, the throttle's turn, the budget's retry)
// and the panic goes on, so that a bug in an observer does not shrink a bulkhead or hold a
// breaker's half-open probe slot for ever.
func (l *Loop) observeHolding(ctx context.Context, now time.Time, t *Ticket, ev event.Event) {
	done := false
	defer func() {
		if !done {
			l.unsend(now, t)
		}
	}()
	l.observe(ctx, ev)
	done = true
}

// unsend hands back what attempt t holds although it was counted as
// sent: it never left.
func (l *Loop) unsend(now time.Time, t *Ticket) {
	e := l.p.Env
	if t.held && e.Bulkhead != nil {
		e.Bulkhead.Release()
		t.held = false
	}
	if t.allowed && e.Breaker != nil {
		e.Breaker.DoneAt(now, t.breaker, 0, context.Canceled) // not the dependency's doing
		t.allowed = false
	}
	if t.admitted && e.Throttle != nil {
		cancelAdmit(e.Throttle, now)
		t.admitted = false
	}
	l.refund()
}

// Acquired reports, at now, the outcome of the bulkhead's Acquire that
// Before asked for: err nil means t holds a slot, and the other guards are
// asked as Before does. An error gives up: ReasonCancelled or ReasonDeadline when the
// context or MaxElapsed ended the wait, ReasonRejectedLocally otherwise.
//
// The observer hears of the wait as of a throttle's: a slot granted after
// a wait is an event.RetryScheduled with Source event.RateLimit and Reason
// "bulkhead", its Time when the wait began and Wait how long it lasted
// (reported when it ends: a bulkhead's wait is not known before); a wait
// that the bulkhead ends without a slot is an event.ThrottleRejected with
// its error and the wait, and one that the deadline ends (the context's,
// or MaxElapsed) an event.ThrottleRejected with reason deadline and the
// wait, before the give-up. A wait that the caller cancelled is reported by
// the give-up alone.
func (l *Loop) Acquired(ctx context.Context, now time.Time, t *Ticket, err error) Decision {
	var waited time.Duration
	from := l.queued
	if !from.IsZero() {
		waited = now.Sub(from)
		l.queued = time.Time{}
	}
	if err != nil {
		if ge, ok := l.stopped(ctx, now, err); ok {
			if ge.Reason == ReasonDeadline || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				l.release(now, t)
				l.refund()                                       // before the observer, which may panic
				if e := l.p.Env; e != nil && e.Observer != nil { // Key builds a string
					l.observe(ctx, event.Event{Kind: event.ThrottleRejected, Time: now, Attempt: l.attempts + 1,
						Err: err, Wait: waited, Reason: ReasonDeadline.Key()})
				}
			}
			return l.refuse(ctx, now, t, ge)
		}
		return l.bulkheadRefused(ctx, now, t, err, waited)
	}
	t.held = true
	if !from.IsZero() {
		if e := l.p.Env; e != nil && e.Observer != nil {
			l.observeQueued(ctx, now, t, event.Event{Kind: event.RetryScheduled, Time: from, Attempt: l.attempts + 1,
				Wait: waited, Source: event.RateLimit, Reason: bulkheadReason})
		}
	}
	return l.Before(ctx, now, t)
}

// bulkheadReason is the Reason of the event.RetryScheduled that reports a
// wait for a bulkhead's slot.
const bulkheadReason = "bulkhead"

// bulkheadRefused gives up at now because the bulkhead refused attempt t,
// with err, after a wait of waited (0: at once).
func (l *Loop) bulkheadRefused(ctx context.Context, now time.Time, t *Ticket, err error, waited time.Duration) Decision {
	l.refund() // before the observer, which may panic
	l.observe(ctx, event.Event{Kind: event.ThrottleRejected, Time: now, Attempt: l.attempts + 1, Err: err, Wait: waited})
	return l.refuse(ctx, now, t, Error{Reason: ReasonRejectedLocally, Cause: err})
}

// observeQueued reports ev about attempt t, which holds the bulkhead slot
// it waited for and has not been asked the other guards yet. If the
// observer panics, the slot goes back (and the budget's retry) before the
// panic goes on.
func (l *Loop) observeQueued(ctx context.Context, now time.Time, t *Ticket, ev event.Event) {
	done := false
	defer func() {
		if !done {
			l.release(now, t)
			l.refund()
		}
	}()
	l.observe(ctx, ev)
	done = true
}

// endedContext is a context that has ended (context.Canceled): a
// bulkhead's Acquire given it takes a free slot or refuses, and does not
// wait. It is a value, so that asking costs no allocation.
type endedContext struct{}

// endedDone is endedContext's Done channel, closed once and never
// written again.
var endedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (endedContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (endedContext) Done() <-chan struct{}       { return endedDone }
func (endedContext) Err() error                  { return context.Canceled }
func (endedContext) Value(any) any               { return nil }

// Interrupted reports that a wait the Loop asked for (Sleep) ended early at
// now with err, because the caller's context ended (ReasonCancelled) or
// MaxElapsed passed (ReasonDeadline). t is the attempt that was waiting for the
// throttle, or a new Ticket after a failure: what it holds is handed back.
func (l *Loop) Interrupted(ctx context.Context, now time.Time, t *Ticket, err error) Decision {
	ge, ok := l.stopped(ctx, now, err)
	if !ok { // the driver's wait failed although no context ended
		ge = Error{Reason: ReasonCancelled, Cause: err, Last: l.last}
	}
	return l.refuse(ctx, now, t, ge)
}

// stopped returns the give-up for a context that ended: the caller's
// (ReasonCancelled) or the call's own MaxElapsed bound (ReasonDeadline, with cause).
func (l *Loop) stopped(ctx context.Context, now time.Time, cause error) (Error, bool) {
	if cerr := ctx.Err(); cerr != nil {
		return Error{Reason: ReasonCancelled, Cause: withCause(ctx, cerr), Last: l.last}, true
	}
	if !l.elapsedAt.IsZero() && !now.Before(l.elapsedAt) {
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		return Error{Reason: ReasonDeadline, Limit: l.p.MaxElapsed, Cause: cause, Last: l.last}, true
	}
	return Error{}, false
}

// withCause returns cerr, ctx's error, joined with the cause ctx was
// cancelled with (context.WithCancelCause) when that is another error, so
// that the error matches both: a caller that says why it cancelled (a
// shutdown) finds its reason, as net/http returns it.
func withCause(ctx context.Context, cerr error) error {
	if c := context.Cause(ctx); c != nil && c != cerr {
		return fmt.Errorf("%w: %w", cerr, c)
	}
	return cerr
}

// refuse hands back what t holds before it was sent (the throttle's turn
// goes to the next caller) and gives up with ge.
func (l *Loop) refuse(ctx context.Context, now time.Time, t *Ticket, ge Error) Decision {
	l.release(now, t)
	l.refund()
	return l.giveUp(ctx, now, ge)
}

// refund gives the budget back the retry it granted, if the loop has not
// sent it (see BudgetCanceller).
func (l *Loop) refund() {
	c := l.charge
	if !c.on {
		return
	}
	l.charge.on = false
	if bc, ok := l.p.Env.Budget.(BudgetCanceller); ok {
		bc.CancelRetryAt(c.at, c.throttled, c.timeout)
	}
}

// After reports, at now, the outcome of attempt t: err is nil on success.
// ctx is the caller's context. It says Done, Sleep (the wait before the
// next attempt, from the backoff or the server's hint) or GiveUp.
//
// A server's hint that ends before the deadline is honoured, and its jitter
// (up to HintJitter of it) shrinks to fit the time left; a hint that itself
// ends at or after the deadline gives up (ReasonDeadline). A hint of 0
// ("Retry-After: 0", "come back now") is no hint: it has no jitter to
// spread the clients it reached over time, so the backoff applies.
func (l *Loop) After(ctx context.Context, now time.Time, t *Ticket, err error) Decision {
	var (
		class Class
		bad   Class // what Classify returned, if it was none of the classes
		cerr  error // why the call's time is over, if it is
		gone  bool  // it is: the failure is not the dependency's
	)
	if err != nil {
		if _, timedOut := err.(*timeoutError); !timedOut {
			class, bad = l.p.classifyChecked(err)
		}
		cerr = l.ended(ctx, now)
		gone = cerr != nil
		if class != ClassPermanent && !gone && l.p.Stepper != nil && !l.matches(err) {
			class = ClassPermanent
		}
	}
	if e := l.p.Env; e != nil {
		berr := err
		if gone {
			berr = cerr
		}
		l.report(ctx, now, t, e, err, berr, class, !gone)
	}
	if err == nil {
		return Decision{Verdict: Done}
	}
	l.last = err
	if ge, ok := l.stopped(ctx, now, nil); ok {
		return l.giveUp(ctx, now, ge)
	}
	if class == ClassPermanent {
		ge := Error{Reason: ReasonPermanent, Last: unmark(err)}
		if bad != 0 {
			ge.Cause = badClassError{bad}
		}
		return l.giveUp(ctx, now, ge)
	}
	if limit := l.p.Attempts(); limit > 0 && l.attempts >= limit {
		return l.giveUp(ctx, now, Error{Reason: ReasonExhausted})
	}
	if IsSingleAttempt(ctx) {
		return l.giveUp(ctx, now, Error{Reason: ReasonOuterLayer})
	}
	var (
		wait    time.Duration
		stepped bool
	)
	if l.p.Stepper != nil {
		if l.st == nil {
			l.st = l.p.Stepper()
		}
		w, ok := l.st.Step(l.attempts, err, class, l.draw())
		if !ok {
			return l.giveUp(ctx, now, Error{Reason: ReasonExhausted})
		}
		wait, stepped = max(w, 0), true // a negative wait is no wait
	}
	src := event.Backoff
	h, _ := HintOf(err)
	if l.hint > h {
		// Another attempt of the round, which failed while this one was in
		// flight, was told to come back later: the server's word stands.
		h = l.hint
	}
	throttled := class == ClassThrottled || l.throttled
	l.hint, l.throttled = 0, false
	if h > 0 {
		if max := l.p.maxRetryAfter(); h > max {
			return l.giveUp(ctx, now, Error{Reason: ReasonHintTooLong, Wait: h, Limit: max})
		}
		jitter := float64(h) * HintJitter
		left := time.Duration(-1) // no deadline
		if !l.deadline.IsZero() {
			left = l.deadline.Sub(now)
			if h >= left {
				return l.giveUp(ctx, now, Error{Reason: ReasonDeadline, Wait: h, Source: event.ServerHint, Limit: left})
			}
			jitter = min(jitter, float64(left-h))
		}
		j := time.Duration(jitter * l.draw())
		if j > math.MaxInt64-h {
			j = math.MaxInt64 - h // the longest wait: the sum must not wrap negative
		}
		wait = h + j
		if left >= 0 && wait >= left {
			wait = left - 1 // jitter never spends the hint's whole margin
		}
		src = event.ServerHint
	} else if !stepped {
		s := l.p.Backoff
		if throttled {
			s.Base = l.p.throttleBase()
		}
		wait = s.Delay(l.attempts, l.prev, l.draw())
		l.prev = wait
	}
	if !l.fits(now, wait) {
		return l.giveUp(ctx, now, Error{Reason: ReasonDeadline, Wait: wait, Source: src, Limit: l.deadline.Sub(now)})
	}
	if e := l.p.Env; e != nil {
		if b := e.Budget; b != nil {
			timeout := errors.Is(err, ErrAttemptTimeout)
			bclass := class
			if throttled {
				bclass = ClassThrottled // the round was told it overloads the server
			}
			if !allowRetry(b, now, bclass, timeout) {
				if e.Observer != nil { // Key builds a string
					l.observe(ctx, event.Event{Kind: event.BudgetRefused, Time: now, Attempt: l.attempts, Err: err,
						Reason: ReasonBudgetExhausted.Key()})
				}
				return l.giveUp(ctx, now, Error{Reason: ReasonBudgetExhausted})
			}
			_, byClass := b.(ClassBudget) // told the class, it is given back the same
			l.charge = charge{at: now, on: true, throttled: byClass && throttled, timeout: timeout}
		}
	}
	if l.p.OnRetry != nil || l.p.Env != nil && l.p.Env.Observer != nil {
		l.announce(ctx, now, Wait{Attempt: l.attempts, Err: err, Class: class, Delay: wait, Source: src})
	}
	return Decision{Verdict: Sleep, Wait: wait, Source: src}
}

// announce tells Policy.OnRetry and the observer of the retry w. If one of
// them panics, the retry will not be sent: the budget gets it back before
// the panic goes on.
func (l *Loop) announce(ctx context.Context, now time.Time, w Wait) {
	done := false
	defer func() {
		if !done {
			l.refund()
		}
	}()
	if l.p.OnRetry != nil {
		l.p.OnRetry(w)
	}
	l.observe(ctx, event.Event{Kind: event.RetryScheduled, Time: now, Attempt: w.Attempt, Err: w.Err, Wait: w.Delay, Source: w.Source})
	done = true
}

// Abandon reports, at now, the outcome of attempt t on which the call
// decides nothing: it panicked (err says so), or it failed while a hedging
// driver waits for another attempt of the same round. The guards hear of
// it as After would tell them (a failure after the caller's context ended
// or MaxElapsed passed is not the dependency's). A server hint it carries
// is kept for the round: After, told of the round's last failure, waits at
// least that long (or gives up, if the hint is too long or passes the
// deadline); so is a throttling answer (the backoff then starts from
// Policy.ThrottleBase). An attempt that the driver cancelled because another one won
// is reported with Cancelled instead.
func (l *Loop) Abandon(ctx context.Context, now time.Time, t *Ticket, err error) {
	if err != nil && l.ended(ctx, now) == nil {
		// For the round's last attempt, whose failure decides: the
		// server's word (its hint, its overload) stands.
		if h, ok := HintOf(err); ok && h > l.hint {
			l.hint = h
		}
		if l.p.attemptClass(err) == ClassThrottled {
			l.throttled = true
		}
	}
	if e := l.p.Env; e != nil {
		var class Class
		berr, gone := err, false
		if err != nil {
			class = l.p.attemptClass(err)
			if cerr := l.ended(ctx, now); cerr != nil {
				berr, gone = cerr, true
			}
		}
		l.report(ctx, now, t, e, err, berr, class, !gone)
	}
}

// report hands attempt t's outcome to the guards and the observer: the
// breaker gets berr; the throttle and the budget hear of it when answered
// says the dependency answered (they learn from its answers).
func (l *Loop) report(ctx context.Context, now time.Time, t *Ticket, e *Env, err, berr error, class Class, answered bool) {
	if t.held && e.Bulkhead != nil {
		e.Bulkhead.Release()
		t.held = false
	}
	if b := e.Breaker; b != nil && t.allowed {
		b.DoneAt(now, t.breaker, now.Sub(t.sent), berr)
		t.allowed = false
	}
	if answered {
		if th := e.Throttle; th != nil {
			th.RecordAt(now, err != nil && class == ClassThrottled)
		}
		// A permanent failure is not the dependency failing (a 400 is
		// its answer to a request it will never take): as gRPC counts
		// only the failures it would retry, the budget does not hear of
		// it, so that malformed requests cannot spend the retries of
		// transient failures.
		if b := e.Budget; b != nil && (err == nil || class != ClassPermanent) {
			b.RecordAt(now, t.n == 1, err == nil)
		}
	}
	if o := e.Observer; o != nil {
		o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Time: now, Component: "retry", Attempt: t.n,
			Outcome: outcome(err, class, answered), Err: err, Duration: now.Sub(t.sent)})
	}
}

// ended returns, for an attempt that failed at now, why the call's time
// was over: the caller's context's error, or context.DeadlineExceeded once
// MaxElapsed has passed (it bounds the attempts' context as the caller's
// deadline does); nil if it was not. Such a failure is not the
// dependency's.
func (l *Loop) ended(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !l.elapsedAt.IsZero() && !now.Before(l.elapsedAt) {
		return context.DeadlineExceeded
	}
	return nil
}

// fits reports whether a wait of d from now ends before the deadline: a
// wait that ends at the deadline would leave the next attempt no time, and
// is not started.
func (l *Loop) fits(now time.Time, d time.Duration) bool {
	return l.deadline.IsZero() || now.Add(d).Before(l.deadline)
}

// giveUp ends the call with ge.
func (l *Loop) giveUp(ctx context.Context, now time.Time, ge Error) Decision {
	ge.Attempts = l.attempts
	ge.Elapsed = now.Sub(l.start)
	if ge.Last == nil && ge.Reason != ReasonCancelled {
		ge.Last = l.last
	}
	l.gaveUp = ge
	if e := l.p.Env; e != nil && e.Observer != nil {
		l.observe(ctx, event.Event{Kind: event.GaveUp, Time: now, Attempt: ge.Attempts, Err: l.Err(),
			Duration: ge.Elapsed, Reason: ge.Reason.Key()})
	}
	return Decision{Verdict: GiveUp, Reason: ge.Reason}
}

// matches reports whether the call's Stepper, made now if it is not yet,
// retries err at all: false if it is a StepMatcher that does not match err.
func (l *Loop) matches(err error) bool {
	if l.st == nil {
		l.st = l.p.Stepper()
	}
	m, ok := l.st.(StepMatcher)
	return !ok || m.Matches(err)
}

func (l *Loop) observe(ctx context.Context, ev event.Event) {
	if e := l.p.Env; e != nil && e.Observer != nil {
		ev.Component = "retry"
		e.Observer.Observe(ctx, ev)
	}
}

func (l *Loop) draw() float64 { return l.p.Env.draw() }

// timesAttempts reports whether a guard or the observer needs an
// attempt's end instant even when it succeeds.
func (l *Loop) timesAttempts() bool {
	e := l.p.Env
	return e != nil && (e.Breaker != nil || e.Observer != nil)
}

// guarded reports whether Before needs the clock.
func (l *Loop) guarded() bool {
	return l.p.Env.guarded()
}
