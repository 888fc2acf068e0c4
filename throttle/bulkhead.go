package throttle

import (
	"cmp"
	"context"
	"time"
)

// DefaultLimit is a Bulkhead's default limit of concurrent calls
// (Resilience4j's bulkhead uses 25 and no wait).
const DefaultLimit = 25

// BulkheadConfig configures a Bulkhead. The zero value allows 25 calls at
// once and does not wait for a slot.
type BulkheadConfig struct {
	// Limit is the most calls in flight at once. Zero: DefaultLimit (25).
	// Accepted: 1 to 1e6.
	Limit int
	// MaxWait is how long Acquire waits for a free slot before it gives
	// up with a *FullError. Zero: no wait. Accepted: 0 to 1 h.
	MaxWait time.Duration
}

// Bulkhead limits how many calls run at once against one dependency, so
// that a slow dependency holds at most Limit goroutines (and connections)
// of the caller instead of all of them. Every Acquire that returns nil must
// be followed by one Release.
//
// Bulkhead is safe for concurrent use. Acquiring a free slot is one
// non-blocking channel send and allocates nothing; waiting uses a timer. A
// nil *Bulkhead admits everything.
type Bulkhead struct {
	slots   chan struct{}
	maxWait time.Duration
}

// NewBulkhead returns a Bulkhead configured by c, or an error naming the
// first field of c out of range.
func NewBulkhead(c BulkheadConfig) (*Bulkhead, error) {
	c.Limit = cmp.Or(c.Limit, DefaultLimit)
	switch {
	case c.Limit < 1 || c.Limit > 1e6:
		return nil, invalid("BulkheadConfig.Limit", c.Limit, "1 ≤ Limit ≤ 1e6 (0 means the default 25)")
	case c.MaxWait < 0 || c.MaxWait > time.Hour:
		return nil, invalid("BulkheadConfig.MaxWait", c.MaxWait, "0 ≤ MaxWait ≤ 1h (0 means no wait)")
	}
	return &Bulkhead{slots: make(chan struct{}, c.Limit), maxWait: c.MaxWait}, nil
}

// Acquire takes a slot, waiting up to MaxWait for one to be released. It
// returns nil with the slot taken, a *FullError (matching ErrFull) when no
// slot came free in time, or ctx's error when ctx ended first. ctx bounds
// only the wait: a free slot is taken at once, even for an ended ctx. When
// ctx ends (or MaxWait runs out) at the instant a slot is released, either
// outcome may come, and the slot is accounted once: taken by this caller
// if it is told nil, left for the next one otherwise. Waiters are not
// promised an order.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	if b == nil {
		return nil
	}
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	if b.maxWait <= 0 {
		return &FullError{Limit: cap(b.slots)}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(b.maxWait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return &FullError{Limit: cap(b.slots), Waited: b.maxWait}
	}
}

// Release frees the slot taken by a successful Acquire. Releasing more
// than was acquired is a bug in the caller: Release panics when no slot is
// taken. Slots carry no owner, so a second Release for one Acquire while
// other calls hold slots cannot be told from theirs: it frees one of their
// slots, and one more call than Limit may then run until they release.
func (b *Bulkhead) Release() {
	if b == nil {
		return
	}
	select {
	case <-b.slots:
	default:
		panic("throttle: Bulkhead.Release without a matching Acquire")
	}
}

// InUse returns the number of slots taken, for observability gauges.
func (b *Bulkhead) InUse() int {
	if b == nil {
		return 0
	}
	return len(b.slots)
}

// Limit returns the most calls allowed at once.
func (b *Bulkhead) Limit() int {
	if b == nil {
		return 0
	}
	return cap(b.slots)
}
