// Package throttle slows a client down when its dependency says it is
// overloaded, before the dependency has to say it again.
//
//   - Adaptive is client-side throttling from the Google SRE book: the
//     client rejects a share of its own requests locally, with probability
//     max(0, (requests − K·accepts)/(requests + 1)) over the last two
//     minutes (at most 0.99, local rejections counted at a tenth), so that
//     a backend that rejects everything with 429 or 503 receives about 1 %
//     of the traffic it would reject anyway.
//   - Cubic is the AWS SDKs' adaptive retry mode: a token bucket whose rate
//     follows the CUBIC congestion-control curve: it drops to 70 % of the
//     measured send rate at each throttling answer and grows back along a
//     cubic; AdmitAt says how long to wait before sending.
//   - Bulkhead limits the calls in flight to one dependency, with a bounded
//     wait for a free slot.
//
// Adaptive and Cubic implement retry.Throttle (AdmitAt before each attempt,
// RecordAt after it, with throttled true for an overload answer: 429, 503
// or an error classed as throttling), and Cubic retry.ThrottleCanceller
// (CancelAt gives back the token of a request that was not sent); Bulkhead
// implements retry.Bulkhead.
// The package does not import retry. Decisions take now, so the simulator
// drives them on virtual time; Bulkhead, which waits, uses timers and is
// tested under testing/synctest.
//
// A nil *Adaptive, *Cubic or *Bulkhead admits everything, as the retry
// loop does for a nil Env.Throttle or Env.Bulkhead (retry.Env).
package throttle

import (
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// Sentinels matched by the typed errors of this package.
var (
	// ErrThrottled: Adaptive rejected a request locally.
	ErrThrottled = errors.New("throttle: rejected locally")
	// ErrRateLimited: Cubic would make the request wait longer than
	// MaxWait.
	ErrRateLimited = errors.New("throttle: rate limited")
	// ErrFull: every slot of a Bulkhead stayed taken.
	ErrFull = errors.New("throttle: bulkhead full")
	// ErrInvalidConfig matches configuration errors.
	ErrInvalidConfig = errors.New("throttle: invalid configuration")
)

// RejectedError is Adaptive's local rejection: with the probability it
// rejected at and the counts it was computed from. Requests counts every
// request of the window, this one and the other local rejections
// included (each of which weighs AdaptiveConfig.RejectionWeight in the
// probability).
type RejectedError struct {
	Probability       float64 // the probability of rejection, in [0, AdaptiveConfig.MaxProbability]
	Requests, Accepts uint64  // the window's requests and the backend's accepts
}

// Error gives the rejection's probability and the counts it came from.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("throttle: rejected locally with probability %.2f: the dependency accepted %d of the last %d requests",
		e.Probability, e.Accepts, e.Requests)
}

// Is matches ErrThrottled.
func (e *RejectedError) Is(target error) bool { return target == ErrThrottled }

// RateError is Cubic's refusal to make a request wait longer than MaxWait.
type RateError struct {
	Wait    time.Duration // the wait the request would have needed
	MaxWait time.Duration // CubicConfig.MaxWait, the longest wait handed out
	Rate    float64       // the current send rate, requests per second
}

// Error gives the rate, the wait it would take and MaxWait.
func (e *RateError) Error() string {
	return fmt.Sprintf("throttle: rate limited to %.2f requests/s after throttling: waiting %v would exceed MaxWait %v",
		e.Rate, e.Wait.Round(time.Millisecond), e.MaxWait)
}

// Is matches ErrRateLimited.
func (e *RateError) Is(target error) bool { return target == ErrRateLimited }

// RetryAfter returns the wait, so that a retry loop may report it.
func (e *RateError) RetryAfter() time.Duration { return e.Wait }

// FullError is a Bulkhead's refusal: Limit calls were in flight for the
// whole wait.
type FullError struct {
	Limit  int           // BulkheadConfig.Limit, the calls in flight
	Waited time.Duration // how long the call waited for a slot (0: BulkheadConfig.MaxWait is 0)
}

// Error says that Limit calls were in flight, and for how long the call waited.
func (e *FullError) Error() string {
	if e.Waited == 0 {
		return fmt.Sprintf("throttle: bulkhead full: %d calls in flight, the limit", e.Limit)
	}
	return fmt.Sprintf("throttle: bulkhead full: %d calls in flight, the limit, for %v", e.Limit, e.Waited)
}

// Is matches ErrFull.
func (e *FullError) Is(target error) bool { return target == ErrFull }

func invalid(field string, value any, want string) error {
	return configerr.Invalid(ErrInvalidConfig, field, value, want)
}
