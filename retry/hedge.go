package retry

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// Hedger decides when a call is hedged: when its attempt has not answered
// after a delay, another is sent while the first still runs, and the first
// success wins (the hedged request of Dean and Barroso, "The Tail at
// Scale", 2013). Package hedge implements it (hedge.Hedger: a fixed or
// adaptive delay, a budget and a brownout stop); the loop asks it through
// this interface. Its methods take now and must be safe for concurrent use:
// one Hedger serves every call to a dependency.
type Hedger interface {
	// PlanAt is asked when a call's first attempt is sent, at now: the
	// wait before its first hedge (the same wait separates its later
	// hedges), and whether the call is hedged at all. It is not asked for
	// a call that sends no attempt (its context had ended, or a guard
	// refused it: the dependency saw nothing of it), nor for one that may
	// make one attempt only (an attempt limit of 1, or SingleAttempt: a
	// hedge is a second attempt): those calls are not hedged, and the
	// Hedger hears nothing of them, so that its budget is a share of the
	// requests sent (TestHedgeCallRefusedLocallyNotPlanned).
	PlanAt(now time.Time) (delay time.Duration, ok bool)
	// AllowAt is asked before each hedge: nil, or an error saying why the
	// hedge is not sent (its event's reason is "hedge_" and the error's
	// text after "hedge: " up to the first comma, in snake case, e.g.
	// hedge_budget_exhausted, when that text is at most 32 bytes of
	// lowercase letters, spaces, hyphens and underscores; hedge_refused
	// otherwise, so that reasons stay few). It counts the hedges it allows.
	AllowAt(now time.Time) error
	// ObserveAt is told the latency of a call's first attempt: its whole
	// latency, or how long it had run when another attempt won and it was
	// cancelled, or when the call ended without it; slow says it ran past
	// the delay PlanAt gave. A first attempt that the call's end (its
	// context, or a give-up) cut short before the delay is not told: its
	// short run says nothing of the dependency's latency.
	ObserveAt(now time.Time, latency time.Duration, slow bool)
	// MaxHedges is the most hedges of one call; 0 or less: no call is
	// hedged, and PlanAt, AllowAt and ObserveAt are never asked.
	MaxHedges() int
}

// Hedge is Do with hedges, when p.Env has a Hedger: see HedgeValue. fn is
// called concurrently with itself and must be safe for that.
func Hedge(ctx context.Context, p Policy, fn func(context.Context) error) error {
	_, err := HedgeValue(ctx, p, unit(fn), nil)
	return err
}

// HedgeValue is DoValue with hedges, and with discard called on the value of every attempt
// whose result is not returned: a losing attempt's, cancelled when another
// succeeded, or a failed attempt's while another of the same call is still
// in flight; and, when the call panics (its observer or a guard did) while
// it holds values, on those too. Values that hold resources (an HTTP
// response and its body) are thus released. discard may be nil. It runs on the caller's goroutine or,
// for attempts still running when the call returns, on a goroutine the call
// leaves behind until they have returned; it must be safe for that.
//
// Hedging is on when p.Env has a Hedger; fn is then called concurrently
// with itself and must be safe for that. The loop works in rounds: a
// round starts with an attempt (the first, or a retry after a wait) and,
// each time the Hedger's delay passes without an answer, sends a hedge,
// up to Hedger.MaxHedges() hedges per call; an answer that has come when a
// hedge falls due is taken before it, and no hedge is sent once ctx has
// ended or its deadline (or MaxElapsed) is reached. A hedge reported
// started (event.AttemptStart, event.Hedge) has begun: its fn is called
// before the driver reads another answer, so that it cannot be cancelled
// before it starts. A hedge is an attempt: it
// counts towards MaxAttempts, and it goes through what a retry goes
// through (see Loop.Hedge). The first attempt that succeeds ends the call
// and the others are cancelled (their contexts end). An attempt that fails
// while another of its round is in flight is reported to the guards and
// discarded, and the round goes on, unless its error is final (an
// attempt that failed with a server hint, or an overload answer, ends the
// round's hedges: the server asked for fewer requests); the last
// attempt of a round to fail decides as in Do (a wait and a retry, or a
// give-up).
//
// An attempt that panics while the call is on makes the call panic with
// its value, on the caller's goroutine, once the guards and the observer
// have heard of its end (a failure) and the other attempts are cancelled.
// An attempt that panics once the call has ended (it returned another
// attempt's answer, or panicked with another's panic) is reported to the
// guards and the observer as a failure whose error says it panicked, and
// with what: a panic on the goroutine that collects the losers, which no
// caller can recover, would end the process (TestHedgedLoserPanicReported).
// An attempt that calls runtime.Goexit (t.FailNow in a test's fn) is not
// taken for an answer: while the call is on, the caller's goroutine exits
// as it would under Do, once the guards and the observer have heard of it
// and the other attempts are cancelled; after, it is reported as a failure
// (TestHedgedAttemptGoexit).
//
// Without a Hedger, HedgeValue is DoValue and discard is not called; so it
// is for a call that may make one attempt only, which no hedge may follow:
// under SingleAttempt (an outer layer retries, and the promise of one
// attempt at this layer holds for hedges too, which would multiply the
// load as retries do) or with MaxAttempts 1; and for every call under a
// Hedger whose MaxHedges is 0 or less. The Hedger then neither plans the
// call (it is not among the calls its budget counts) nor observes its
// attempt, and no event.HedgeRefused is reported for it
// (TestHedgeSingleAttemptNotPlanned).
func HedgeValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error), discard func(T)) (T, error) {
	if !hedgeable(ctx, &p) {
		return DoValue(ctx, p, fn)
	}
	if err := p.Validate(); err != nil {
		var zero T
		return zero, err
	}
	q := p // escapes to the attempts' goroutines; p, on DoValue's path, does not
	return hedged(ctx, &q, fn, discard)
}

// hedgeable reports whether a call under ctx and p may send a hedge: p.Env
// has a Hedger that sends some, and the call may make a second attempt (its
// attempt limit is not 1, and no outer layer retries it: SingleAttempt).
// A call that may not is run as DoValue runs it, and the Hedger hears
// nothing of it: it neither counts it among the calls of its budget nor
// observes its attempt, and no hedge is reported refused.
func hedgeable(ctx context.Context, p *Policy) bool {
	return p.Env != nil && p.Env.Hedger != nil && p.Attempts() != 1 && !IsSingleAttempt(ctx) &&
		p.Env.Hedger.MaxHedges() > 0
}

// HedgeValueWith is HedgeValue for a prepared Retrier.
func HedgeValueWith[T any](ctx context.Context, r *Retrier, fn func(context.Context) (T, error), discard func(T)) (T, error) {
	if !hedgeable(ctx, &r.p) {
		return DoValueWith(ctx, r, fn)
	}
	return hedged(ctx, &r.p, fn, discard)
}

// Hedge asks, at now, whether a hedge of the call may be sent as attempt t
// while its other attempts are in flight. Once the call's time is up (its
// context has ended, or its deadline or MaxElapsed is reached at now,
// though the context's timer may not have fired yet), it says GiveUp
// (ReasonCancelled or ReasonDeadline) for this hedge without asking or
// reporting anything: the call ends with the attempts in flight. Otherwise
// a hedge is asked what a retry is asked, in this order: the attempt limit (ReasonExhausted), an outer layer that
// retries (ReasonOuterLayer), the guards as Before asks them, except that a
// hedge never waits: the bulkhead is asked with a context that has ended, so
// that only a free slot admits it (ReasonRejectedLocally), and a throttle that
// asks for a wait refuses it (ReasonRejectedLocally), as does a breaker that
// refuses it (ReasonBreakerOpen); then the retry budget
// (ReasonBudgetExhausted) and the Hedger (its budget and brownout:
// ReasonRejectedLocally). The two budgets come last because they count
// what they grant: a hedge that a guard refuses costs them nothing, and the
// Hedger, which cannot be given a hedge back, is asked last, so that it
// counts only hedges that go. What the others gave a hedge that is not sent
// goes back (the bulkhead's slot, the throttle's turn, the breaker's ticket
// as context.Canceled, which package breaker ignores, the retry budget's
// grant to a BudgetCanceller), also when a guard, a budget or a hook
// panics.
//
// It says Send, with t the attempt to send (reported to the observer as an
// attempt start and an event.Hedge), or GiveUp for this hedge only, with
// Decision.Reason saying why (reported as an event.HedgeRefused): the call
// goes on with the attempts in flight, and Err stays nil.
func (l *Loop) Hedge(ctx context.Context, now time.Time, t *Ticket) (d Decision) {
	e := l.p.Env
	if e != nil {
		defer func() {
			if d.Verdict == 0 && t.n == 0 {
				// A guard, a budget or a hook panicked: the hedge is not
				// sent, and what it holds goes back before the panic goes
				// on, as in Before.
				l.unsend(now, t)
			}
		}()
	}
	no := func(r Reason, why string, cause error) Decision {
		if e != nil {
			l.unsend(now, t) // before the observer, which may panic
		}
		l.observe(ctx, event.Event{Kind: event.HedgeRefused, Time: now, Attempt: l.attempts + 1, Err: cause, Reason: why})
		return Decision{Verdict: GiveUp, Reason: r}
	}
	if r, over := l.over(ctx, now); over {
		// The call's time is up: its context ended, or it ends now (its
		// deadline, or MaxElapsed, whose timer may not have fired yet).
		// Nothing is asked, sent or reported, as when the driver sees the
		// context's end before the hedge falls due.
		return Decision{Verdict: GiveUp, Reason: r}
	}
	if limit := l.p.Attempts(); limit > 0 && l.attempts >= limit {
		return no(ReasonExhausted, ReasonExhausted.Key(), nil)
	}
	if IsSingleAttempt(ctx) {
		return no(ReasonOuterLayer, ReasonOuterLayer.Key(), nil)
	}
	if e == nil {
		return l.hedgeSent(ctx, now, t, nil)
	}
	if b := e.Bulkhead; b != nil {
		if err := b.Acquire(endedContext{}); err != nil {
			return no(ReasonRejectedLocally, ReasonRejectedLocally.Key(), err)
		}
		t.held = true
	}
	if th := e.Throttle; th != nil {
		w, err := th.AdmitAt(now)
		if err != nil {
			return no(ReasonRejectedLocally, ReasonRejectedLocally.Key(), err)
		}
		t.admitted = true
		if w > 0 {
			return no(ReasonRejectedLocally, ReasonRejectedLocally.Key(), nil)
		}
	}
	if b := e.Breaker; b != nil {
		tk, err := b.AllowAt(now, true)
		if err != nil {
			return no(ReasonBreakerOpen, ReasonBreakerOpen.Key(), err)
		}
		t.breaker, t.allowed = tk, true
	}
	if b := e.Budget; b != nil {
		if !b.AllowRetryAt(now, false) {
			return no(ReasonBudgetExhausted, ReasonBudgetExhausted.Key(), nil)
		}
		// Given back if the Hedger refuses, or an observer panics before
		// the hedge goes.
		l.charge = charge{at: now, on: true}
	}
	if h := e.Hedger; h != nil {
		if err := h.AllowAt(now); err != nil {
			return no(ReasonRejectedLocally, hedgeReason(err), err)
		}
	}
	return l.hedgeSent(ctx, now, t, e)
}

// over reports whether the call's time is up at now, and why: the caller's
// context has ended, or its deadline (or MaxElapsed) is reached, whether
// or not the context's timer has fired yet.
func (l *Loop) over(ctx context.Context, now time.Time) (Reason, bool) {
	if ge, ok := l.stopped(ctx, now, nil); ok {
		return ge.Reason, true
	}
	if !l.deadline.IsZero() && !now.Before(l.deadline) {
		return ReasonCancelled, true // the caller's deadline: MaxElapsed is stopped's
	}
	return 0, false
}

func (l *Loop) hedgeSent(ctx context.Context, now time.Time, t *Ticket, e *Env) Decision {
	d := l.send(ctx, now, t, e)
	if e != nil && e.Observer != nil {
		l.observeHolding(ctx, now, t, event.Event{Kind: event.Hedge, Time: now, Attempt: t.n, Wait: now.Sub(l.start)})
	}
	l.charge.on = false // the hedge the budget paid for has gone
	return d
}

// hedgeReason turns a Hedger's refusal into an event reason: "hedge: budget
// exhausted" gives hedge_budget_exhausted. Reasons are metric attributes,
// so that a text that is not a short phrase of lowercase words (one with
// digits, capitals or other signs, or longer than maxHedgeReason bytes:
// "tenant 42 over quota", an ID, a path) gives hedge_refused rather than a
// new series per value.
func hedgeReason(err error) string {
	msg := err.Error()
	if i := len("hedge: "); len(msg) > i && msg[:i] == "hedge: " {
		msg = msg[i:]
	}
	for i := 0; i < len(msg); i++ {
		if msg[i] == ',' {
			msg = msg[:i]
			break
		}
	}
	if msg == "" || len(msg) > maxHedgeReason {
		return hedgeRefused
	}
	b := []byte("hedge_" + msg)
	for i := len("hedge_"); i < len(b); i++ {
		switch c := b[i]; {
		case c == ' ' || c == '-':
			b[i] = '_'
		case c == '_' || c >= 'a' && c <= 'z':
		default:
			return hedgeRefused
		}
	}
	return string(b)
}

// hedgeRefused is the reason of a Hedger's refusal whose text does not
// make one; maxHedgeReason bounds the text that does.
const (
	hedgeRefused   = "hedge_refused"
	maxHedgeReason = 32
)

// release hands back what attempt t holds before it was sent.
func (l *Loop) release(now time.Time, t *Ticket) {
	e := l.p.Env
	if e == nil || t.n != 0 {
		return
	}
	if t.admitted && e.Throttle != nil {
		cancelAdmit(e.Throttle, now)
		t.admitted = false
	}
	if t.held && e.Bulkhead != nil {
		e.Bulkhead.Release()
		t.held = false
	}
}

// cancelAdmit hands back the turn of an attempt that t admitted but the
// loop did not send, if t keeps turns (see ThrottleCanceller).
func cancelAdmit(t Throttle, now time.Time) {
	if c, ok := t.(ThrottleCanceller); ok {
		c.CancelAt(now)
	}
}

// Cancelled reports, at now, attempt t that a hedging driver cancelled
// because another attempt of the call won, before it answered (one that
// had answered is reported with Lost): its bulkhead slot is released,
// the breaker is told context.Canceled (which package breaker ignores: the
// dependency did nothing wrong), the budget and the throttle are told
// nothing (the attempt neither succeeded nor was refused), and the observer
// sees its end with outcome Cancelled.
func (l *Loop) Cancelled(ctx context.Context, now time.Time, t *Ticket) {
	e := l.p.Env
	if e == nil {
		return
	}
	if t.held && e.Bulkhead != nil {
		e.Bulkhead.Release()
		t.held = false
	}
	if b := e.Breaker; b != nil && t.allowed {
		b.DoneAt(now, t.breaker, now.Sub(t.sent), context.Canceled)
		t.allowed = false
	}
	if o := e.Observer; o != nil {
		o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Time: now, Component: "retry", Attempt: t.n,
			Outcome: event.Cancelled, Err: context.Canceled, Duration: now.Sub(t.sent)})
	}
}

// final reports whether err, an attempt's error while the call's context
// has not ended, ends the call as After decides it (ReasonPermanent): the
// classifier says ClassPermanent (it is not asked about an attempt that
// hit AttemptTimeout, which is retryable whatever it says), or the
// policy's StepMatcher does not match err.
func (l *Loop) final(err error) bool {
	if l.p.attemptClass(err) == ClassPermanent {
		return true
	}
	return l.p.Stepper != nil && !l.matches(err)
}

// Lost reports, at now, attempt t of a hedged call that answered (err nil
// or not) before the driver cancelled it, but after another attempt's
// answer had ended the call: nothing is decided, and the guards and the
// observer hear of it as After tells them of an answer (the breaker its
// error, the throttle whether it was an overload answer, the budget its
// success or failure). It may be called from another goroutine than the
// driver's once the call has returned: it reads l and writes only t.
func (l *Loop) Lost(ctx context.Context, now time.Time, t *Ticket, err error) {
	if e := l.p.Env; e != nil {
		var class Class
		if err != nil {
			class = l.p.attemptClass(err)
		}
		l.report(ctx, now, t, e, err, err, class, true)
	}
}

// flight is one attempt of a hedged call in flight.
type flight struct {
	t      Ticket
	cancel context.CancelFunc
	done   bool
}

// outcomeOf is what an attempt of a hedged call returned.
type outcomeOf[T any] struct {
	k     int // its flight
	v     T
	err   error
	panic any // what it panicked with, if it did
	// goexit says fn called runtime.Goexit (t.FailNow in a test does): it
	// never returned.
	goexit bool
	// answered says the attempt returned before its context ended (the
	// driver's cancellation, the caller's, MaxElapsed), at end: what it
	// returned is the dependency's answer, even if another attempt's
	// ended the call first.
	answered bool
	end      time.Time
}

// maxBuffered bounds the hedges whose outcomes a hedged call's buffer
// holds: package hedge allows 10 per call.
const maxBuffered = 16

// errPanicked is what the error of an attempt that panicked matches, for
// the guards and the observer.
var errPanicked = errors.New("retry: attempt panicked")

// errGoexit is the error of an attempt that called runtime.Goexit, for the
// guards and the observer.
var errGoexit = errors.New("retry: attempt called runtime.Goexit")

// failure returns the error of an attempt that panicked or called
// runtime.Goexit.
func (o *outcomeOf[T]) failure() error {
	if o.goexit {
		return errGoexit
	}
	return fmt.Errorf("%w: %v", errPanicked, o.panic)
}

// hedged drives a Loop with several attempts in flight; see HedgeValue.
func hedged[T any](caller context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T)) (T, error) {
	var zero T
	e := p.Env
	h := e.Hedger
	l := new(Loop) // shared with the goroutine that collects the losers
	now := time.Now()
	l.Start(caller, p, now)
	ctx := caller
	if p.MaxElapsed > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(caller, l.elapsedAt)
		defer cancel()
	}
	// The call is planned when its first attempt goes: one refused before
	// (its context had ended, a guard said no) sent nothing, and is not
	// one of the calls that the Hedger's budget counts, which is a share
	// of the requests sent.
	var (
		delay   time.Duration
		on      bool
		planned bool
	)
	maxHedges := max(h.MaxHedges(), 0)
	// The attempts in flight at once, which the buffer holds so that none
	// waits to hand in its outcome: at most the first and its hedges, and
	// at most the attempt limit. A Hedger's MaxHedges may say "no limit"
	// (the largest int); beyond maxBuffered, attempts wait for the driver
	// (or the goroutine that collects the losers) to read theirs, which it
	// always does.
	buffered := maxHedges
	if limit := p.Attempts(); limit > 0 {
		buffered = min(buffered, limit-1)
	}
	results := make(chan outcomeOf[T], min(buffered, maxBuffered)+1)
	var (
		flights  []*flight // every attempt of the call; flights[0] is its first
		inFlight int
		hedges   int
		roundK   int  // the flight of the round's first attempt
		observed bool // the first attempt's latency went to the Hedger
		last     T    // the value of the last round's failed attempt
		held     bool // last is to be returned or discarded
		pend     T    // the value of the outcome the driver is handling
		pending  bool // pend is neither returned nor discarded yet
		timer    *time.Timer
		timerC   <-chan time.Time
	)
	// begun is where a hedge's goroutine says that it calls fn.
	var begun chan struct{}
	// launch sends attempt f on a goroutine of its own. A hedge (hedge
	// true) has been reported started: the driver waits until its
	// goroutine runs and calls fn, so that it cannot cancel the hedge
	// first (an answer that came as the hedge went would end the call,
	// and fn would be called on a context already cancelled: no attempt,
	// although one was reported).
	launch := func(f *flight, hedge bool) {
		actx, cancel := context.WithCancel(ctx)
		f.cancel = cancel
		k := len(flights)
		flights = append(flights, f)
		inFlight++
		var b chan struct{}
		if hedge {
			if begun == nil {
				begun = make(chan struct{})
			}
			b = begun
		}
		go func() {
			o := outcomeOf[T]{k: k}
			returned := false
			defer func() {
				if rec := recover(); rec != nil {
					o.panic = rec
				} else if !returned {
					o.goexit = true
				}
				results <- o
			}()
			if b != nil {
				b <- struct{}{}
			}
			o.v, o.err = hedgeAttempt(ctx, actx, p.AttemptTimeout, fn)
			returned = true
			if actx.Err() == nil {
				o.answered, o.end = true, time.Now()
			}
		}()
		if b != nil {
			<-b
		}
	}
	arm := func() {
		timerC = nil
		if !on || hedges >= maxHedges {
			return
		}
		if timer == nil {
			timer = time.NewTimer(delay)
		} else {
			timer.Reset(delay)
		}
		timerC = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// leave cancels the attempts still in flight and hands them to a
	// goroutine that waits for them, discards their values and reports
	// them cancelled. The driver no longer uses l once it has called it.
	leave := func() {
		if inFlight == 0 {
			return
		}
		for _, f := range flights {
			if !f.done {
				f.cancel()
			}
		}
		n := inFlight
		inFlight = 0 // they are the goroutine's
		go func() {
			for range n {
				o := <-results
				f := flights[o.k]
				if o.panic != nil || o.goexit {
					// A bug in fn, but a panic here, where no caller can
					// recover it, would end the process that the
					// caller's recover protects (net/http's, for a
					// handler): for a bug the call already panicked with
					// (the same input makes every attempt panic), or one
					// that only the cancellation of a loser reaches. The
					// observer and the guards hear of it as a failure
					// that says it panicked, and with what (or that it
					// called runtime.Goexit: this goroutine is not the
					// caller's to end).
					l.Lost(caller, time.Now(), &f.t, o.failure())
					continue
				}
				if discard != nil {
					discard(o.v)
				}
				if o.answered {
					// It answered before it was cancelled, after the
					// answer that ended the call: the guards hear of it.
					l.Lost(caller, o.end, &f.t, o.err)
				} else {
					l.Cancelled(caller, time.Now(), &f.t)
				}
			}
		}()
	}
	defer func() {
		if discard != nil && (pending || held) {
			// The driver is panicking (the observer did, or a guard, as
			// it handled an outcome): the values in hand will not be
			// returned. Every return clears both flags first.
			if pending {
				pending = false
				discard(pend)
			}
			if held {
				held = false
				discard(last)
			}
		}
	}()
	defer func() {
		if inFlight > 0 {
			// The driver is panicking (the observer or a guard did, on its
			// goroutine): the attempts in flight are cancelled and hand back
			// what they hold when they return, as when the call ends.
			leave()
		}
	}()
	// observeFirst tells the Hedger, once, the latency of the first
	// attempt at end: its whole latency, or how long it had run when the
	// call ended without it. cut says the call's end (its context, or a
	// give-up) cut it short: its latency is then told only if it ran past
	// the delay (a lower bound, and a slow attempt for the brownout
	// stop); below the delay it says nothing of the dependency's latency
	// (the attempt may never have left).
	observeFirst := func(end time.Time, cut bool) {
		if observed {
			return
		}
		observed = true
		lat := end.Sub(flights[0].t.sent)
		slow := delay > 0 && lat > delay
		if slow || !cut {
			h.ObserveAt(end, lat, slow)
		}
	}
	// round asks the loop, from decision d, until it says send or stop.
	round := func(d Decision, t *Ticket) Decision {
		for {
			switch d.Verdict {
			case Acquire:
				err := e.Bulkhead.Acquire(ctx)
				d = l.Acquired(caller, time.Now(), t, err)
			case Sleep:
				if err := e.sleep(ctx, d.Wait); err != nil {
					d = l.Interrupted(caller, time.Now(), t, err)
					continue
				}
				d = l.Before(caller, time.Now(), t)
			default:
				return d
			}
		}
	}
	f := new(flight)
	d := round(l.Before(caller, now, &f.t), &f.t)
	for d.Verdict == Send {
		if held {
			held = false
			if discard != nil {
				discard(last) // a new attempt is sent: the previous one's value is not returned
			}
		}
		last = zero
		roundK = len(flights)
		if !planned {
			planned = true
			delay, on = h.PlanAt(f.t.sent)
		}
		launch(f, false)
		arm()
		d = Decision{}
		for d.Verdict == 0 {
			var o outcomeOf[T]
			select {
			case o = <-results:
			case <-timerC:
				if ctx.Err() != nil {
					timerC = nil // the call has ended: its attempts are returning
					continue
				}
				var answered bool
				select {
				case o = <-results:
					// An answer came as the hedge fell due: it goes first,
					// and the hedge stays due if the call goes on.
					answered = true
					timer.Reset(0)
				default:
				}
				if answered {
					break
				}
				hf := new(flight)
				if l.Hedge(caller, time.Now(), &hf.t).Verdict != Send {
					timerC = nil // no more hedges for this call
					continue
				}
				hedges++
				launch(hf, true)
				arm()
				continue
			}
			cur := flights[o.k]
			cur.done = true
			cur.cancel()
			inFlight--
			end := time.Now()
			if o.panic != nil || o.goexit {
				l.Abandon(caller, end, &cur.t, o.failure())
				leave()
				if o.goexit {
					// As under Do, where fn runs on the caller's
					// goroutine: the caller's goroutine ends, its
					// deferred calls run (the testing package's
					// FailNow relies on it).
					runtime.Goexit()
				}
				panic(o.panic)
			}
			pend, pending = o.v, true
			if o.k == 0 {
				observeFirst(end, o.err != nil && ctx.Err() != nil)
			}
			if o.err == nil {
				if !observed { // a hedge beat the first attempt, cancelled now
					observed = true
					h.ObserveAt(end, end.Sub(flights[0].t.sent), true)
				}
				l.After(caller, end, &cur.t, nil)
				if o.k != roundK {
					l.observe(caller, event.Event{Kind: event.HedgeWon, Time: end, Attempt: cur.t.n, Duration: end.Sub(l.start)})
				}
				leave()
				pending = false
				return o.v, nil
			}
			if inFlight > 0 && caller.Err() == nil && ctx.Err() == nil && !l.final(o.err) {
				// Another attempt of the round may still succeed.
				l.Abandon(caller, end, &cur.t, o.err)
				if h, _ := HintOf(o.err); h > 0 || p.attemptClass(o.err) == ClassThrottled {
					// The server said to come back later, or that it is
					// overloaded: no more copies in this round, which goes
					// on with the attempts in flight.
					timerC = nil
				}
				pending = false
				if discard != nil {
					discard(o.v)
				}
				continue
			}
			timerC = nil
			d = l.After(caller, end, &cur.t, o.err)
			if d.Verdict != Sleep {
				if !flights[0].done { // the call ends before its first attempt
					observeFirst(end, true)
				}
				leave()
				pending = false
				return o.v, l.Err()
			}
			// Retry: inFlight is 0 here (a final error or an ended context
			// give up), so the next round starts afresh.
			last, held, pending = o.v, true, false
			f = new(flight)
			d = round(d, &f.t)
		}
	}
	leave()
	held = false
	return last, l.Err()
}

// hedgeAttempt calls fn for one attempt of a hedged call, on actx (a
// child of ctx that the driver cancels when another attempt wins), under
// the attempt timeout d: an error after d passed (and not ctx's end) is a
// *timeoutError, as in Do.
func hedgeAttempt[T any](ctx, actx context.Context, d time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		return fn(actx)
	}
	tctx, cancel := context.WithTimeout(actx, d)
	defer cancel()
	v, err := fn(tctx)
	if err != nil && actx.Err() == nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = &timeoutError{d: d, err: err}
	}
	return v, err
}
