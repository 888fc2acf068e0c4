package sim

import (
	"errors"
	"iter"
	"math/rand/v2"
	"time"
)

// epochUnix is the wall-clock instant that virtual time 0 stands for when
// the engine hands a time.Time to a policy object (2000-01-01T00:00:00Z).
// Policies only ever compare and subtract instants, so any fixed origin
// does; a fixed one keeps runs repeatable.
const epochUnix = 946684800

// ErrInvalidConfig matches the errors of the scenarios' Validate (and of
// their Run and sweeps) for a field out of range; the message names the
// field (as Outage.Clients), its value and what is accepted.
var ErrInvalidConfig = errors.New("sim: invalid configuration")

// simEvent is something that happens at a virtual instant. The engine orders
// events by At and, for equal instants, by the order they were added; what
// Kind, ID and Arg mean is up to the scenario that adds them (typically: what
// happens, to which client or request, with which value).
type simEvent struct {
	At   time.Duration // when it happens, from the start of the run
	Kind uint8         // what happens
	ID   int32         // to whom (a client, a request)
	Arg  int64         // a value carried along (a version, an attempt id)
	seq  uint64
}

// before reports whether a is due before b: earlier, or added earlier.
func (a *simEvent) before(b *simEvent) bool {
	return a.At < b.At || a.At == b.At && a.seq < b.seq
}

// engine is a discrete-event scheduler on virtual time: a priority queue of
// events and a clock that jumps from one event to the next. Nothing waits
// for real; a run of a minute of virtual time takes as long as its events
// take to process.
//
// The zero engine is empty, at time 0, ready to use. Reset empties it and
// keeps its memory, so one engine runs many scenarios without allocating:
// the queue is a 4-ary heap of simEvent values in a slice that only grows.
// An engine is not safe for concurrent use; run one per goroutine.
type engine struct {
	now  time.Duration
	seq  uint64
	heap []simEvent
}

// Reset empties the queue and sets the clock back to 0.
func (e *engine) Reset() {
	e.now, e.seq, e.heap = 0, 0, e.heap[:0]
}

// Events pops the events in order until the queue is empty, those added
// while the caller handles one included: a scenario's loop is
// for ev := range e.Events().
func (e *engine) Events() iter.Seq[simEvent] {
	return func(yield func(simEvent) bool) {
		for {
			ev, ok := e.Pop()
			if !ok || !yield(ev) {
				return
			}
		}
	}
}

// Now returns the virtual time of the event being processed (or of the last
// one popped).
func (e *engine) Now() time.Duration { return e.now }

// Time returns Now as a wall-clock instant, for the methods of policy
// objects that take now time.Time. Virtual time 0 is 2000-01-01 UTC.
func (e *engine) Time() time.Time { return instant(e.now) }

// instant returns the wall-clock instant that virtual time d stands for.
func instant(d time.Duration) time.Time { return time.Unix(epochUnix, int64(d)).UTC() }

// Len returns how many events are queued.
func (e *engine) Len() int { return len(e.heap) }

// Add queues ev. An event dated before Now is moved to Now: time never goes
// backwards.
func (e *engine) Add(ev simEvent) {
	if ev.At < e.now {
		ev.At = e.now
	}
	ev.seq = e.seq
	e.seq++
	h := append(e.heap, ev)
	// Sift up.
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	e.heap = h
}

// Pop removes the earliest event, moves the clock to it and returns it. It
// returns false when the queue is empty.
func (e *engine) Pop() (simEvent, bool) {
	h := e.heap
	n := len(h)
	if n == 0 {
		return simEvent{}, false
	}
	top := h[0]
	n--
	last := h[n]
	h = h[:n]
	if n > 0 {
		// Sift the last element down from the root.
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			end := c + 4
			if end > n {
				end = n
			}
			for j := c + 1; j < end; j++ {
				if h[j].before(&h[m]) {
					m = j
				}
			}
			if !h[m].before(&last) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = last
	}
	e.heap = h
	e.now = top.At
	return top, true
}

// rng is the random source of one run: math/rand/v2's PCG generator,
// seeded, so that the same seed gives the same run. Its zero value is not
// usable; call Seed first. It is not safe for concurrent use.
type rng struct {
	pcg rand.PCG
	r   *rand.Rand
}

// newRand returns a source seeded with seed and stream.
func newRand(seed, stream uint64) *rng {
	r := &rng{}
	r.r = rand.New(&r.pcg)
	r.Seed(seed, stream)
	return r
}

// Seed restarts the source as NewRand(seed, stream) would, without
// allocating.
func (r *rng) Seed(seed, stream uint64) {
	if r.r == nil {
		r.r = rand.New(&r.pcg)
	}
	r.pcg.Seed(seed, stream)
}

// Float64 returns a draw in [0, 1).
func (r *rng) Float64() float64 { return r.r.Float64() }

// Exp returns an exponentially distributed duration with the given mean.
func (r *rng) Exp(mean time.Duration) time.Duration {
	return time.Duration(r.r.ExpFloat64() * float64(mean))
}

// AbsNormal returns |X| for X normally distributed with the given mean and
// standard deviation (the network hop of the 2015 backoff simulation).
func (r *rng) AbsNormal(mean, sd time.Duration) time.Duration {
	d := time.Duration(float64(mean) + r.r.NormFloat64()*float64(sd))
	if d < 0 {
		return -d
	}
	return d
}
