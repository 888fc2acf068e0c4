// Package window holds the lock-free sliding-window counters that budget,
// breaker and throttle share: a ring of counts, each tagged with the epoch
// (bucket number) it belongs to, so that a bucket is reset by the first
// writer of a new epoch instead of by a background goroutine.
//
// Nothing here allocates after construction, reads the clock or takes a
// lock: callers pass the instant (or, for windows counted in calls, the
// epoch) and every method is safe for concurrent use.
package window

import (
	"sync/atomic"
	"time"
)

const (
	countBits = 32
	countMask = 1<<countBits - 1
	tagMask   = 1<<(64-countBits) - 1
	// countCap is where a bucket stops counting: below the largest count
	// by more than any number of Adds racing past the check (each of at
	// most maxAdd), so that a count never carries into the epoch bits.
	countCap = countMask - 1<<24
	maxAdd   = 1 << 8
	// lagLimit bounds how far ahead of an event its bucket's epoch may be,
	// in a ring made with NewRing, for the event to count as late (and be
	// dropped) rather than the bucket as stale (and be reset).
	lagLimit = 1 << 24
)

// Ring counts events in a fixed number of buckets, each holding the count of
// one epoch. An epoch is any increasing bucket number: the index of a time
// bucket (see Counter) or of a block of calls (breaker's count window).
//
// Each bucket is one 64-bit word: the low 32 bits hold the count, the
// high 32 bits the epoch modulo 2^32. A bucket counts up to 2^32 − 2^24
// events and then stays there (saturates), so that concurrent Adds never
// carry into the epoch bits. The
// first Add of a new epoch replaces the bucket's content with a
// compare-and-swap; later Adds of the same epoch are a single atomic add.
// Sum counts the buckets whose epoch is one of the last len epochs. Two
// approximations follow: a bucket left untouched for nearly a multiple of
// 2^32 epochs may be misread (136 years of one-second buckets, 49 days of
// one-millisecond buckets, without a single event in that bucket), and an
// Add that races with the reset of its bucket by an event a whole window
// later may land in the newer epoch.
//
// The zero Ring is unusable; make one with NewRing or NewClockRing.
type Ring struct {
	slots []atomic.Uint64
	lag   uint64 // an event whose bucket holds an epoch less than lag ahead is dropped
}

// NewRing returns a ring of n buckets (n ≥ 1) for epochs that only go up,
// such as blocks of calls numbered by a counter: an event whose bucket
// already holds a later epoch arrived late (its caller was descheduled
// while others counted) and is dropped.
func NewRing(n int) Ring {
	if n < 1 {
		n = 1
	}
	return Ring{slots: make([]atomic.Uint64, n), lag: lagLimit}
}

// NewClockRing returns a ring of n buckets (n ≥ 1) for the epochs of a
// Clock, which follow a wall clock that may step back (an NTP correction,
// callers passing instants older than others did). An event whose bucket
// holds a later epoch replaces it, as one whose bucket holds an earlier
// epoch does: after the clock steps back by more than the window, counting
// starts again from the stepped clock, instead of dropping every event
// until the clock catches up with the instants counted before the step.
// The price: an event a whole window older than the newest one (a caller
// that held its instant for that long) empties its bucket, losing at most
// one bucket of counts.
func NewClockRing(n int) Ring {
	r := NewRing(n)
	r.lag = 0
	return r
}

// Len returns the number of buckets.
func (r *Ring) Len() int { return len(r.slots) }

// slot returns the bucket of epoch e: e modulo Len, taken as a floor
// modulo so that consecutive epochs take consecutive buckets across 0
// (uint64(e) % Len would not, unless Len divides 2^64).
func (r *Ring) slot(e int64) *atomic.Uint64 {
	i := e % int64(len(r.slots))
	if i < 0 {
		i += int64(len(r.slots))
	}
	return &r.slots[i]
}

// Add adds n to the bucket of epoch e. An event older than the window (its
// bucket already holds a later epoch) is dropped by a ring made with
// NewRing, and replaces the bucket's content in one made with
// NewClockRing.
func (r *Ring) Add(e int64, n uint64) {
	s := r.slot(e)
	tag := uint64(e) & tagMask
	for {
		w := s.Load()
		switch t := w >> countBits; {
		case t == tag:
			c := w & countMask
			if n <= maxAdd && c+n <= countCap {
				s.Add(n)
				return
			}
			// A large n, or a bucket at its cap: saturate rather than
			// carry into the epoch bits.
			if c >= countCap {
				return
			}
			if s.CompareAndSwap(w, tag<<countBits|c+min(n, countCap-c)) {
				return
			}
			continue
		case w&countMask != 0 && (t-tag)&tagMask < r.lag:
			// The bucket holds a later epoch: this event is at least a
			// whole window old.
			return
		}
		if s.CompareAndSwap(w, tag<<countBits|min(n, countCap)) {
			return
		}
	}
}

// Sub takes back n events that Add counted in epoch e: it subtracts n
// from the bucket of e if the bucket still holds e and at least n, and
// does nothing once the bucket has moved on to another epoch (the events
// have left the window).
func (r *Ring) Sub(e int64, n uint64) {
	s := r.slot(e)
	tag := uint64(e) & tagMask
	for {
		w := s.Load()
		if w>>countBits != tag || w&countMask < n {
			return
		}
		if s.CompareAndSwap(w, w-n) {
			return
		}
	}
}

// Sum returns the total of the buckets of epochs e−Len()+1 … e.
func (r *Ring) Sum(e int64) uint64 { return r.SumLast(e, len(r.slots)) }

// SumLast returns the total of the buckets of the last k epochs,
// e−k+1 … e (k at most Len: more counts the whole ring).
func (r *Ring) SumLast(e int64, k int) uint64 {
	tag := uint64(e) & tagMask
	n := uint64(min(max(k, 0), len(r.slots)))
	var sum uint64
	for i := range r.slots {
		w := r.slots[i].Load()
		if (tag-w>>countBits)&tagMask < n {
			sum += w & countMask
		}
	}
	return sum
}

// Reset empties every bucket. Adds that run concurrently with Reset may
// survive it.
func (r *Ring) Reset() {
	for i := range r.slots {
		r.slots[i].Store(0)
	}
}

// Clock maps instants to the epochs of buckets of a fixed width. It caches
// the last epoch it computed, so that the common case (an instant in the
// same bucket as the previous one) costs a multiplication instead of a
// 64-bit division.
//
// Instants are taken from time.Time.UnixNano, so they must lie between the
// years 1678 and 2262; virtual clocks should start from a real date.
type Clock struct {
	width int64
	last  atomic.Int64
}

// NewClock returns a clock of buckets of width d (at least 1 ns).
func NewClock(d time.Duration) Clock {
	if d < 1 {
		d = 1
	}
	return Clock{width: int64(d)}
}

// Epoch returns the number of the bucket that holds now.
func (c *Clock) Epoch(now time.Time) int64 {
	ns := now.UnixNano()
	e := c.last.Load()
	if lo := e * c.width; ns >= lo && ns-lo < c.width {
		return e
	}
	e = ns / c.width
	if ns < 0 && ns%c.width != 0 {
		e-- // floor, not truncation, before 1970
	}
	c.last.Store(e)
	return e
}

// Counter counts events over a sliding time window: Buckets buckets of
// Window/Buckets each, so that the window slides in steps of one bucket.
// When the clock steps back by more than the window, it counts again from
// the stepped clock (see NewClockRing). Safe for concurrent use and free of
// allocations and locks.
type Counter struct {
	clock Clock
	ring  Ring
}

// NewCounter returns a counter over window split into buckets buckets.
func NewCounter(window time.Duration, buckets int) *Counter {
	c := &Counter{}
	c.Init(window, buckets)
	return c
}

// Init prepares a Counter embedded in another struct.
func (c *Counter) Init(window time.Duration, buckets int) {
	if buckets < 1 {
		buckets = 1
	}
	c.clock = NewClock(window / time.Duration(buckets))
	c.ring = NewClockRing(buckets)
}

// Add counts n events at now.
func (c *Counter) Add(now time.Time, n uint64) { c.ring.Add(c.clock.Epoch(now), n) }

// Sum returns the events counted in the window that ends at now.
func (c *Counter) Sum(now time.Time) uint64 { return c.ring.Sum(c.clock.Epoch(now)) }

// Epoch returns the bucket number of now, for AddEpoch and SumEpoch when
// several counters share one instant.
func (c *Counter) Epoch(now time.Time) int64 { return c.clock.Epoch(now) }

// AddEpoch is Add with the epoch already computed by Epoch.
func (c *Counter) AddEpoch(e int64, n uint64) { c.ring.Add(e, n) }

// SubEpoch takes back n events that AddEpoch counted in epoch e (see
// Ring.Sub).
func (c *Counter) SubEpoch(e int64, n uint64) { c.ring.Sub(e, n) }

// SumEpoch is Sum with the epoch already computed by Epoch.
func (c *Counter) SumEpoch(e int64) uint64 { return c.ring.Sum(e) }
