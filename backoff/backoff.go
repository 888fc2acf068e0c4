// Package backoff computes how long to wait before a retry.
//
// A Schedule is plain arithmetic: its Delay method is a pure function of the
// retry number, the previous delay (used only by decorrelated jitter) and a
// random draw u in [0, 1) that the caller passes in. Nothing here reads the
// clock or a random source, so the same inputs always give the same delay;
// callers decide where randomness comes from (package retry uses
// math/rand/v2 unless a seeded source is configured).
//
// The zero Schedule is the toolkit's default: exponential growth ×2 from a
// 50 ms base, capped at 20 s, with full jitter (delay = U[0, min(cap,
// base·2^(n−1))) for retry n), as the AWS SDKs do.
//
// For every retry number up to math.MaxInt and every draw, a delay is never
// negative, never above the cap and never overflows: growth is computed in
// floating point and clamped before it is converted back to a duration.
package backoff

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/internal/enum"
)

// Defaults used when a Schedule field is zero.
const (
	// DefaultBase is the first retry's delay before jitter (AWS SDKs: 50 ms
	// for transient errors).
	DefaultBase = 50 * time.Millisecond
	// DefaultMultiplier is the growth factor of exponential schedules
	// (AWS SDKs, gRPC use 2; gRPC's default is 1.6).
	DefaultMultiplier = 2.0
	// DefaultCap bounds any single delay (AWS SDK standard mode: 20 s).
	DefaultCap = 20 * time.Second
)

// ErrInvalidConfig matches every error of Schedule.Validate, ParseKind and
// ParseJitter; the message names the field (or "kind", "jitter" for a
// name), the value found and what is accepted.
var ErrInvalidConfig = errors.New("backoff: invalid configuration")

// Kind is the shape of a schedule's growth. The zero value is Exponential.
type Kind uint8

const (
	// Exponential grows as Base·Multiplier^(n−1) for retry n.
	Exponential Kind = iota
	// Constant waits Base before every retry.
	Constant
	// Linear grows as Base·n for retry n.
	Linear
)

var kindNames = [...]string{Exponential: "exponential", Constant: "constant", Linear: "linear"}

// String returns the kind's lowercase name.
func (k Kind) String() string { return enum.Name(kindNames[:], k, "Kind(%d)") }

// Jitter says how a random draw spreads a delay. The zero value is Full.
type Jitter uint8

const (
	// Full draws uniformly from [0, d): the spread that de-synchronises
	// clients best and the default (AWS Architecture Blog, 2015).
	Full Jitter = iota
	// None uses the computed delay as is. Clients that fail together retry
	// together; use it only where one caller retries alone.
	None
	// Equal keeps half of the delay and draws the other half: [d/2, d).
	Equal
	// Decorrelated draws from [Base, 3·previous), capped; it ignores the
	// retry number and grows from the previous delay instead.
	Decorrelated
)

var jitterNames = [...]string{Full: "full", None: "none", Equal: "equal", Decorrelated: "decorrelated"}

// String returns the jitter's lowercase name.
func (j Jitter) String() string { return enum.Name(jitterNames[:], j, "Jitter(%d)") }

// ParseJitter returns the Jitter named s ("full", "none", "equal" or
// "decorrelated", in any case).
func ParseJitter(s string) (Jitter, error) {
	if j, ok := enum.ParseFold[Jitter](jitterNames[:], s); ok {
		return j, nil
	}
	return 0, configerr.Unknown(ErrInvalidConfig, "jitter", s, enum.List(jitterNames[:]))
}

// ParseKind returns the Kind named s ("exponential", "constant" or
// "linear", in any case).
func ParseKind(s string) (Kind, error) {
	if k, ok := enum.ParseFold[Kind](kindNames[:], s); ok {
		return k, nil
	}
	return 0, configerr.Unknown(ErrInvalidConfig, "kind", s, enum.List(kindNames[:]))
}

// Schedule describes the delays before successive retries. Its zero value is
// the default schedule (see the package comment); each zero field takes its
// documented default. A Schedule is a value: copy it freely; its methods are
// safe for concurrent use.
type Schedule struct {
	// Kind is the growth shape. Zero: Exponential.
	Kind Kind
	// Jitter spreads each delay. Zero: Full.
	Jitter Jitter
	// Base is the delay of the first retry before jitter, and the lower
	// bound of decorrelated jitter. Zero: DefaultBase (50 ms). Must be ≥ 0
	// after defaulting; a negative value is rejected by Validate.
	Base time.Duration
	// Multiplier is the growth factor of an Exponential schedule: any value
	// above 1, such as 1.5 or 2. Zero: DefaultMultiplier (2). Ignored by the
	// other kinds.
	Multiplier float64
	// Cap is the largest delay ever returned. Zero: DefaultCap (20 s).
	Cap time.Duration
}

// Validate reports whether the schedule's fields are in range. Its error
// matches ErrInvalidConfig and names the first field that is not, its value
// and what is accepted.
func (s Schedule) Validate() error {
	if s.Kind > Linear {
		return configerr.Invalid(ErrInvalidConfig, "Kind", uint8(s.Kind), "Exponential, Constant or Linear")
	}
	if s.Jitter > Decorrelated {
		return configerr.Invalid(ErrInvalidConfig, "Jitter", uint8(s.Jitter), "Full, None, Equal or Decorrelated")
	}
	if s.Base < 0 {
		return configerr.Invalid(ErrInvalidConfig, "Base", s.Base, fmt.Sprintf("≥ 0 (0 means %v)", DefaultBase))
	}
	if s.Cap < 0 {
		return configerr.Invalid(ErrInvalidConfig, "Cap", s.Cap, fmt.Sprintf("≥ 0 (0 means %v)", DefaultCap))
	}
	if s.Multiplier != 0 && !(s.Multiplier > 1) || math.IsInf(s.Multiplier, 0) {
		return configerr.Invalid(ErrInvalidConfig, "Multiplier", s.Multiplier, fmt.Sprintf("a finite value > 1 (0 means %v)", DefaultMultiplier))
	}
	return nil
}

// WithDefaults returns s with every zero field replaced by its default.
func (s Schedule) WithDefaults() Schedule {
	s.Base = cmp.Or(s.Base, DefaultBase)
	s.Multiplier = cmp.Or(s.Multiplier, DefaultMultiplier)
	s.Cap = cmp.Or(s.Cap, DefaultCap)
	return s
}

// Ceiling returns the delay of retry n (n ≥ 1) before jitter: the growth
// curve clamped to [0, Cap]. Retry numbers below 1 count as 1. For
// Decorrelated jitter it is the largest delay retry n can reach.
func (s Schedule) Ceiling(n int) time.Duration {
	return s.ceiling(n)
}

// params returns the schedule's base, multiplier and cap with defaults
// applied. (Reading them into locals, rather than copying the struct with
// WithDefaults, keeps Delay at a few nanoseconds.)
func (s *Schedule) params() (base time.Duration, mult float64, limit time.Duration) {
	base, mult, limit = s.Base, s.Multiplier, s.Cap
	if base == 0 {
		base = DefaultBase
	}
	if !(mult > 1) || mult > math.MaxFloat64 {
		mult = DefaultMultiplier
	}
	if limit == 0 {
		limit = DefaultCap
	}
	if base < 0 {
		base = 0
	}
	if limit < 0 {
		limit = 0
	}
	return base, mult, limit
}

func (s *Schedule) ceiling(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	base, m, limit := s.params()
	if base >= limit {
		return limit
	}
	var d float64
	switch {
	case s.Jitter == Decorrelated:
		// The first draw is below 3·base, and each later one below three
		// times the one before.
		d = float64(base) * math.Pow(3, float64(n))
	case s.Kind == Constant:
		return base
	case s.Kind == Linear:
		d = float64(base) * float64(n)
	case m == 2: // the common case, without math.Pow
		if n > 63 {
			return limit
		}
		d = float64(base) * float64(int64(1)<<(n-1))
	default:
		d = float64(base) * math.Pow(m, float64(n-1))
	}
	if !(d < float64(limit)) { // also catches +Inf and NaN
		return limit
	}
	return time.Duration(d)
}

// Delay returns the wait before retry n (n = 1 for the first retry) given
// the previous delay prev (only Decorrelated uses it; pass 0 for the first
// retry) and a random draw u in [0, 1). Draws outside [0, 1) are clamped.
// The result is always in [0, Cap] (Decorrelated: in [min(Base, Cap), Cap]).
func (s Schedule) Delay(n int, prev time.Duration, u float64) time.Duration {
	if !(u >= 0) { // also NaN
		u = 0
	} else if u >= 1 {
		u = 1 - 0x1p-53
	}
	if s.Jitter == Decorrelated {
		return s.decorrelated(prev, u)
	}
	c := s.ceiling(n)
	switch s.Jitter {
	case None:
		return c
	case Equal:
		half := c / 2
		return c - half + time.Duration(float64(half)*u)
	default:
		return time.Duration(float64(c) * u)
	}
}

// decorrelated returns min(cap, U[base, 3·prev)), with prev taken as base
// for the first retry and never below base.
func (s *Schedule) decorrelated(prev time.Duration, u float64) time.Duration {
	base, _, limit := s.params()
	if base >= limit {
		return limit
	}
	if prev < base {
		prev = base
	}
	hi := 3 * float64(prev)
	d := float64(base) + (hi-float64(base))*u
	if !(d < float64(limit)) {
		return limit
	}
	return time.Duration(d)
}
