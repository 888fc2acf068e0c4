package budget

import (
	"cmp"
	"math"
	"time"
)

// Defaults of BucketConfig: the retry quota of the AWS SDKs' standard and
// adaptive retry modes, in their 2026 retry behaviour ("Announcing updated
// retry behavior for AWS SDKs and Tools", AWS Developer Tools Blog, 2026;
// the SDKs and Tools Reference Guide, "Retry behavior"): a retry costs 14
// tokens, a retry after a throttling answer 5, a timeout no more than any
// other error.
const (
	DefaultCapacity         = 500
	DefaultRetryCost        = 14
	DefaultThrottleCost     = 5
	DefaultNoRetryIncrement = 1
)

// BucketConfig configures a Bucket. The zero value is the AWS SDKs' retry
// quota of 2026: 500 tokens, a retry costs 14 (5 after a throttling
// answer), a success at the first attempt adds 1.
type BucketConfig struct {
	// Capacity is the number of tokens the bucket starts with and never
	// exceeds. Zero: DefaultCapacity (500). Accepted: 1 to 1e9.
	Capacity int
	// RetryCost is what a retry takes from the bucket, and what a
	// successful retry gives back. Zero: DefaultRetryCost (14). Accepted:
	// 1 to Capacity.
	RetryCost int
	// ThrottleCost is what a retry after a throttling answer (429, 503, an
	// error the retry loop classes ClassThrottled) takes: a server that said
	// "later" is worth more retries than one that failed. Zero:
	// DefaultThrottleCost (5), or RetryCost where that is lower, so that
	// a throttled retry never costs more than another by default.
	// Accepted: 1 to Capacity.
	ThrottleCost int
	// TimeoutCost is what a retry after a timed-out attempt takes. Zero:
	// RetryCost (the 2026 behaviour charges timeouts as other errors).
	// Accepted: 1 to Capacity.
	TimeoutCost int
	// NoRetryIncrement is what a success at the first attempt adds. Zero:
	// DefaultNoRetryIncrement (1). Accepted: 1 to Capacity.
	NoRetryIncrement int
}

// Bucket is a token-bucket retry budget, the AWS SDKs' retry quota: every
// retry takes RetryCost tokens (ThrottleCost after a throttling answer,
// TimeoutCost after a timeout) and is refused when the bucket holds fewer;
// a successful retry gives RetryCost back and a success at the first
// attempt adds NoRetryIncrement, up to Capacity. Nothing else refills it: a
// dependency that keeps failing gets Capacity/RetryCost retries (35 with
// the defaults; 100 if it keeps throttling) and then none until calls
// succeed again.
//
// The retry loop tells the bucket a retry's class through
// AllowRetryClassAt (retry.ClassBudget); AllowRetryAt, for callers that do
// not know it, charges RetryCost. The AWS SDKs give a successful retry back
// exactly what it took; the loop does not say which retry succeeded, so
// Bucket gives back RetryCost.
//
// Bucket is lock-free, safe for concurrent use and allocates nothing. A nil
// *Bucket allows every retry.
type Bucket struct {
	capacity, cost, throttleCost, timeoutCost, increment int64
	tokens                                               tokens
}

// NewBucket returns a full Bucket configured by c, or an error naming the
// first field of c out of range.
func NewBucket(c BucketConfig) (*Bucket, error) {
	c.Capacity = cmp.Or(c.Capacity, DefaultCapacity)
	c.RetryCost = cmp.Or(c.RetryCost, DefaultRetryCost)
	c.ThrottleCost = cmp.Or(c.ThrottleCost, min(DefaultThrottleCost, c.RetryCost))
	c.TimeoutCost = cmp.Or(c.TimeoutCost, c.RetryCost)
	c.NoRetryIncrement = cmp.Or(c.NoRetryIncrement, DefaultNoRetryIncrement)
	switch {
	case c.Capacity < 1 || c.Capacity > 1e9:
		return nil, invalid("BucketConfig.Capacity", c.Capacity, "1 ≤ Capacity ≤ 1e9 (0 means the default 500)")
	case c.RetryCost < 1 || c.RetryCost > c.Capacity:
		return nil, invalid("BucketConfig.RetryCost", c.RetryCost, "1 ≤ RetryCost ≤ Capacity (0 means the default 14)")
	case c.ThrottleCost < 1 || c.ThrottleCost > c.Capacity:
		return nil, invalid("BucketConfig.ThrottleCost", c.ThrottleCost, "1 ≤ ThrottleCost ≤ Capacity (0 means the default 5, or RetryCost if lower)")
	case c.TimeoutCost < 1 || c.TimeoutCost > c.Capacity:
		return nil, invalid("BucketConfig.TimeoutCost", c.TimeoutCost, "1 ≤ TimeoutCost ≤ Capacity (0 means RetryCost)")
	case c.NoRetryIncrement < 1 || c.NoRetryIncrement > c.Capacity:
		return nil, invalid("BucketConfig.NoRetryIncrement", c.NoRetryIncrement, "1 ≤ NoRetryIncrement ≤ Capacity (0 means the default 1)")
	}
	b := &Bucket{capacity: int64(c.Capacity), cost: int64(c.RetryCost), throttleCost: int64(c.ThrottleCost),
		timeoutCost: int64(c.TimeoutCost), increment: int64(c.NoRetryIncrement)}
	b.tokens.Store(b.capacity)
	return b, nil
}

// AllowRetryAt takes the cost of one retry (TimeoutCost when timeout is
// true, RetryCost otherwise) and reports true, or reports false and takes
// nothing when the bucket holds less than the cost. now is not used: the
// bucket refills only through successes.
func (b *Bucket) AllowRetryAt(now time.Time, timeout bool) bool {
	return b.AllowRetryClassAt(now, false, timeout)
}

// AllowRetryClassAt is AllowRetryAt for a retry whose class is known:
// throttled charges ThrottleCost (before TimeoutCost: a throttling answer
// is not a timeout). It implements retry.ClassBudget.
func (b *Bucket) AllowRetryClassAt(now time.Time, throttled, timeout bool) bool {
	if b == nil {
		return true
	}
	cost := b.costOf(throttled, timeout)
	for {
		t := b.tokens.Load()
		if t < cost {
			return false
		}
		if b.tokens.CompareAndSwap(t, t-cost) {
			return true
		}
	}
}

// CancelRetryAt gives back the cost of a retry that AllowRetryClassAt (or
// AllowRetryAt) granted with the same flags but the caller did not send
// (its breaker refused it, its caller left during the wait), up to
// Capacity. It implements retry.BudgetCanceller. Call it once per retry
// not sent: grants carry no identity, so a second call gives the cost back
// again.
func (b *Bucket) CancelRetryAt(granted time.Time, throttled, timeout bool) {
	if b == nil {
		return
	}
	b.tokens.refill(b.costOf(throttled, timeout), b.capacity)
}

// costOf returns what a retry of that kind takes.
func (b *Bucket) costOf(throttled, timeout bool) int64 {
	switch {
	case throttled:
		return b.throttleCost
	case timeout:
		return b.timeoutCost
	}
	return b.cost
}

// RecordAt refills the bucket after a success: RetryCost for a successful
// retry, NoRetryIncrement for a success at the first attempt. Failures
// change nothing (their retries paid already).
func (b *Bucket) RecordAt(now time.Time, first, success bool) {
	if b == nil || !success {
		return
	}
	n := b.increment
	if !first {
		n = b.cost
	}
	b.tokens.refill(n, b.capacity)
}

// Level returns the tokens in the bucket. A nil *Bucket returns +Inf.
func (b *Bucket) Level() float64 {
	if b == nil {
		return math.Inf(1)
	}
	return float64(b.tokens.Load())
}
