package hedge

import (
	"math"
	"math/bits"
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// The estimator's histogram: latencies from 2^minExp ns (1.024 µs) to
// 2^maxExp ns (about 275 s) fall in subBuckets buckets per power of two,
// each 1/8 of its octave wide (12.5 % of its lower bound at most, so a
// quantile read with interpolation inside a bucket is off by a few per
// cent); shorter ones in the first bucket, longer ones in the last.
const (
	minExp     = 10
	maxExp     = 38
	subBits    = 3
	subBuckets = 1 << subBits
	nBuckets   = (maxExp-minExp)*subBuckets + 2
	// estimatorSlots is how many steps the window slides in: a latency
	// stays counted for between 3/4 of the window and the whole of it.
	estimatorSlots = 4
)

// Estimator estimates quantiles of the latencies of the last Window: a
// histogram of logarithmic buckets (8 per power of two, from 1 µs to
// 275 s), each bucket a ring of counts that slides in steps of a quarter
// of the window. It answers in constant memory (226 buckets of 4 words,
// about 9 KiB, whatever the traffic), Add costs one atomic add in the
// common case, and Quantile scans the buckets once (about a microsecond):
// Hedger reads it at most 64 times per window, not per call.
//
// A quantile is exact to the bucket (within 12.5 % of the latency) and
// linearly interpolated inside it. The window's edges follow
// internal/window's counters: a latency counts from its instant until 3/4
// to 1 window later, as its quarter slides out. When the clock steps back
// (an NTP correction), the latencies observed on the stepped clock are
// counted from then on and those of the instants after it leave the
// estimate, as in the Hedger's other counters, rather than every new
// latency of a bucket being dropped until the clock catches up.
//
// The zero Estimator is not usable; make one with NewEstimator. It is safe
// for concurrent use, lock-free, and allocates nothing after NewEstimator.
type Estimator struct {
	clock   window.Clock
	buckets [nBuckets]window.Ring
}

// NewEstimator returns an estimator over the latencies of the last window
// (at least 4 ns; Hedger uses Config.Window, 10 s by default).
func NewEstimator(w time.Duration) *Estimator {
	e := &Estimator{clock: window.NewClock(max(w/estimatorSlots, 1))}
	for i := range e.buckets {
		e.buckets[i] = window.NewClockRing(estimatorSlots)
	}
	return e
}

// bucketOf returns the histogram bucket of latency d.
func bucketOf(d time.Duration) int {
	if d < 1<<minExp {
		return 0
	}
	if d >= 1<<maxExp {
		return nBuckets - 1
	}
	k := bits.Len64(uint64(d)) - 1 // 2^k ≤ d < 2^(k+1)
	sub := int(uint64(d)>>(k-subBits)) & (subBuckets - 1)
	return 1 + (k-minExp)*subBuckets + sub
}

// bounds returns the latencies that bucket i holds: [lo, hi).
func bounds(i int) (lo, hi time.Duration) {
	switch {
	case i <= 0:
		return 0, 1 << minExp
	case i >= nBuckets-1:
		return 1 << maxExp, 1 << maxExp
	}
	k := minExp + (i-1)/subBuckets
	sub := (i - 1) % subBuckets
	step := time.Duration(1) << (k - subBits)
	lo = time.Duration(1)<<k + time.Duration(sub)*step
	return lo, lo + step
}

// AddAt counts latency d, measured at now.
func (e *Estimator) AddAt(now time.Time, d time.Duration) {
	e.buckets[bucketOf(d)].Add(e.clock.Epoch(now), 1)
}

// QuantileAt returns the q-quantile (0 < q < 1: 0.95 for the 95th
// percentile) of the latencies in the window that ends at now, and how
// many latencies the window holds. With none it returns 0, 0. A quantile
// that falls among latencies of 275 s or more is reported as 275 s. A q
// outside (0, 1) is clamped: 0 or below (or NaN) gives the bottom of the
// lowest latency's bucket, 1 or above the top of the highest's.
func (e *Estimator) QuantileAt(now time.Time, q float64) (time.Duration, int) {
	return e.quantile(now, q, estimatorSlots)
}

// RecentQuantileAt is QuantileAt over the newest half of the window only
// (the latencies of the last quarter to half of it): fewer latencies, but
// no older than that, for a caller that must follow a change sooner.
func (e *Estimator) RecentQuantileAt(now time.Time, q float64) (time.Duration, int) {
	return e.quantile(now, q, estimatorSlots/2)
}

// quantile is QuantileAt over the newest k steps of the window.
func (e *Estimator) quantile(now time.Time, q float64, k int) (time.Duration, int) {
	ep := e.clock.Epoch(now)
	var counts [nBuckets]uint64
	var n uint64
	for i := range e.buckets {
		c := e.buckets[i].SumLast(ep, k)
		counts[i] = c
		n += c
	}
	if n == 0 {
		return 0, 0
	}
	switch {
	case !(q > 0): // NaN too
		q = 0
	case q >= 1:
		// The highest latency: the top of its bucket (the rank below
		// would be past the last one).
		for i := nBuckets - 1; i > 0; i-- {
			if counts[i] != 0 {
				_, hi := bounds(i)
				return hi, int(n)
			}
		}
		_, hi := bounds(0)
		return hi, int(n)
	}
	// The rank of the quantile among n sorted latencies, counted from 0:
	// the latency below which a share q of them lies.
	rank := q * float64(n)
	var below float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if below+float64(c) > rank || i == nBuckets-1 {
			lo, hi := bounds(i)
			frac := (rank - below) / float64(c)
			d := float64(lo) + frac*float64(hi-lo)
			return time.Duration(math.Round(d)), int(n)
		}
		below += float64(c)
	}
	_, hi := bounds(nBuckets - 1)
	return hi, int(n)
}
