package retry

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

// Defaults that a zero Policy field stands for.
const (
	// DefaultMaxAttempts counts the first attempt (AWS SDK standard mode,
	// gRPC).
	DefaultMaxAttempts = 3
	// DefaultThrottleBase is the backoff base for errors classed as
	// throttling (AWS SDKs' 2026 retry behaviour: 1 s for 429 and 503).
	DefaultThrottleBase = time.Second
	// DefaultMaxRetryAfter is the longest server hint honoured; a longer
	// one ends the loop at once (curl and Envoy refuse overlong hints too).
	DefaultMaxRetryAfter = 60 * time.Second
	// HintJitter is the largest share added on top of a server hint, so
	// that clients told "30 s" do not all come back at the same instant.
	// A hint is never shortened. A hint of 0 has no share to add: the
	// backoff applies instead, as if there were no hint.
	HintJitter = 0.2
	// Unlimited as MaxAttempts removes the attempt limit; MaxElapsed or the
	// context's deadline must then bound the loop.
	Unlimited = -1
)

// Policy says how a call is retried. The zero value is the default policy:
// 3 attempts; exponential backoff ×2 with full jitter from a 50 ms base
// (1 s for errors classed as throttling), each wait capped at 20 s; server
// hints honoured up to 60 s; no overall deadline beyond the context's; every
// error retried except those marked Permanent and the caller's own
// cancellation.
//
// A Policy is a plain value: copy it, keep it in a config struct, share it
// between goroutines (the budget, breaker, throttle and bulkhead it points to
// are shared, which is the point of them). Invalid fields are reported by
// Validate, by New and by Do before the first attempt, naming the field and
// its accepted range.
type Policy struct {
	// MaxAttempts is the most attempts made, counting the first. Zero:
	// DefaultMaxAttempts (3). Unlimited (-1): no limit. Other negative
	// values are invalid.
	MaxAttempts int
	// MaxElapsed bounds the whole call, attempts and waits together,
	// counted from the start of the first attempt. A wait that would end
	// after it is not started. Zero: no bound beyond the context's deadline.
	MaxElapsed time.Duration
	// AttemptTimeout bounds each attempt: the attempt's context is
	// cancelled after it, and the attempt counts as a retryable timeout
	// (unlike the caller's own deadline, which ends the loop), unless the
	// policy's Stepper is a StepMatcher that does not match it. Zero: none.
	AttemptTimeout time.Duration
	// Backoff is the wait schedule. Zero: exponential ×2, full jitter, 50 ms
	// base, 20 s cap.
	Backoff backoff.Schedule
	// ThrottleBase replaces Backoff.Base for errors classed ClassThrottled.
	// Zero: DefaultThrottleBase (1 s).
	ThrottleBase time.Duration
	// MaxRetryAfter is the longest server hint honoured. A longer hint ends
	// the loop at once with reason ReasonHintTooLong and the hint in the error.
	// Zero: DefaultMaxRetryAfter (60 s).
	MaxRetryAfter time.Duration
	// Classify says whether an error is retried. Nil: DefaultClassify. A
	// class other than ClassTransient, ClassThrottled and ClassPermanent
	// counts as ClassPermanent: the error is not retried, and the give-up's
	// Cause names the class returned.
	// Errors marked with Permanent are final whatever it says, and so is
	// the caller's own cancellation; an attempt that hit AttemptTimeout is
	// retryable whatever it says (a StepMatcher may still refuse it, see
	// Stepper). It must be safe for concurrent use.
	Classify func(err error) Class
	// OnRetry, if set, is called before each wait with what is about to
	// happen. It runs on the caller's goroutine, inline, and must not block.
	OnRetry func(w Wait)
	// Env, if set, is what the policy runs with: the guards shared by the
	// calls to one dependency (budget, breaker, throttle, bulkhead), the
	// observer, and the sources of randomness and time. Nil: none of them,
	// math/rand/v2 and a real timer. It is a pointer so that a Policy stays
	// small to pass by value (the success path of Do copies it); the Env it
	// points to is shared by every copy and must not be changed while calls
	// use it.
	Env *Env
	// Stepper, if set, is called once per call, after the call's first
	// failed attempt whose error is not ClassPermanent (never on the
	// success path), and the Stepper it returns decides that call's waits
	// instead of Backoff and ThrottleBase, and may end the call: with
	// ReasonExhausted when its Step says no more, and with ReasonPermanent
	// at an error it does not match if it is a StepMatcher. A server hint
	// still wins over its wait, and MaxAttempts still bounds the call.
	// Package policy uses it to give each Step Functions retrier its own
	// schedule and its own count, and to end the call at an error that no
	// retrier matches. Nil: Backoff decides. It must be safe for
	// concurrent use if the policy is shared; each Stepper it returns is
	// used by one call only.
	Stepper func() Stepper
}

// Env is what a Policy runs with rather than what it says: the objects
// shared by every call to one dependency that guard it (a retry budget, a
// circuit breaker, a throttle, a bulkhead) and watch it (an observer), and
// the loop's sources of randomness and time. Its zero value, like a nil
// Policy.Env, has none of them. An Env is read, never written, by the
// loop, so one Env may serve many policies and goroutines; the guards it
// holds are safe for concurrent use (that is the point of sharing them).
type Env struct {
	// Budget, if set, must grant every retry (not first attempts). Nil:
	// retries are not limited. Recommended, and what httpretry.Transport
	// keeps per destination host by default:
	// budget.NewGRPC(budget.Recommended()), one per dependency, shared by
	// every call to it (a bucket that starts with two retries' worth and
	// earns more from successes; docs/simulator.md measures it).
	Budget Budget
	// Breaker, if set, must allow every attempt. Nil: no circuit breaker.
	Breaker Breaker
	// Throttle, if set, admits every attempt and learns from overload
	// answers. Nil: no client-side throttling.
	Throttle Throttle
	// Bulkhead, if set, limits concurrent attempts. Nil: no limit.
	Bulkhead Bulkhead
	// Observer, if set, receives an event for each attempt, retry and
	// give-up, on the goroutine of the call (a hedged call's cancelled
	// attempts are reported from a goroutine it leaves behind). It must
	// not block: the call waits for it. If it panics, the call panics with
	// its value, once what the attempt held (a bulkhead slot, a breaker
	// ticket, a throttle's turn) has been handed back; a panic on the
	// goroutine a hedged call leaves behind ends the program, as a panic
	// of fn there does. Nil: no events and no cost.
	Observer event.Observer
	// Hedger, if set, hedges the calls made with Hedge and HedgeValue:
	// when an attempt has not answered after the Hedger's delay, the loop
	// sends another while the first still runs, takes the first success
	// and cancels the others. Do and DoValue do not hedge: hedging calls
	// fn concurrently with itself, which their callers have not agreed
	// to. Nil: no hedging.
	Hedger Hedger
	// Rand returns draws in [0, 1) for jitter. Nil: math/rand/v2's
	// Float64, which is safe for concurrent use. A seeded source gives a
	// repeatable schedule; it must be safe for concurrent use if the Env
	// is shared. A draw outside [0, 1) is clamped into it (NaN counts as
	// 0), so the jitter on a server hint stays within [0, HintJitter].
	Rand func() float64
	// Sleep, if set, replaces the loop's timer: it must wait d or until
	// ctx ends, whichever is first, and return ctx.Err() in the second
	// case. Nil: a timer. Tests use it (see retrytest.NoWait) to run a
	// policy without waiting; production code leaves it nil.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Clone returns a new Env with e's fields, or a zero Env when e is nil: the
// way to change a field for one policy without changing an Env that others
// share. The guards it points to stay shared.
func (e *Env) Clone() *Env {
	c := new(Env)
	if e != nil {
		*c = *e
	}
	return c
}

// guarded reports whether an attempt must go through a guard or be
// observed, which needs the clock. A nil Env guards nothing.
func (e *Env) guarded() bool {
	return e != nil && (e.Bulkhead != nil || e.Throttle != nil || e.Breaker != nil || e.Budget != nil || e.Observer != nil)
}

func (e *Env) sleep(ctx context.Context, d time.Duration) error {
	if e != nil && e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}

// draw returns a draw in [0, 1): Rand's, clamped into that range as
// backoff.Delay clamps its own (a NaN counts as 0), so that a source that
// breaks the contract can neither shorten a server's hint nor make a wait
// negative.
func (e *Env) draw() float64 {
	if e == nil || e.Rand == nil {
		return rand.Float64()
	}
	u := e.Rand()
	if !(u >= 0) {
		return 0
	}
	if u >= 1 {
		return 1 - 0x1p-53
	}
	return u
}

// Stepper decides the waits of one call; see Policy.Stepper. It is used by
// one call, from one goroutine, so it keeps that call's state (counts,
// previous waits) without locking.
type Stepper interface {
	// Step is asked after failed attempt number attempt (from 1), whose
	// error err the classifier put in class (never ClassPermanent), for the wait
	// before the next attempt; u is a random draw in [0, 1) from
	// Env.Rand. A negative wait counts as 0. ok false ends the call with
	// Reason ReasonExhausted: err is one the Stepper retries, and its
	// retries are used up. Step is
	// asked even when err carries a server hint, which then replaces the
	// returned wait, so that a Stepper counts every retry. It is not asked
	// when the call ends for another reason first (MaxAttempts reached, an
	// outer layer retries, an error that a StepMatcher does not match).
	Step(attempt int, err error, class Class, u float64) (wait time.Duration, ok bool)
}

// StepMatcher is a Stepper that retries only the errors it matches, such
// as package policy's, which matches an error when one of the document's
// retriers lists it. After a failed attempt whose error is not
// ClassPermanent (and while the caller's context has not ended), the loop
// asks Matches as it classifies the error, before the attempt limit, an
// outer layer or Step are considered. An error it does not match is taken
// as ClassPermanent: the call ends at once with ReasonPermanent and the
// error as the last (errors.Is and errors.As see through to it), the
// attempt is reported with outcome event.Rejected, and Step is not asked.
// This holds for an attempt that ran past Policy.AttemptTimeout too, which
// the classifier is not asked about. A Stepper without the method retries
// every error the classifier lets through, and ends a call only by Step's
// ok false (ReasonExhausted).
type StepMatcher interface {
	Stepper
	// Matches reports whether err is one of the errors the Stepper
	// retries, whether or not it has retries left for it. It must not
	// change what the Stepper decides, but may keep what it found for the
	// Step that follows: the loop asks Step, if at all, about the same
	// err, before it asks Matches again.
	Matches(err error) bool
}

// Wait describes a retry about to be waited for; it is what OnRetry gets.
type Wait struct {
	Attempt int           // the attempt that just failed, from 1
	Err     error         // its error
	Class   Class         // how the error was classified
	Delay   time.Duration // how long the loop will wait before the next attempt
	Source  event.Source  // event.Backoff or event.ServerHint
}

// Validate reports the first field that is out of range, with its value and
// what is accepted.
//
//go:noinline
func (p *Policy) Validate() error {
	switch {
	case p.MaxAttempts < Unlimited:
		return configerr.Invalid(ErrInvalidConfig, "MaxAttempts", p.MaxAttempts, fmt.Sprintf("≥ 1, 0 for the default (%d) or Unlimited (-1)", DefaultMaxAttempts))
	case p.MaxElapsed < 0:
		return configerr.Invalid(ErrInvalidConfig, "MaxElapsed", p.MaxElapsed, "≥ 0 (0 means no bound)")
	case p.AttemptTimeout < 0:
		return configerr.Invalid(ErrInvalidConfig, "AttemptTimeout", p.AttemptTimeout, "≥ 0 (0 means none)")
	case p.ThrottleBase < 0:
		return configerr.Invalid(ErrInvalidConfig, "ThrottleBase", p.ThrottleBase, fmt.Sprintf("≥ 0 (0 means %v)", DefaultThrottleBase))
	case p.MaxRetryAfter < 0:
		return configerr.Invalid(ErrInvalidConfig, "MaxRetryAfter", p.MaxRetryAfter, fmt.Sprintf("≥ 0 (0 means %v)", DefaultMaxRetryAfter))
	}
	return configerr.In(ErrInvalidConfig, "Backoff", p.Backoff.Validate())
}

// quick reports, in as few instructions as possible, that p is valid
// (Validate returns nil) and plain: the common case of a policy with no
// Env, no deadline and no per-attempt timeout. False means "look closer"
// (Validate, then plain), not "invalid"; FuzzQuick checks that it never
// admits a policy that Validate refuses or that is not plain. The range
// checks are folded into two words so that the zero Policy costs two
// branches: any negative field makes the second word negative; any
// non-zero Multiplier (which needs a float check), MaxElapsed or
// AttemptTimeout, a Kind other than Exponential or Constant, or a Jitter
// above Decorrelated makes the first word non-zero.
func (p *Policy) quick() bool {
	b := &p.Backoff
	notPlain := int64(p.MaxElapsed|p.AttemptTimeout) | int64(math.Float64bits(b.Multiplier)) |
		int64(uint8(b.Kind)>>1|uint8(b.Jitter)>>2)
	signs := int64(p.MaxAttempts-Unlimited) | int64(p.ThrottleBase|p.MaxRetryAfter|b.Base|b.Cap)
	return notPlain|signs>>63 == 0 && p.Env == nil
}

// plain reports whether the first attempt needs no set-up at all: no clock,
// no context, no guard. Then a successful first attempt costs one call.
func (p *Policy) plain() bool {
	return p.MaxElapsed == 0 && p.AttemptTimeout == 0 && !p.Env.guarded()
}

// Attempts returns the effective attempt limit (0 for Unlimited).
func (p *Policy) Attempts() int {
	switch p.MaxAttempts {
	case 0:
		return DefaultMaxAttempts
	case Unlimited:
		return 0
	}
	return p.MaxAttempts
}

func (p *Policy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter == 0 {
		return DefaultMaxRetryAfter
	}
	return p.MaxRetryAfter
}

func (p *Policy) throttleBase() time.Duration {
	if p.ThrottleBase == 0 {
		return DefaultThrottleBase
	}
	return p.ThrottleBase
}

// Retrier is a validated Policy, ready to run calls. Build it once with New
// and share it: it is safe for concurrent use. Its Do checks nothing per
// call (New checked the policy once) and, like the package function Do, is
// inlined where it is called.
type Retrier struct {
	p     Policy
	plain bool
}

// New validates p and returns a Retrier that applies it.
func New(p Policy) (*Retrier, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Retrier{p: p, plain: p.plain()}, nil
}

// Policy returns the policy r applies.
func (r *Retrier) Policy() Policy { return r.p }

// Do calls fn until it succeeds or the policy says to stop; see the package
// function Do.
func (r *Retrier) Do(ctx context.Context, fn func(context.Context) error) error {
	return retrierFirst(ctx, r, fn, (*Retrier).rest)
}

// DoValueWith is DoValue for a prepared Retrier.
func DoValueWith[T any](ctx context.Context, r *Retrier, fn func(context.Context) (T, error)) (T, error) {
	if r.plain {
		v, err := fn(ctx)
		if err == nil {
			return v, nil
		}
		return run(ctx, &r.p, fn, &first[T]{v: v, err: err})
	}
	return run(ctx, &r.p, fn, nil)
}
