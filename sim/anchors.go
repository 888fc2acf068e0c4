package sim

import (
	"strconv"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// The anchors below are the policies of Marc Brooker's "Fixing retries with
// token buckets and circuit breakers" (2022), exactly as that post's
// simulation defines them, so that the simulator can be checked against its
// published figures. They are retry.Budget implementations: both decide
// only whether a retry may be sent. They are not safe for concurrent use
// (the simulator runs each run on one goroutine); use package budget and
// package breaker in production.

// RetryBucket is the post's "adaptive retries": a token bucket that every
// first try fills a little and every retry drains. A retry is allowed only
// while the bucket holds more than 1 token, and takes Cost.
//
// The zero RetryBucket is empty and never fills; use NewRetryBucket.
type RetryBucket struct {
	Capacity float64 // the most tokens held (the post: 5)
	Fill     float64 // tokens added per first try (the post: 0.1)
	Cost     float64 // tokens taken by a retry (the post: 1)
	tokens   float64
}

// NewRetryBucket returns the post's bucket: capacity 5, full at the start,
// +0.1 per first try, 1 per retry.
func NewRetryBucket() *RetryBucket {
	return &RetryBucket{Capacity: 5, Fill: 0.1, Cost: 1, tokens: 5}
}

// Tokens returns the tokens the bucket holds.
func (b *RetryBucket) Tokens() float64 { return b.tokens }

// RecordAt adds Fill tokens, up to Capacity, for every first try. The post
// adds them when the first try is sent; a budget hears of it when its
// answer comes back, tens of milliseconds later, which changes nothing in
// the long run.
func (b *RetryBucket) RecordAt(_ time.Time, first, _ bool) {
	if first {
		b.tokens = min(b.tokens+b.Fill, b.Capacity)
	}
}

// AllowRetryAt allows a retry while the bucket holds more than 1 token, and
// takes Cost for it.
func (b *RetryBucket) AllowRetryAt(_ time.Time, _ bool) bool {
	if b.tokens > 1 {
		b.tokens -= b.Cost
		return true
	}
	return false
}

// RetryBreaker is the post's "retry circuit breaker": it counts, from the
// start of the run, first tries (calls) and failed attempts (failures), and
// allows retries only while failures/calls ≤ Threshold. First tries always
// go out.
//
// The zero RetryBreaker has threshold 0: it allows retries only before the
// first failure. Use NewRetryBreaker for the post's.
type RetryBreaker struct {
	Threshold       float64 // the post: 0.1
	calls, failures float64
}

// NewRetryBreaker returns the post's breaker, with a threshold of 10 %.
func NewRetryBreaker() *RetryBreaker { return &RetryBreaker{Threshold: 0.1} }

// RecordAt counts first tries and failed attempts.
func (b *RetryBreaker) RecordAt(_ time.Time, first, success bool) {
	if first {
		b.calls++
	}
	if !success {
		b.failures++
	}
}

// AllowRetryAt allows a retry while failures/calls ≤ Threshold.
func (b *RetryBreaker) AllowRetryAt(_ time.Time, _ bool) bool {
	return b.calls > 0 && b.failures/b.calls <= b.Threshold
}

var (
	_ retry.Budget = (*RetryBucket)(nil)
	_ retry.Budget = (*RetryBreaker)(nil)
)

// The outage anchors of the 2022 post. Its clients retry as soon as an
// attempt fails, without backoff.

// NoRetries makes one attempt per call.
func NoRetries() Policy {
	return Policy{Name: "no retries", MaxAttempts: 1, Immediate: true, Description: "one attempt per call"}
}

// Retries makes up to n retries per call, at once.
func Retries(n int) Policy {
	return Policy{Name: retriesName(n), MaxAttempts: n + 1, Immediate: true,
		Description: "up to " + retriesName(n) + " per call, at once"}
}

func retriesName(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return strconv.Itoa(n) + " retries"
}

// TokenBucket retries while the client's RetryBucket allows it (the post's
// code sets no other limit on retries).
func TokenBucket() Policy {
	return Policy{Name: "token bucket", MaxAttempts: retry.Unlimited, Immediate: true,
		Guards:      func(func() float64) Guards { return Guards{Budget: NewRetryBucket()} },
		Description: "retries at once while the client's bucket holds more than 1 token (capacity 5, starts full, +0.1 per call, 1 per retry)"}
}

// Breaker makes up to 3 retries while the client's RetryBreaker allows them.
func Breaker() Policy {
	return Policy{Name: "breaker", MaxAttempts: 4, Immediate: true,
		Guards:      func(func() float64) Guards { return Guards{Budget: NewRetryBreaker()} },
		Description: "up to 3 retries at once while the client's failed attempts are at most 10 % of its calls since the start"}
}

// OutageAnchors returns the four policies of the 2022 post: no retries,
// 3 retries, token bucket and breaker.
func OutageAnchors() []Policy {
	return []Policy{NoRetries(), Retries(3), TokenBucket(), Breaker()}
}
