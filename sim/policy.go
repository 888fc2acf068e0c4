package sim

import (
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

// Policy is a retry policy as simulated clients apply it: the same fields
// as retry.Policy where they matter on virtual time, and the guards
// (budget, breaker, throttle) built per client, or once per run when they
// are Shared. The simulated loop asks the guards in the order package retry
// does (throttle, then breaker before each attempt; breaker, throttle, then
// budget after it; the budget again before each retry) and numbers retries
// as it does (retry 1 waits Backoff.Delay(1, ...)), so a Policy here behaves
// as the same settings do in production.
//
// The zero Policy is yaoki's default loop: 3 attempts, exponential backoff
// ×2 with full jitter from 50 ms, capped at 20 s, no guards.
type Policy struct {
	// Name labels the policy in results, tables and plots.
	Name string
	// Description says in words what the policy does, for reports.
	Description string
	// MaxAttempts counts the first attempt: 0 means
	// retry.DefaultMaxAttempts (3), retry.Unlimited (-1) no limit.
	MaxAttempts int
	// Backoff is the wait before each retry. Zero: yaoki's default.
	Backoff backoff.Schedule
	// Immediate retries as soon as an attempt has failed, without any
	// wait (the "no backoff" clients of the published simulations);
	// Backoff is then ignored.
	Immediate bool
	// ThrottleBase replaces Backoff.Base after an overload answer, as in
	// retry.Policy. Zero: retry.DefaultThrottleBase (1 s).
	ThrottleBase time.Duration
	// Guards builds the guards of one client (or of all, when Shared).
	// rnd is the run's random source for guards, draws in [0, 1): give it
	// to every guard that draws (breaker.Settings.Rand,
	// throttle.AdaptiveConfig.Rand), so that a run stays a pure function
	// of its seed; it is not safe for concurrent use, which a run does not
	// need. Nil: no guards.
	Guards func(rnd func() float64) Guards
	// Shared makes the clients of a run share one set of guards (built
	// once per run), as if their state lived in a fleet-wide store;
	// otherwise each client has its own, as each process has in
	// production.
	Shared bool
	// Classify, as in retry.Policy, says whether a failed attempt's error
	// (ErrFailed, ErrOverloaded, ErrTimeout, ErrConflict) is retried; a
	// Final class ends the request (retry.PermanentError). Nil: every
	// failure is retried, overload answers classed Throttled.
	Classify func(err error) retry.Class
	// Stepper, as in retry.Policy, makes for each request, at its first
	// retryable failure, the Stepper that decides its waits instead of
	// Backoff (package policy's documents use it). Nil: Backoff decides.
	Stepper func() retry.Stepper
}

// Guards are the objects a loop asks for permission; any may be nil. They
// are package retry's interfaces, so the real budget, breaker and throttle
// types plug in, and so do the published simulations' anchors (RetryBucket,
// RetryBreaker).
type Guards struct {
	Budget   retry.Budget
	Breaker  retry.Breaker
	Throttle retry.Throttle
}

// Errors that simulated attempts fail with, as the guards see them (a
// breaker's DoneAt gets them).
var (
	// ErrFailed is a server error: the attempt failed and may be retried.
	// It reports StatusCode 500.
	ErrFailed error = &statusError{500, "sim: the server failed the attempt (500)"}
	// ErrOverloaded is a server's overload answer: throttles count it and
	// the wait before the next retry starts from Policy.ThrottleBase. It
	// reports StatusCode 503.
	ErrOverloaded error = &statusError{503, "sim: the server answered that it is overloaded (503)"}
	// ErrTimeout is an attempt that got no answer in time; it matches
	// retry.ErrAttemptTimeout.
	ErrTimeout error = timeoutError{}
	// ErrConflict is a refusal because of the data, not of the server's
	// health: the herd's write whose version no longer matches (think 409
	// or 412). It reports StatusCode 409, so breakers do not count it as
	// the dependency's failure; the loop retries it.
	ErrConflict error = &statusError{409, "sim: the write conflicted with another one (409)"}
)

// statusError is a simulated answer with an HTTP status, so that breakers
// and policy documents classify it as they would the real one.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string   { return e.msg }
func (e *statusError) StatusCode() int { return e.code }

type timeoutError struct{}

func (timeoutError) Error() string        { return "sim: the attempt timed out" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Is(target error) bool { return target == retry.ErrAttemptTimeout }

// AttemptTimeout tells a breaker, which cannot import retry, that this is
// the attempt's own timeout (the dependency's failure), not the caller's
// deadline.
func (timeoutError) AttemptTimeout() bool { return true }

// Outcome is how one simulated attempt ended.
type Outcome uint8

const (
	// Succeeded: the attempt got a successful answer.
	Succeeded Outcome = iota
	// Failed: the server answered with an error (ErrFailed).
	Failed
	// Overloaded: the server answered that it is overloaded (ErrOverloaded).
	Overloaded
	// TimedOut: no answer came in time (ErrTimeout).
	TimedOut
	// Conflicted: the server refused the attempt because of the data
	// (ErrConflict).
	Conflicted
)

func (o Outcome) err() error {
	switch o {
	case Failed:
		return ErrFailed
	case Overloaded:
		return ErrOverloaded
	case TimedOut:
		return ErrTimeout
	case Conflicted:
		return ErrConflict
	}
	return nil
}

// compiled is a Policy with its defaults resolved, ready for a run.
type compiled struct {
	limit     int // 0: no limit
	sched     backoff.Schedule
	throttled backoff.Schedule // sched with ThrottleBase
	immediate bool
	classify  func(error) retry.Class
	stepper   func() retry.Stepper
	guards    func(rnd func() float64) Guards
	shared    bool
}

// compileAll validates every policy of a sweep and compiles it, so that a
// bad policy is reported before any run starts.
func compileAll(policies []Policy) ([]compiled, error) {
	out := make([]compiled, len(policies))
	for i, p := range policies {
		if err := p.Validate(); err != nil {
			return nil, err
		}
		out[i] = compile(p)
	}
	return out, nil
}

func compile(p Policy) compiled {
	c := compiled{
		sched:     p.Backoff.WithDefaults(),
		immediate: p.Immediate,
		classify:  p.Classify,
		stepper:   p.Stepper,
		guards:    p.Guards,
		shared:    p.Shared,
	}
	switch {
	case p.MaxAttempts == 0:
		c.limit = retry.DefaultMaxAttempts
	case p.MaxAttempts < 0:
		c.limit = 0
	default:
		c.limit = p.MaxAttempts
	}
	c.throttled = c.sched
	c.throttled.Base = p.ThrottleBase
	if c.throttled.Base == 0 {
		c.throttled.Base = retry.DefaultThrottleBase
	}
	return c
}

// Validate reports the first field of p that is out of range.
func (p Policy) Validate() error {
	rp := retry.Policy{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, ThrottleBase: p.ThrottleBase}
	if err := rp.Validate(); err != nil {
		return err
	}
	return nil
}

// guardSet hands out the guards of a run's clients.
type guardSet struct {
	shared Guards
	per    []Guards
	// before is true when attempts need a decision before they are sent
	// (there is a throttle or a breaker); false lets a scenario send an
	// attempt in the same event as the decision to retry it.
	before bool
}

// guardStream is the stream of a run's random source for guards: its
// draws are apart from the scenario's, so that a guard that draws does not
// change the arrivals and hops the policies are compared on.
const guardStream = 0x9a4d5

// build makes the guards for n clients under policy c, seeding r, the
// run's random source for guards, with the run's seed.
func (s *guardSet) build(c *compiled, n int, r *Rand, seed uint64) {
	s.shared = Guards{}
	clear(s.per)
	s.per = s.per[:0]
	s.before = false
	if c.guards == nil {
		return
	}
	r.Seed(seed, guardStream)
	rnd := r.Float64
	if c.shared {
		s.shared = c.guards(rnd)
		s.before = s.shared.Throttle != nil || s.shared.Breaker != nil
		return
	}
	for range n {
		g := c.guards(rnd)
		s.before = s.before || g.Throttle != nil || g.Breaker != nil
		s.per = append(s.per, g)
	}
}

// of returns client i's guards.
func (s *guardSet) of(i int32) *Guards {
	if len(s.per) == 0 {
		return &s.shared
	}
	return &s.per[i]
}

// Loop is the state of one logical request in a simulated retry loop.
type loop struct {
	attempts int32 // attempts made so far
	// admitted: the throttle already admitted the next attempt and asked
	// it to wait; after the wait it is not asked again.
	admitted bool
	prev     time.Duration // the previous backoff delay (decorrelated jitter)
	ticket   uint64        // the breaker's ticket for the attempt in flight
	sent     time.Duration // when the attempt in flight was sent
	st       retry.Stepper // made at the first retryable failure when Policy.Stepper is set
}

// begin asks the guards, at now, whether the next attempt may be sent. It
// returns a wait when a throttle asks to delay it (call begin again after
// it: the throttle, which may have reserved a token for the attempt, is
// not asked twice, as package retry sleeps and then sends), or a reason
// when a guard refuses (the request gives up). On yes the attempt counts
// as sent at now.
func (c *compiled) begin(l *loop, g *Guards, now time.Duration) (wait time.Duration, refused retry.Reason) {
	if th := g.Throttle; th != nil && !l.admitted {
		w, err := th.AdmitAt(Instant(now))
		if err != nil {
			return 0, retry.RejectedLocally
		}
		if w > 0 {
			l.admitted = true
			return w, 0
		}
	}
	l.admitted = false
	if b := g.Breaker; b != nil {
		ticket, err := b.AllowAt(Instant(now), l.attempts > 0)
		if err != nil {
			if c, ok := g.Throttle.(retry.ThrottleCanceller); ok {
				c.CancelAt(Instant(now)) // the throttle's turn is not used, as in retry
			}
			return 0, retry.BreakerOpen
		}
		l.ticket = ticket
	}
	l.attempts++
	l.sent = now
	return 0, 0
}

// end reports the outcome of the attempt in flight to the guards and, if it
// failed, decides what comes next: a wait before the next attempt, or a
// reason to give up. u is a draw in [0, 1) for the backoff's jitter.
func (c *compiled) end(l *loop, g *Guards, now time.Duration, o Outcome, u float64) (wait time.Duration, stop retry.Reason) {
	if g.Breaker != nil || g.Throttle != nil || g.Budget != nil {
		t := Instant(now)
		if b := g.Breaker; b != nil {
			b.DoneAt(t, l.ticket, now-l.sent, o.err())
		}
		if th := g.Throttle; th != nil {
			th.RecordAt(t, o == Overloaded)
		}
		if b := g.Budget; b != nil {
			b.RecordAt(t, l.attempts == 1, o == Succeeded)
		}
	}
	if o == Succeeded {
		return 0, 0
	}
	err := o.err()
	class := retry.Transient
	if o == Overloaded {
		class = retry.Throttled
	}
	if c.classify != nil {
		if class = c.classify(err); class == retry.Final {
			return 0, retry.PermanentError
		}
	}
	if c.limit > 0 && int(l.attempts) >= c.limit {
		return 0, retry.Exhausted
	}
	switch {
	case c.stepper != nil:
		if l.st == nil {
			l.st = c.stepper()
		}
		w, ok := l.st.Step(int(l.attempts), err, class, u)
		if !ok {
			return 0, retry.Exhausted
		}
		wait = w
	case !c.immediate:
		s := &c.sched
		if class == retry.Throttled {
			s = &c.throttled
		}
		wait = s.Delay(int(l.attempts), l.prev, u)
		l.prev = wait
	}
	if c.immediate {
		wait = 0
	}
	if b := g.Budget; b != nil && !b.AllowRetryAt(Instant(now), o == TimedOut) {
		return 0, retry.BudgetExhausted
	}
	return wait, 0
}

// GaveUp counts requests that ended without success, by reason (indexed by
// retry.Reason).
type GaveUp [retry.OuterLayer + 1]int

// Total returns the number of requests that gave up, whatever the reason.
func (g *GaveUp) Total() int {
	n := 0
	for _, v := range g {
		n += v
	}
	return n
}

func (g *GaveUp) add(o *GaveUp) {
	for i, v := range o {
		g[i] += v
	}
}
