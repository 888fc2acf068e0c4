// Package policy reads retry policies from documents, so that operators can
// tune retries without rebuilding. A document reads like the Retry and
// Catch blocks of an AWS Step Functions task, and a real Step Functions
// Retry block loads unchanged and means what it means there:
//
//	{
//	  "Retry": [
//	    {"ErrorEquals": ["HTTP.429", "HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 5,
//	     "BackoffRate": 2, "MaxDelaySeconds": 20, "JitterStrategy": "FULL"},
//	    {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 0.05, "MaxAttempts": 2}
//	  ],
//	  "TimeoutSeconds": 5,
//	  "DeadlineSeconds": 30
//	}
//
// # Retriers
//
// After a failed attempt, the first retrier whose ErrorEquals matches the
// error decides. Each retrier counts its own retries: with MaxAttempts 2
// on a retrier for Net.Reset and 5 on one for HTTP.429, a call may retry
// two resets and five 429s. When the matching retrier has used its
// MaxAttempts, the call ends (reason "attempts exhausted",
// retry.ErrExhausted), even if a later retrier would also match.
//
// An error that no retrier matches is not retried: the call ends at once
// with it (reason "permanent error", retry.ErrPermanent), as Step Functions
// fails the state with that error, whether or not attempts remain. So does
// an attempt that ran past TimeoutSeconds when no retrier lists
// States.Timeout, Net.Timeout or States.ALL. The *retry.Error wraps the
// attempt's own error, so errors.Is and errors.As see through it.
//
// MaxAttempts counts retries, as in Step Functions, not attempts: a
// retrier with MaxAttempts 3 allows 3 retries, so up to 4 attempts of the
// call (yaoki's retry.Policy.MaxAttempts counts the first attempt and would
// say 4). MaxAttempts 0 means never retry the errors it matches. A call
// makes at most 1 + the sum of every retrier's MaxAttempts attempts, and
// at most MaxTotalAttempts (which counts the first attempt, as
// YAOKI_MAX_ATTEMPTS and AWS_MAX_ATTEMPTS do) when it is set.
//
// Retrier fields and their ranges, with Step Functions' defaults:
//
//	ErrorEquals      non-empty array of error names (required)
//	IntervalSeconds  wait before the retrier's first retry, ≥ 0 and ≤ 99999999; default 1
//	                 (Step Functions wants an integer ≥ 1: fractions and 0, every retry at
//	                 once, are ours)
//	MaxAttempts      integer 0..99999999; default 3
//	BackoffRate      multiplier ≥ 1.0 applied after each retry; default 2.0
//	MaxDelaySeconds  cap on one wait, > 0 and ≤ 31622400; default none (waits grow unbounded)
//	JitterStrategy   FULL (a uniform draw in [0, wait)) or NONE, and ours EQUAL ([wait/2, wait))
//	                 and DECORRELATED (each wait up to 3 times the previous one; it takes no
//	                 BackoffRate); default NONE, as in Step Functions
//	Comment          free text
//
// Retry n of a retrier waits IntervalSeconds·BackoffRate^(n−1), capped by
// MaxDelaySeconds, then jittered. A server's Retry-After still wins over
// it (see package retry).
//
// # Error names
//
// ErrorEquals lists names; an error matches a retrier if any of its names
// matches (see Name and Matches):
//
//	States.ALL          every error but the terminal States.DataLimitExceeded and States.Runtime
//	                    (as in Step Functions); must be alone in its ErrorEquals, in the last retrier
//	States.TaskFailed   every error except timeouts (as in Step Functions)
//	States.Timeout      an attempt that ran past TimeoutSeconds, and network timeouts
//	States.Permissions  HTTP.401 and HTTP.403
//	States.Http.Socket  every Net. error
//	HTTP.503            an HTTP answer with that status (errors with StatusCode() int)
//	HTTP.5XX            an HTTP answer with a status from 500 to 599 (1XX to 5XX)
//	Net.Timeout         the same errors as States.Timeout
//	Net.Reset           connection reset, broken pipe, closed before the answer
//	Net.Refused         connection refused
//	Net.DNS             a failed name lookup
//
// The other States. names of Step Functions (States.HeartbeatTimeout,
// States.Runtime, ...) are accepted and match only an error whose
// ErrorName method (see Named) returns them; so do names outside these
// three namespaces, such as Lambda.ServiceException. A misspelt name in the
// HTTP., Net. or States. namespace is an error, since it would silently
// match nothing.
//
// # Catchers
//
// Catch holds catchers ({"ErrorEquals": [...], "Next": "Fallback"}): when a
// call gives up, Document.Caught returns the first catcher that matches the last
// error, so the caller can route it (to a fallback, a dead-letter queue).
// A catcher's ResultPath is kept for the caller; its Output and Assign are
// accepted and ignored.
//
// # The rest of the document
//
// Beside Retry and Catch, a document may hold:
//
//	TimeoutSeconds        per-attempt timeout (Step Functions' own field), > 0
//	DeadlineSeconds       bound on the whole call, attempts and waits, > 0
//	MaxTotalAttempts      attempts of the call, counting the first, ≥ 1
//	MaxRetryAfterSeconds  longest server hint honoured, > 0; default 60
//	RetryMode             "standard" (default), "adaptive" (standard plus the AWS SDKs'
//	                      CUBIC rate limiter and 2026 retry quota) or "off" (one attempt)
//	IdempotencyKey        "auto" (create a key for POST and PATCH) or "off" (default)
//	Budget                a retry budget (package budget's Share): {"Ratio": 0.2,
//	                      "WindowSeconds": 10, "MinPerSecond": 10}; {} for its defaults
//	Breaker               a circuit breaker (package breaker): {"FailureRatio": 0.5,
//	                      "MinCalls": 20, "WindowSeconds": 30, "ConsecutiveFailures": 0,
//	                      "OpenSeconds": 30, "MaxOpenSeconds": 300, "HalfOpenProbes": 1,
//	                      "RetriesOnly": false}; {} for its defaults
//	Comment               free text
//
// and, so that a whole Step Functions task state loads unchanged, the task
// fields that have no meaning here (Type, Resource, Next, End, Parameters,
// Arguments, ResultPath, ResultSelector, InputPath, OutputPath, Output,
// Assign, QueryLanguage, Credentials, HeartbeatSeconds,
// HeartbeatSecondsPath, TimeoutSecondsPath), which are ignored. Any other
// field is an error: a typo must not silently become a default. A document
// may also be a bare Retry array, or the fragment `"Retry": [...]` as the
// Step Functions documentation prints it.
//
// The environment overrides the document: see ApplyEnv for
// YAOKI_MAX_ATTEMPTS and YAOKI_RETRY_MODE.
package policy

import (
	"context"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/internal/enum"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// Step Functions' defaults and limits for retrier fields.
const (
	DefaultInterval    = time.Second // IntervalSeconds
	DefaultMaxAttempts = 3           // MaxAttempts, counting retries
	DefaultBackoffRate = 2.0         // BackoffRate
	MaxMaxAttempts     = 99999999    // the largest MaxAttempts and IntervalSeconds
	MaxDelayLimit      = 31622400    // the largest MaxDelaySeconds (366 days)
)

// noCap stands for "no MaxDelaySeconds": a cap no wait reaches.
const noCap = time.Duration(math.MaxInt64)

// Mode is the retry mode: what YAOKI_RETRY_MODE and RetryMode say.
type Mode uint8

const (
	// Standard retries as the document says. It is the zero value.
	Standard Mode = iota
	// Adaptive is the AWS SDKs' adaptive retry mode (2026 behaviour):
	// Standard, plus their client-side rate limiter (throttle.Cubic, or
	// Options.Throttle) and their retry quota (budget.Bucket, unless the
	// document has its own Budget).
	Adaptive
	// Off makes one attempt only.
	Off
)

var modeNames = [...]string{Standard: "standard", Adaptive: "adaptive", Off: "off"}

// String returns "standard", "adaptive" or "off".
func (m Mode) String() string { return enum.Name(modeNames[:], m, "Mode(%d)") }

// ParseMode returns the mode named s: "standard", "adaptive" or "off".
// "legacy", an AWS_RETRY_MODE value for each SDK's older behaviour, has no
// equivalent and is not accepted.
func ParseMode(s string) (Mode, bool) { return enum.Parse[Mode](modeNames[:], s) }

// Retrier is one element of Retry: the errors it matches and how they are
// retried. Field comments give the document field each one comes from.
// In Go, a zero field is taken as written, since zero is meaningful in
// Step Functions (MaxAttempts 0: never retry; Interval 0: at once; Jitter
// zero is backoff.Full), except BackoffRate, where 0 means 2.0. NewRetrier
// returns a Retrier with Step Functions' defaults, as Parse fills them in.
type Retrier struct {
	ErrorEquals []string       // ErrorEquals
	Interval    time.Duration  // IntervalSeconds; in a document, default 1 s
	MaxAttempts int            // MaxAttempts: retries, not counting the first attempt; in a document, default 3
	BackoffRate float64        // BackoffRate: ≥ 1; 0 or, in a document, absent: 2.0
	MaxDelay    time.Duration  // MaxDelaySeconds; 0: no cap
	Jitter      backoff.Jitter // JitterStrategy (FULL, NONE, EQUAL, DECORRELATED); in a document, default NONE; in Go, the zero value is backoff.Full
	Comment     string         // Comment, kept and never read
}

// NewRetrier returns a retrier for the errors named with Step Functions'
// defaults: IntervalSeconds 1, MaxAttempts 3, BackoffRate 2.0, no
// MaxDelaySeconds, JitterStrategy NONE.
func NewRetrier(errorEquals ...string) Retrier {
	return Retrier{ErrorEquals: errorEquals, Interval: DefaultInterval, MaxAttempts: DefaultMaxAttempts,
		BackoffRate: DefaultBackoffRate, Jitter: backoff.None}
}

// Schedule returns the backoff schedule of the retrier's waits.
func (r *Retrier) Schedule() backoff.Schedule {
	s := backoff.Schedule{Kind: backoff.Exponential, Base: r.Interval, Multiplier: r.BackoffRate,
		Cap: r.MaxDelay, Jitter: r.Jitter}
	if r.BackoffRate == 0 {
		s.Multiplier = DefaultBackoffRate
	}
	if r.BackoffRate == 1 {
		s.Kind, s.Multiplier = backoff.Constant, 0
	}
	if s.Cap == 0 {
		s.Cap = noCap
	}
	if s.Base == 0 {
		// Interval·BackoffRate^(n−1) is 0 for every retry. backoff reads
		// a zero Base and Cap as its defaults: a constant 1 ns, capped at
		// 1 ns (which decorrelated jitter also keeps to), is "at once".
		s.Kind, s.Multiplier, s.Base, s.Cap = backoff.Constant, 0, 1, 1
	}
	return s
}

// Matches reports whether the retrier's ErrorEquals matches err.
func (r *Retrier) Matches(err error) bool { return err != nil && anyMatch(r.ErrorEquals, infoOf(err)) }

func anyMatch(names []string, in info) bool {
	for _, n := range names {
		if in.matches(n) {
			return true
		}
	}
	return false
}

// match returns the index of the first retrier that matches in, or -1.
func match(retriers []Retrier, in info) int {
	for i := range retriers {
		if anyMatch(retriers[i].ErrorEquals, in) {
			return i
		}
	}
	return -1
}

// Catcher is one element of Catch: errors that, once the call gave up,
// go to the state (or handler) named Next.
type Catcher struct {
	ErrorEquals []string // the error names it catches, as a Retrier's
	Next        string   // the state or handler the caught error goes to
	// ResultPath is where the state puts the error, "" when the document
	// does not say.
	ResultPath string
	// DiscardResult is "ResultPath": null, which Step Functions reads as
	// "discard the error and pass the state's input on" (the AWS CDK
	// writes it); ResultPath is then "".
	DiscardResult bool
	Comment       string // Comment, kept and never read
}

// Document is a loaded policy. Build it with Parse or Load (which validate
// it) or as a literal (then call Validate). A Document is not changed by
// its methods, except ApplyEnv; Policy, Do and Caught are safe for
// concurrent use.
type Document struct {
	// Retry is the Retry block: the first retrier whose ErrorEquals
	// matches an error decides its retries (States.ALL only in the last).
	// Empty: no error is retried.
	Retry []Retrier
	// Catch is the Catch block: where an error goes once the call gave
	// up (Caught). Empty: nowhere; the error is returned.
	Catch []Catcher
	// AttemptTimeout is TimeoutSeconds: each attempt's bound. 0: none.
	AttemptTimeout time.Duration
	// Deadline is DeadlineSeconds: the whole call's bound. 0: none
	// beyond the context's.
	Deadline time.Duration
	// MaxTotalAttempts bounds the attempts of a call, counting the first.
	// 0: 1 + the sum of every retrier's MaxAttempts.
	MaxTotalAttempts int
	// MaxRetryAfter is MaxRetryAfterSeconds. 0: retry.DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Mode is RetryMode. Zero: Standard.
	Mode Mode
	// IdempotencyKey is "auto" or "off" ("" means off). Package policy
	// only carries it; HTTP clients such as `yaoki http` act on it.
	IdempotencyKey string
	// Budget is a share-of-traffic retry budget for the calls of the
	// policy (package budget). Nil: no budget.
	Budget *budget.ShareConfig
	// Breaker is a circuit breaker for the calls of the policy (package
	// breaker). Nil: no breaker.
	Breaker *breaker.Config
	Comment string // Comment, kept and never read
}

// Attempts returns the most attempts a call can make, counting the first.
func (d *Document) Attempts() int {
	if d.Mode == Off {
		return 1
	}
	n := 1
	for i := range d.Retry {
		n += d.Retry[i].MaxAttempts
	}
	if d.MaxTotalAttempts > 0 && d.MaxTotalAttempts < n {
		n = d.MaxTotalAttempts
	}
	return n
}

// Match returns the index of the first retrier that matches err, or -1.
func (d *Document) Match(err error) int {
	if err == nil {
		return -1
	}
	return match(d.Retry, infoOf(err))
}

// Caught returns the first catcher that matches err (the error a call gave
// up with, or its last error), and whether there is one.
func (d *Document) Caught(err error) (Catcher, bool) {
	if err == nil {
		return Catcher{}, false
	}
	in := infoOf(err)
	for _, c := range d.Catch {
		if anyMatch(c.ErrorEquals, in) {
			return c, true
		}
	}
	return Catcher{}, false
}

// Options are what a document cannot hold: objects of the program that
// runs it. The zero value adds nothing.
type Options struct {
	// Throttle is used in Adaptive mode (and only then): the client-side
	// throttle the attempts go through. Nil: a new throttle.Cubic with its
	// defaults (the AWS SDKs' adaptive-mode rate limiter).
	Throttle retry.Throttle
	// Base is the policy the document's fields are applied to: its Env
	// (Budget, Breaker, Bulkhead, Observer, Rand, Sleep) and OnRetry are
	// kept, the document's budget, breaker and throttle replacing Env's;
	// the document's breaker reports its changes to Env's Observer. Its MaxAttempts, MaxElapsed, AttemptTimeout, MaxRetryAfter,
	// Backoff and Classify are replaced.
	Base retry.Policy
}

// Policy returns the retry.Policy that applies d, for package retry or an
// HTTP transport. It is safe to share between calls and goroutines: each
// call gets its own retrier counts (through retry.Policy.Stepper), while
// the budget, breaker and throttle that Policy creates (for Budget, Breaker
// and Adaptive mode) are shared by every call of the returned policy, which
// is their point: build the policy once, not per call. It panics if d is
// invalid; Parse and Load return valid documents.
func (d *Document) Policy(o Options) retry.Policy {
	if err := d.Validate(); err != nil {
		panic(err)
	}
	p := o.Base
	p.MaxAttempts = d.Attempts()
	p.MaxElapsed = d.Deadline
	p.AttemptTimeout = d.AttemptTimeout
	p.MaxRetryAfter = d.MaxRetryAfter
	p.Backoff = backoff.Schedule{}
	retriers := append([]Retrier(nil), d.Retry...) // the policy must not change with d
	p.Classify = func(err error) retry.Class { return classify(retriers, err) }
	sched := make([]backoff.Schedule, len(retriers))
	for i := range retriers {
		sched[i] = retriers[i].Schedule()
	}
	p.Stepper = func() retry.Stepper { return newStepper(retriers, sched) }
	if d.Mode != Adaptive && d.Budget == nil && d.Breaker == nil {
		return p
	}
	e := p.Env.Clone() // Base's Env is not changed
	if d.Mode == Adaptive {
		if o.Throttle != nil {
			e.Throttle = o.Throttle
		} else if c, err := throttle.NewCubic(throttle.CubicConfig{}); err == nil {
			e.Throttle = c
		}
		if d.Budget == nil && e.Budget == nil {
			if b, err := budget.NewBucket(budget.BucketConfig{}); err == nil {
				e.Budget = b
			}
		}
	}
	if d.Budget != nil {
		if b, err := budget.NewShare(*d.Budget); err == nil {
			e.Budget = b
		}
	}
	if d.Breaker != nil {
		c := *d.Breaker
		c.Observer = e.Observer // the breaker's changes go where the policy's events go
		if b, err := breaker.New(c); err == nil {
			e.Breaker = b
		}
	}
	p.Env = e
	return p
}

// Do runs fn under the document's policy; see retry.Do. For many calls,
// build the policy once with Policy and use retry.New.
func (d *Document) Do(ctx context.Context, fn func(context.Context) error) error {
	return retry.Do(ctx, d.Policy(Options{}), fn)
}

// classify puts err in the class that package retry needs: ClassPermanent when
// no retrier matches, ClassThrottled for overload answers (HTTP.429, HTTP.503 and
// errors package retry sees as throttling), ClassTransient otherwise.
func classify(retriers []Retrier, err error) retry.Class {
	in := infoOf(err)
	if match(retriers, in) < 0 {
		return retry.ClassPermanent
	}
	if in.code == 429 || in.code == 503 {
		return retry.ClassThrottled
	}
	return retry.DefaultClassify(err)
}

// stepper is one call's state: each retrier's retries so far and its
// previous wait (for decorrelated jitter). It is a retry.StepMatcher.
type stepper struct {
	retriers []Retrier
	sched    []backoff.Schedule // shared by every call, read-only
	count    []int
	prev     []time.Duration
	matched  int // the retrier Matches found + 1, for the Step that follows; 0: none kept
}

var _ retry.StepMatcher = (*stepper)(nil)

func newStepper(retriers []Retrier, sched []backoff.Schedule) *stepper {
	return &stepper{retriers: retriers, sched: sched, count: make([]int, len(retriers)), prev: make([]time.Duration, len(retriers))}
}

// Matches implements retry.StepMatcher: err is retried only if a retrier
// matches it. The document's classifier already makes the other errors
// ClassPermanent; Matches does the same for an attempt that ran past
// TimeoutSeconds, which package retry does not show the classifier, so
// that a timeout no retrier lists ends the call as a permanent error, as
// Step Functions fails the state with States.Timeout.
func (s *stepper) Matches(err error) bool {
	i := match(s.retriers, infoOf(err))
	s.matched = i + 1
	return i >= 0
}

// Step implements retry.Stepper, with the retrier that Matches found for
// err when the loop asked it first. Its ok false means that the retrier
// matching err has used its MaxAttempts (retry.ReasonExhausted), or, to a
// caller that did not ask Matches first, that no retrier matches err.
func (s *stepper) Step(_ int, err error, _ retry.Class, u float64) (time.Duration, bool) {
	i := s.matched - 1 // the retrier Matches found for err
	if s.matched == 0 {
		i = match(s.retriers, infoOf(err))
	}
	s.matched = 0
	if i < 0 || s.count[i] >= s.retriers[i].MaxAttempts {
		return 0, false
	}
	s.count[i]++
	w := s.sched[i].Delay(s.count[i], s.prev[i], u)
	s.prev[i] = w
	return w, true
}
