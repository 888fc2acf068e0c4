package hedge

import (
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// horizon counts events over the budget's horizon, which slides in
// hedgerBuckets steps: a ring of one step more than it sums, so that a
// caller whose instant is a step behind the others' (it read the clock as
// they moved on) still finds its own horizon whole: the step that the
// others' replaced is kept until the next. Safe for concurrent use,
// lock-free.
type horizon struct {
	clock window.Clock
	ring  window.Ring
}

func (c *horizon) init(w time.Duration) {
	c.clock = window.NewClock(w / hedgerBuckets)
	c.ring = window.NewClockRing(hedgerBuckets + 1)
}

func (c *horizon) epoch(now time.Time) int64 { return c.clock.Epoch(now) }
func (c *horizon) add(e int64)               { c.ring.Add(e, 1) }
func (c *horizon) sub(e int64)               { c.ring.Sub(e, 1) }

// sum returns the events of the horizon that ends with step e.
func (c *horizon) sum(e int64) uint64 { return c.ring.SumLast(e, hedgerBuckets) }
