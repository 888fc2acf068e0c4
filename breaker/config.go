package breaker

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

// Defaults that zero Config fields stand for (Resilience4j and Polly trip
// at 50 % failures with a minimum number of calls and stay open 30 s).
const (
	DefaultFailureRatio   = 0.5
	DefaultMinCalls       = 20
	DefaultWindow         = 30 * time.Second
	DefaultSlowRatio      = 0.5
	DefaultOpenTimeout    = 30 * time.Second
	DefaultMaxOpenTimeout = 5 * time.Minute
	DefaultOpenBackoff    = 2.0
	DefaultOpenJitter     = 0.1
	DefaultHalfOpenProbes = 1
	// Disabled as FailureRatio turns the ratio trip off; as OpenJitter, it
	// removes the jitter.
	Disabled = -1
)

// timeBuckets is how many steps a time window slides in: a tenth of the
// window (3 s of the default 30 s).
const timeBuckets = 10

// maxCountBuckets bounds the memory of a count window: up to this many
// calls it is exact (one bucket per call); beyond, it slides in blocks of
// ⌈WindowCalls/128⌉ calls.
const maxCountBuckets = 128

// Config configures a Breaker. The zero value is the default breaker: it
// trips when at least 50 % of the calls of the last 30 s failed, once 20
// calls were made in that time; it stays open 30 s (+0–10 % jitter), twice
// as long after each failed probe up to 5 min; half-open, it lets one probe
// through and closes when it succeeds.
type Config struct {
	// Name identifies the breaker in errors, hooks and events. Empty: the
	// breaker is unnamed (events carry no name), which redis.NewBreaker,
	// whose key is the name, refuses.
	Name string

	// FailureRatio trips the breaker when failures/calls over the window
	// reach it, once MinCalls calls were counted. The ratios are evaluated
	// when a failed or slow call is recorded (so that a success costs one
	// atomic add): a success never trips the breaker. Zero:
	// DefaultFailureRatio (0.5). Disabled (-1): no ratio trip. Accepted:
	// 0 < FailureRatio ≤ 1.
	FailureRatio float64
	// MinCalls is how many calls the window must hold before a ratio
	// (failures or slow calls) can trip the breaker. Zero: DefaultMinCalls
	// (20), or WindowCalls if that is smaller. Accepted: 1 to 1e9, and at
	// most WindowCalls with a count window.
	MinCalls int
	// Window is the time window: calls are counted over the last Window,
	// sliding in steps of a tenth of it. Zero: DefaultWindow (30 s).
	// Accepted: 100 ms to 24 h. Ignored when WindowCalls is set.
	Window time.Duration
	// WindowCalls, when set, replaces the time window with a count window:
	// the last WindowCalls calls, whenever they were made (exact up to
	// 128; beyond, sliding in blocks of ⌈WindowCalls/128⌉ calls).
	// Accepted: 0 to 1e6.
	WindowCalls int
	// ConsecutiveFailures trips the breaker after that many failures in a
	// row, whatever the window says. Zero: no such trip. Accepted: 0 to
	// 1e9.
	ConsecutiveFailures int
	// SlowCall is the duration from which a call counts as slow, whether
	// it succeeded or not; slow calls trip the breaker when slow/calls over
	// the window reaches SlowRatio (once MinCalls calls were counted), and
	// a slow probe counts as a failed one. Zero: no slow-call trip.
	SlowCall time.Duration
	// SlowRatio is the share of slow calls that trips the breaker. Zero:
	// DefaultSlowRatio (0.5; Resilience4j's 100 % would let one fast call
	// in 30 s keep the breaker of a hung dependency closed). Accepted:
	// 0 < SlowRatio ≤ 1.
	SlowRatio float64

	// OpenTimeout is how long the breaker stays open after its first trip.
	// Zero: DefaultOpenTimeout (30 s). Accepted: 1 ms to 24 h.
	OpenTimeout time.Duration
	// OpenBackoff multiplies the open duration after each failed probe
	// (each re-trip from half-open), up to MaxOpenTimeout; closing resets
	// it. Zero: DefaultOpenBackoff (2). Accepted: 1 to 100 (1: no growth).
	OpenBackoff float64
	// MaxOpenTimeout caps the open duration before jitter. Zero: the
	// larger of DefaultMaxOpenTimeout (5 min) and OpenTimeout. Accepted:
	// OpenTimeout to 7 days.
	MaxOpenTimeout time.Duration
	// OpenJitter lengthens each open period by a random share in
	// [0, OpenJitter), so that clients whose breakers tripped together do
	// not probe together. Zero: DefaultOpenJitter (0.1). Disabled (-1): no
	// jitter. Accepted: 0 < OpenJitter ≤ 1.
	OpenJitter float64
	// HalfOpenProbes is how many calls may be in flight while half-open,
	// and how many must succeed to close the breaker; any failure opens it
	// again. Probes whose outcomes have not come OpenTimeout after the last
	// probe went are deemed lost (a goroutine that died, a Done never
	// called): new probes go, and the lost ones' outcomes are dropped if
	// they come after all. Each probe's outcome counts once, however often
	// it is reported. Zero: DefaultHalfOpenProbes (1). Accepted: 1 to 1e6.
	HalfOpenProbes int

	// RetriesOnly makes the breaker refuse retries only: first attempts
	// (AllowAt with retry false, Allow, Execute) always pass, and their
	// outcomes still count, including as probes when half-open. It suits
	// many clients with little traffic each, where refusing first attempts
	// would fail requests that a recovering dependency could serve.
	RetriesOnly bool

	// CheckTickets gives every closed-state ticket an id, as half-open
	// tickets have, so that a ticket reported twice counts once and
	// DoubleReports counts the second report. It costs a lock on every
	// AllowAt and DoneAt: it is meant for tests (and -race runs), which
	// turn it on to show that the code under test reports each ticket
	// once. False (the default): closed tickets carry no id, AllowAt is one
	// atomic load, and a closed ticket reported twice counts twice.
	CheckTickets bool

	// Classify says whether an error counts as a failure, a success or not
	// at all. Nil: DefaultClassify. It must be safe for concurrent use.
	Classify func(err error) Outcome
	// OnStateChange, if set, is called after each transition, outside the
	// breaker's lock, on the goroutine that caused it (the one whose
	// outcome tripped or closed the breaker, or whose AllowAt found the
	// open period over). Two transitions racing may report in either
	// order; each call says from and to. It must not block.
	OnStateChange func(name string, from, to State)
	// Observer, if set, receives event.BreakerStateChange and
	// event.BreakerRejected (Component "breaker", Name). Nil: no events.
	Observer event.Observer
	// Rand returns draws in [0, 1) for the open-period jitter. Nil:
	// math/rand/v2's Float64. It must be safe for concurrent use. A draw
	// outside [0, 1) is clamped into it (NaN counts as 0), so each open
	// period stays within [OpenTimeout, OpenTimeout × (1 + OpenJitter)].
	Rand func() float64
}

// ErrInvalidConfig matches the errors New returns for a Config field
// out of range; the message names the field, its value and what is
// accepted.
var ErrInvalidConfig = errors.New("breaker: invalid configuration")

func invalid(field string, value any, want string) error {
	return configerr.Invalid(ErrInvalidConfig, field, value, want)
}

// resolve applies the defaults and checks the ranges.
func (s *Config) resolve() error {
	s.FailureRatio = cmp.Or(s.FailureRatio, DefaultFailureRatio)
	s.Window = cmp.Or(s.Window, DefaultWindow)
	if s.MinCalls == 0 {
		s.MinCalls = DefaultMinCalls
		if s.WindowCalls > 0 && s.WindowCalls < s.MinCalls {
			s.MinCalls = s.WindowCalls
		}
	}
	s.SlowRatio = cmp.Or(s.SlowRatio, DefaultSlowRatio)
	s.OpenTimeout = cmp.Or(s.OpenTimeout, DefaultOpenTimeout)
	s.OpenBackoff = cmp.Or(s.OpenBackoff, DefaultOpenBackoff)
	s.MaxOpenTimeout = cmp.Or(s.MaxOpenTimeout, max(DefaultMaxOpenTimeout, s.OpenTimeout))
	s.OpenJitter = cmp.Or(s.OpenJitter, DefaultOpenJitter)
	s.HalfOpenProbes = cmp.Or(s.HalfOpenProbes, DefaultHalfOpenProbes)
	switch {
	case s.FailureRatio != Disabled && !(s.FailureRatio > 0 && s.FailureRatio <= 1):
		return invalid("FailureRatio", s.FailureRatio, "0 < FailureRatio ≤ 1, or Disabled (-1) (0 means the default 0.5)")
	case s.WindowCalls < 0 || s.WindowCalls > 1e6:
		return invalid("WindowCalls", s.WindowCalls, "0 ≤ WindowCalls ≤ 1e6 (0 means a time window)")
	case s.MinCalls < 1 || s.MinCalls > 1e9:
		return invalid("MinCalls", s.MinCalls, "1 ≤ MinCalls ≤ 1e9 (0 means the default 20)")
	case s.WindowCalls > 0 && s.MinCalls > s.WindowCalls:
		return invalid("MinCalls", s.MinCalls, fmt.Sprintf("at most WindowCalls (%d): the window never holds more calls", s.WindowCalls))
	case s.WindowCalls == 0 && (s.Window < 100*time.Millisecond || s.Window > 24*time.Hour):
		return invalid("Window", s.Window, "100ms ≤ Window ≤ 24h (0 means the default 30s)")
	case s.ConsecutiveFailures < 0 || s.ConsecutiveFailures > 1e9:
		return invalid("ConsecutiveFailures", s.ConsecutiveFailures, "0 ≤ ConsecutiveFailures ≤ 1e9 (0 means no consecutive-failure trip)")
	case s.SlowCall < 0:
		return invalid("SlowCall", s.SlowCall, "SlowCall ≥ 0 (0 means no slow-call trip)")
	case !(s.SlowRatio > 0 && s.SlowRatio <= 1):
		return invalid("SlowRatio", s.SlowRatio, "0 < SlowRatio ≤ 1 (0 means the default 0.5)")
	case s.OpenTimeout < time.Millisecond || s.OpenTimeout > 24*time.Hour:
		return invalid("OpenTimeout", s.OpenTimeout, "1ms ≤ OpenTimeout ≤ 24h (0 means the default 30s)")
	case !(s.OpenBackoff >= 1 && s.OpenBackoff <= 100):
		return invalid("OpenBackoff", s.OpenBackoff, "1 ≤ OpenBackoff ≤ 100 (0 means the default 2)")
	case s.MaxOpenTimeout < s.OpenTimeout || s.MaxOpenTimeout > 7*24*time.Hour:
		return invalid("MaxOpenTimeout", s.MaxOpenTimeout, fmt.Sprintf("OpenTimeout (%v) ≤ MaxOpenTimeout ≤ 168h (0 means the larger of 5m and OpenTimeout)", s.OpenTimeout))
	case s.OpenJitter != Disabled && !(s.OpenJitter > 0 && s.OpenJitter <= 1):
		return invalid("OpenJitter", s.OpenJitter, "0 < OpenJitter ≤ 1, or Disabled (-1) (0 means the default 0.1)")
	case s.HalfOpenProbes < 1 || s.HalfOpenProbes > 1e6:
		return invalid("HalfOpenProbes", s.HalfOpenProbes, "1 ≤ HalfOpenProbes ≤ 1e6 (0 means the default 1)")
	}
	if s.FailureRatio == Disabled && s.ConsecutiveFailures == 0 && s.SlowCall == 0 {
		return invalid("FailureRatio", s.FailureRatio, "a trip condition: with FailureRatio Disabled, set ConsecutiveFailures or SlowCall")
	}
	if s.OpenJitter == Disabled {
		s.OpenJitter = 0
	}
	return nil
}
