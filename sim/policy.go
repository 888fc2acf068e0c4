package sim

import (
	"context"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

// Policy is a retry policy as simulated clients apply it: the same fields
// as retry.Policy where they matter on virtual time, and the guards
// (budget, breaker, throttle) built per client, or once per run when they
// are Shared. A simulated request is package retry's Loop driven on virtual
// time: the same decisions, in the same order, as retry.Do makes with the
// same settings in production.
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
	// Backoff is then ignored. A server's hint longer than 0 (RateLimit's
	// Retry-After) is still waited for, as package retry waits for it.
	Immediate bool
	// ThrottleBase replaces Backoff.Base after an overload answer, as in
	// retry.Policy. Zero: retry.DefaultThrottleBase (1 s).
	ThrottleBase time.Duration
	// Guards builds the guards of one client (or of all, when Shared).
	// rnd is the run's random source for guards, draws in [0, 1): give it
	// to every guard that draws (breaker.Config.Rand,
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
	// is retried: a server's answer reports its status with a method
	// StatusCode() int (500 failed, 503 overloaded, 409 conflict), a
	// timeout matches retry.ErrAttemptTimeout; RateLimit's refusal (429)
	// also reports its Retry-After with a method RetryAfter()
	// time.Duration. ClassPermanent ends the request
	// (retry.ReasonPermanent). Nil: every failure is retried, overload
	// answers and 429s classed ClassThrottled.
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
	Budget   retry.Budget   // asked before each retry
	Breaker  retry.Breaker  // asked before each attempt
	Throttle retry.Throttle // asked before each attempt, before the breaker
}

// Errors that simulated attempts fail with, as the guards see them (a
// breaker's DoneAt gets them).
var (
	// errFailed is a server error: the attempt failed and may be retried.
	// It reports StatusCode 500.
	errFailed error = &statusError{500, "sim: the server failed the attempt (500)"}
	// errOverloaded is a server's overload answer: throttles count it and
	// the wait before the next retry starts from Policy.ThrottleBase. It
	// reports StatusCode 503.
	errOverloaded error = &statusError{503, "sim: the server answered that it is overloaded (503)"}
	// errTimeout is an attempt that got no answer in time; it matches
	// retry.ErrAttemptTimeout.
	errTimeout error = timeoutError{}
	// errConflict is a refusal because of the data, not of the server's
	// health: the herd's write whose version no longer matches (think 409
	// or 412). It reports StatusCode 409, so breakers do not count it as
	// the dependency's failure; the loop retries it.
	errConflict error = &statusError{409, "sim: the write conflicted with another one (409)"}
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

// outcome is how one simulated attempt ended.
type outcome uint8

const (
	// succeeded: the attempt got a successful answer.
	succeeded outcome = iota
	// failed: the server answered with an error (errFailed).
	failed
	// overloaded: the server answered that it is overloaded (errOverloaded).
	overloaded
	// timedOut: no answer came in time (errTimeout).
	timedOut
	// conflicted: the server refused the attempt because of the data
	// (errConflict).
	conflicted
)

func (o outcome) err() error {
	switch o {
	case failed:
		return errFailed
	case overloaded:
		return errOverloaded
	case timedOut:
		return errTimeout
	case conflicted:
		return errConflict
	}
	return nil
}

// compiled is a Policy made into the retry loop's policy, ready for a run.
type compiled struct {
	rp        retry.Policy // the loop's policy; each client's guards and the run's draws are added by guardSet
	immediate bool
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
		rp: retry.Policy{
			MaxAttempts:  p.MaxAttempts,
			Backoff:      p.Backoff,
			ThrottleBase: p.ThrottleBase,
			Classify:     p.Classify,
			Stepper:      p.Stepper,
		},
		immediate: p.Immediate,
		guards:    p.Guards,
		shared:    p.Shared,
	}
	if c.rp.Classify == nil {
		c.rp.Classify = classifyOutcome
	}
	if p.Immediate {
		inner := p.Stepper
		c.rp.Stepper = func() retry.Stepper {
			if inner == nil {
				return immediate{}
			}
			st := inner()
			if m, ok := st.(retry.StepMatcher); ok {
				return immediateMatcher{immediate{st}, m}
			}
			return immediate{st}
		}
	}
	return c
}

// classifyOutcome is the simulated loop's default classifier: every
// failure is retried, overload answers and a rate limiter's 429 as
// throttling.
func classifyOutcome(err error) retry.Class {
	if _, limited := err.(*limitedError); limited || err == errOverloaded {
		return retry.ClassThrottled
	}
	return retry.ClassTransient
}

// immediate is the Stepper of Policy.Immediate: no wait before a retry;
// the policy's own Stepper, if any, still counts the retries and may end
// the request.
type immediate struct{ inner retry.Stepper }

func (s immediate) Step(attempt int, err error, class retry.Class, u float64) (time.Duration, bool) {
	if s.inner != nil {
		_, ok := s.inner.Step(attempt, err, class, u)
		return 0, ok
	}
	return 0, true
}

// immediateMatcher is immediate over a retry.StepMatcher, whose Matches
// it keeps: the errors the policy does not retry still end the request.
type immediateMatcher struct {
	immediate
	m retry.StepMatcher
}

func (s immediateMatcher) Matches(err error) bool { return s.m.Matches(err) }

// Validate reports the first field of p that is out of range.
func (p Policy) Validate() error {
	rp := retry.Policy{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, ThrottleBase: p.ThrottleBase}
	if err := rp.Validate(); err != nil {
		return err
	}
	return nil
}

// guardSet holds the loop policies of a run's clients: the compiled
// policy with each client's guards (or the run's shared ones) and the
// run's random source.
type guardSet struct {
	envs []retry.Env
	pols []retry.Policy // pols[i].Env is &envs[i]
	per  bool           // one policy per client (else pols[0] for all)
	r    *rng
	// u is the draw the loops' jitter uses (their Env.Rand returns it):
	// end draws it from r once per failed attempt, none for Immediate
	// policies, so that a seed gives the same run whatever the loop does
	// with the draw.
	u         float64
	draw      func() float64 // s.drawn, made once
	immediate bool
	// before is true when attempts need a decision before they are sent
	// (there is a throttle or a breaker); false lets a scenario send an
	// attempt in the same event as the decision to retry it.
	before bool
}

// guardStream is the stream of a run's random source for guards: its
// draws are apart from the scenario's, so that a guard that draws does not
// change the arrivals and hops the policies are compared on.
const guardStream = 0x9a4d5

// build makes the loop policies for n clients under policy c: the guards,
// with gr, the run's random source for guards, seeded with the run's
// seed; and the jitter, drawn from r, the scenario's source.
func (s *guardSet) build(c *compiled, n int, gr *rng, seed uint64, r *rng) {
	k := 1
	s.per = c.guards != nil && !c.shared
	if s.per {
		k = n
	}
	s.envs = append(s.envs[:0], make([]retry.Env, k)...)
	s.pols = append(s.pols[:0], make([]retry.Policy, k)...)
	s.before = false
	s.r, s.u, s.immediate = r, 0, c.immediate
	if s.draw == nil {
		s.draw = s.drawn
	}
	var rnd func() float64
	if c.guards != nil {
		gr.Seed(seed, guardStream)
		rnd = gr.Float64
	}
	for i := range k {
		e := &s.envs[i]
		e.Rand = s.draw
		if c.guards != nil {
			g := c.guards(rnd)
			e.Budget, e.Breaker, e.Throttle = g.Budget, g.Breaker, g.Throttle
			s.before = s.before || g.Throttle != nil || g.Breaker != nil
		}
		s.pols[i] = c.rp
		s.pols[i].Env = e
	}
}

func (s *guardSet) drawn() float64 { return s.u }

// end ends loop l's attempt in flight at now with outcome o; see loop.end.
func (s *guardSet) end(l *loop, now time.Duration, o outcome) (wait time.Duration, stop retry.Reason) {
	return s.endErr(l, now, o.err())
}

// endErr ends loop l's attempt in flight at now with err (nil for a
// success); see loop.end. A failure draws the jitter of the wait after it.
func (s *guardSet) endErr(l *loop, now time.Duration, err error) (wait time.Duration, stop retry.Reason) {
	if err != nil && !s.immediate {
		s.u = s.r.Float64()
	}
	return l.end(context.Background(), now, err)
}

// of returns client i's loop policy.
func (s *guardSet) of(i int32) *retry.Policy {
	if !s.per {
		return &s.pols[0]
	}
	return &s.pols[i]
}

// loop is one logical request in a simulated retry loop: package retry's
// Loop, driven on virtual time, and the ticket of its attempt.
type loop struct {
	m       retry.Loop
	t       retry.Ticket
	started bool
}

// begin asks, at now, whether the request's next attempt may be sent. It
// returns a wait when a throttle asks to delay it (call begin again after
// it: the throttle is not asked twice), or a reason when a guard refuses
// (the request gives up). On yes the attempt counts as sent at now. ctx
// is the caller's context (context.Background() in the scenarios).
func (l *loop) begin(ctx context.Context, p *retry.Policy, now time.Duration) (wait time.Duration, refused retry.Reason) {
	at := instant(now)
	if !l.started {
		l.m.Start(ctx, p, at)
		l.started = true
	}
	return waitOrReason(l.m.Before(ctx, at, &l.t))
}

// end reports, at now, how the attempt in flight ended (err nil for a
// success) and returns what comes next: a wait before the next attempt,
// or a reason to give up.
func (l *loop) end(ctx context.Context, now time.Duration, err error) (wait time.Duration, stop retry.Reason) {
	d := l.m.After(ctx, instant(now), &l.t, err)
	l.t = retry.Ticket{}
	return waitOrReason(d)
}

// waitOrReason is what a scenario acts on in the loop's decision d: the
// wait of a Sleep, the reason of a GiveUp, or neither (Send: send the
// attempt now; Done: the request succeeded).
func waitOrReason(d retry.Decision) (wait time.Duration, stop retry.Reason) {
	if d.Verdict == retry.Sleep {
		return d.Wait, 0
	}
	return 0, d.Reason
}

// GaveUp counts requests that ended without success, by reason (indexed by
// retry.Reason).
type GaveUp [retry.ReasonOuterLayer + 1]int

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
