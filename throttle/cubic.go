package throttle

import (
	"cmp"
	"math"
	"sync"
	"time"
)

// Defaults of CubicConfig: the constants of the AWS SDKs' adaptive retry
// mode (client rate limiter), and the longest wait it hands out.
const (
	DefaultBeta         = 0.7 // the rate drops to 70 % of the measured rate at each throttling answer
	DefaultScale        = 0.4 // CUBIC's C: how fast the rate grows back
	DefaultSmooth       = 0.8 // weight of the newest half-second in the measured rate
	DefaultMinRate      = 0.5 // requests per second the bucket never drops below
	DefaultCubicMaxWait = 20 * time.Second
)

// measureBucket is the width of the buckets in which the send rate is
// measured (the AWS SDKs use half a second).
const measureBucket = 500 * time.Millisecond

// CubicConfig configures Cubic. The zero value uses the AWS SDKs' constants.
type CubicConfig struct {
	// Beta is the share of the measured send rate kept after a throttling
	// answer. Zero: DefaultBeta (0.7). Accepted: 0 < Beta < 1.
	Beta float64
	// Scale is CUBIC's C constant. Zero: DefaultScale (0.4). Accepted:
	// 0 < Scale ≤ 10.
	Scale float64
	// Smooth is the weight of the last half-second in the measured send
	// rate (an exponential moving average). Zero: DefaultSmooth (0.8).
	// Accepted: 0 < Smooth ≤ 1.
	Smooth float64
	// MinRate is the lowest send rate, in requests per second. Zero:
	// DefaultMinRate (0.5). Accepted: 0 < MinRate ≤ 1e6.
	MinRate float64
	// MaxWait is the longest wait AdmitAt hands out; a request that would
	// wait longer is refused with a *RateError and takes no token. Zero:
	// DefaultCubicMaxWait (20 s, the longest backoff delay). Accepted: 1 ms
	// to 1 h.
	MaxWait time.Duration
}

// Cubic is the client-side rate limiter of the AWS SDKs' adaptive retry
// mode. It does nothing until the first throttling answer; from then on,
// every request takes a token from a bucket that fills at the current send
// rate, and AdmitAt returns how long to wait for it (reserving it, so that
// concurrent callers queue up). Each throttling answer sets the rate to
// Beta times the measured send rate (or the current rate, if lower); each
// other answer moves it along the CUBIC curve
//
//	rate(t) = Scale·(t − K)³ + Wmax,  K = ∛(Wmax·(1 − Beta)/Scale)
//
// where Wmax is the rate at the last throttling answer and t the time since
// it: back up quickly, flat around Wmax, then probing beyond it. The rate
// never exceeds twice the measured send rate. An instant earlier than one
// seen before (the clock stepped back) restarts the refill, the measuring
// bucket and the curve from it.
//
// Cubic is safe for concurrent use (a mutex; it is meant for one
// dependency's traffic, not for a hot loop) and allocates nothing when it
// admits. A nil *Cubic admits everything at once.
type Cubic struct {
	beta, scale, smooth, minRate float64
	maxWait                      time.Duration

	mu       sync.Mutex
	enabled  bool
	rate     float64 // tokens per second
	capacity float64 // max tokens
	tokens   float64 // may go negative: reserved by waiting callers
	refilled time.Time

	measured   float64 // smoothed send rate
	bucket     int64   // measuring bucket number
	bucketSeen bool
	count      float64 // responses in the current measuring bucket

	wmax      float64
	k         float64
	lastThrot time.Time
	started   bool
}

// NewCubic returns a Cubic configured by c, or an error naming the first
// field of c out of range.
func NewCubic(c CubicConfig) (*Cubic, error) {
	c.Beta = cmp.Or(c.Beta, DefaultBeta)
	c.Scale = cmp.Or(c.Scale, DefaultScale)
	c.Smooth = cmp.Or(c.Smooth, DefaultSmooth)
	c.MinRate = cmp.Or(c.MinRate, DefaultMinRate)
	c.MaxWait = cmp.Or(c.MaxWait, DefaultCubicMaxWait)
	switch {
	case !(c.Beta > 0 && c.Beta < 1):
		return nil, invalid("CubicConfig.Beta", c.Beta, "0 < Beta < 1 (0 means the default 0.7)")
	case !(c.Scale > 0 && c.Scale <= 10):
		return nil, invalid("CubicConfig.Scale", c.Scale, "0 < Scale ≤ 10 (0 means the default 0.4)")
	case !(c.Smooth > 0 && c.Smooth <= 1):
		return nil, invalid("CubicConfig.Smooth", c.Smooth, "0 < Smooth ≤ 1 (0 means the default 0.8)")
	case !(c.MinRate > 0 && c.MinRate <= 1e6):
		return nil, invalid("CubicConfig.MinRate", c.MinRate, "0 < MinRate ≤ 1e6 (0 means the default 0.5)")
	case c.MaxWait < time.Millisecond || c.MaxWait > time.Hour:
		return nil, invalid("CubicConfig.MaxWait", c.MaxWait, "1ms ≤ MaxWait ≤ 1h (0 means the default 20s)")
	}
	return &Cubic{beta: c.Beta, scale: c.Scale, smooth: c.Smooth, minRate: c.MinRate, maxWait: c.MaxWait,
		rate: c.MinRate, capacity: 1}, nil
}

// AdmitAt takes a token for a request sent at now and returns how long the
// request must wait before it is sent (0 before the first throttling
// answer, or while tokens are left). When the wait would exceed MaxWait it
// takes nothing and returns a *RateError (matching ErrRateLimited).
func (c *Cubic) AdmitAt(now time.Time) (time.Duration, error) {
	if c == nil {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled {
		return 0, nil
	}
	c.refill(now)
	if c.tokens >= 1 {
		c.tokens--
		return 0, nil
	}
	// With a tiny MinRate the wait is longer than a Duration holds: the
	// conversion would overflow (to a negative wait that passes the
	// check), so it saturates instead.
	wait := time.Duration(math.MaxInt64)
	if ns := (1 - c.tokens) / c.rate * float64(time.Second); ns < math.MaxInt64 {
		wait = time.Duration(ns)
	}
	if wait > c.maxWait {
		return 0, &RateError{Wait: wait, MaxWait: c.maxWait, Rate: c.rate}
	}
	c.tokens--
	return wait, nil
}

// CancelAt hands back the token of a request that AdmitAt admitted but that
// was not sent (retry calls it when the wait would pass the deadline, the
// context ended during it, or the breaker refused the request), so that the
// next request does not wait for it. The bucket never holds more than its
// capacity; before the first throttling answer CancelAt does nothing.
func (c *Cubic) CancelAt(now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled {
		return
	}
	c.refill(now)
	c.tokens = min(c.capacity, c.tokens+1)
}

// RecordAt adapts the rate to a response received at now: throttled is
// true for an overload answer (429, 503, an error classed as throttling).
func (c *Cubic) RecordAt(now time.Time, throttled bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started, c.lastThrot = true, now
	}
	c.measure(now)
	if now.Before(c.lastThrot) {
		// The clock stepped back: the curve goes on from now.
		c.lastThrot = now
	}
	var rate float64
	if throttled {
		w := c.measured
		if c.enabled {
			w = min(w, c.rate)
		}
		c.wmax = w
		c.k = math.Cbrt(c.wmax * (1 - c.beta) / c.scale)
		c.lastThrot = now
		rate = w * c.beta
		c.enabled = true
	} else {
		t := now.Sub(c.lastThrot).Seconds() - c.k
		rate = c.scale*t*t*t + c.wmax
	}
	rate = min(rate, 2*c.measured)
	c.refill(now)
	c.rate = max(rate, c.minRate)
	c.capacity = max(rate, 1)
	c.tokens = min(c.tokens, c.capacity)
}

// RateAt returns the current send rate in requests per second and whether
// the limiter is limiting (it starts limiting at the first throttling
// answer), for observability gauges.
func (c *Cubic) RateAt(now time.Time) (perSecond float64, limiting bool) {
	if c == nil {
		return math.Inf(1), false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate, c.enabled
}

// measure updates the smoothed send rate with one more response.
func (c *Cubic) measure(now time.Time) {
	b := now.UnixNano() / int64(measureBucket)
	if !c.bucketSeen || b < c.bucket {
		// The first response, or the clock stepped back: measure from now.
		c.bucket, c.bucketSeen = b, true
	}
	c.count++
	if b > c.bucket {
		current := c.count / (float64(b-c.bucket) * measureBucket.Seconds())
		c.measured = current*c.smooth + c.measured*(1-c.smooth)
		c.count = 0
		c.bucket = b
	}
}

func (c *Cubic) refill(now time.Time) {
	if c.refilled.IsZero() {
		c.refilled = now
		return
	}
	switch d := now.Sub(c.refilled); {
	case d > 0:
		c.tokens = min(c.capacity, c.tokens+d.Seconds()*c.rate)
		c.refilled = now
	case d < 0:
		// The clock stepped back: refill from now on.
		c.refilled = now
	}
}
