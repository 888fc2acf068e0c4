// Package breaker is a circuit breaker: it stops calling a dependency that
// keeps failing, so that the dependency can recover and callers fail fast
// instead of waiting on it, and it probes it again after a while.
//
// A Breaker is closed (calls pass and their outcomes are counted), open
// (calls are refused with an *OpenError that says when the next probe may
// go) or half-open (a few probes pass; when they all succeed the breaker
// closes, when one fails it opens again for longer). It trips on a failure
// ratio over a time or count window once enough calls were made, on
// consecutive failures, and on a ratio of slow calls.
//
// Three ways to use it:
//
//	b, err := breaker.New(breaker.Config{Name: "payments"})
//	// 1. a closure
//	err = b.Execute(ctx, func(ctx context.Context) error { return call(ctx) })
//	// 2. two steps, for code that is not a closure
//	p, err := b.Allow()
//	if err == nil { p.Done(call(ctx)) }
//	// 3. through retry, which calls AllowAt and DoneAt around each attempt
//	err = retry.Do(ctx, retry.Policy{Env: &retry.Env{Breaker: b}}, call)
//
// Decisions are functions of the instant they are given (AllowAt, DoneAt,
// StateAt take now), so the simulator drives breakers on virtual time, and
// there is no background goroutine: an open breaker becomes half-open when
// it is next asked after its open period. An instant before the start of
// the open period (the clock stepped back) starts the period again from
// that instant, so the breaker stays open for the period's length on the
// stepped clock.
//
// The closed path is lock-free: AllowAt is one atomic load, and recording a
// success is one atomic add (plus a load), allocating nothing. Transitions
// take a lock; hooks and observers are called after it is released.
package breaker

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/internal/window"
)

// State is a breaker's state.
type State uint8

const (
	// Closed: calls pass and are counted.
	Closed State = iota
	// Open: calls are refused until the open period ends.
	Open
	// HalfOpen: a few probes pass; their outcomes close or reopen it.
	HalfOpen
)

// String returns "closed", "open" or "half_open", as used in events.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return "unknown"
}

// The state word: generation << genShift | state. Every transition starts
// a new generation, so a ticket (the word seen by AllowAt) tells DoneAt
// whether the state it was issued in is still the current one; outcomes
// from an earlier state are dropped. A half-open ticket also carries its
// probe's id (idMask: from 1, unique among the generation's probes whose
// outcome has not come; the word's id bits are 0), so that each probe's
// outcome counts once however often it is reported, even beside other
// probes of the same generation. Closed tickets carry no id: the closed
// path stays one atomic load and one add. With Config.CheckTickets, a
// closed breaker's state bits are checkedClosed instead of Closed: the
// closed fast paths (which compare them with Closed) then step aside, and
// closed tickets get ids as half-open ones do.
const (
	stateMask = 3
	idShift   = 2
	idBits    = 24 // ids wrap after 2^24-1, skipping those in flight
	maxID     = 1<<idBits - 1
	idMask    = maxID << idShift
	genShift  = idShift + idBits
	genOne    = 1 << genShift
)

// checkedClosed is the state bits of a closed breaker whose
// Config.CheckTickets is set; stateOf reads them as Closed.
const checkedClosed = 3

// stateOf returns the state of word w.
func stateOf(w uint64) State {
	if s := State(w & stateMask); s != checkedClosed {
		return s
	}
	return Closed
}

// A probe that takes a slot always finds an id: at most HalfOpenProbes
// (≤ 1e6) hold one at a time.
const _ uint = maxID - 1e6

// Breaker is a circuit breaker; see the package documentation. Build it
// with New: the zero Breaker is not usable. A nil *Breaker allows every
// call and records nothing, as a nil throttle or budget does, so that a
// guard left unset needs no branch at its call sites. It is safe for
// concurrent use.
type Breaker struct {
	word   atomic.Uint64 // read on every call
	consec atomic.Int64  // consecutive failures while closed
	_      [48]byte      // keep the counters below off word's cache line

	// Closed-state counts: a time window (clock + rings indexed by time
	// epoch) or a count window (seq + rings indexed by seq/block).
	seq      atomic.Uint64
	_        [56]byte
	clock    window.Clock
	calls    window.Ring // time window only; a count window counts with seq
	failures window.Ring
	slow     window.Ring
	block    uint64 // calls per count-window bucket; 0 for a time window

	open atomic.Pointer[period] // the current or last open period

	mu      sync.Mutex
	trips   int   // consecutive trips, reset when the breaker closes
	probing int   // half-open probes in flight that hold a slot
	probeOK int   // half-open probes that succeeded
	probeAt int64 // UnixNano at which the last probe slot was taken
	// pending holds the ids of the generation's half-open tickets whose
	// outcome has not come: true for a probe that holds a slot, false
	// for a first attempt that RetriesOnly let through. An outcome counts
	// only if its id is there, and takes it out.
	pending map[uint32]bool
	lastID  uint32 // the id last given in this generation
	twice   int    // outcomes dropped because their ticket's had come (DoubleReports)

	s    Config
	kind windowKind
}

// windowKind is how a Breaker counts the calls its ratios are taken over,
// fixed by New from the Config.
type windowKind uint8

const (
	// noWindow: neither ratio is on (FailureRatio Disabled, no SlowCall),
	// so successes need no counting.
	noWindow windowKind = iota
	// timeWindow: calls are counted in time buckets over Config.Window;
	// they need the clock.
	timeWindow
	// countWindow: calls are counted over the last Config.WindowCalls.
	countWindow
)

// ratioOn reports whether the failure ratio can trip the breaker.
func (b *Breaker) ratioOn() bool { return b.s.FailureRatio != Disabled }

// slowOn reports whether slow calls are counted (Config.SlowCall set).
func (b *Breaker) slowOn() bool { return b.s.SlowCall > 0 }

// clockless reports whether a fast success needs neither the clock nor its
// duration (no time window, no SlowCall), so that Execute and Permit skip
// time.Now.
func (b *Breaker) clockless() bool { return b.kind != timeWindow && !b.slowOn() }

// period is one open period, published atomically so that refusals need no
// lock.
type period struct {
	from  int64 // UnixNano at which the period started
	until int64 // UnixNano at which the breaker becomes half-open
	trips int
	cause error
	// last is the refusal handed out most recently: refusals within the
	// same millisecond share it, so that an open breaker under load
	// refuses without allocating. It is never modified once published.
	last atomic.Pointer[OpenError]
}

// at returns the open period as it stands at ns (UnixNano): p itself, or,
// when ns is before p started (the clock stepped back), a period of the same
// length starting at ns, which replaces p, so that the breaker stays open
// for its open period on the stepped clock rather than until the clock
// reaches p's end.
func (b *Breaker) at(p *period, ns int64) *period {
	if ns >= p.from {
		return p
	}
	q := &period{from: ns, until: ns + (p.until - p.from), trips: p.trips, cause: p.cause}
	if b.open.CompareAndSwap(p, q) {
		return q
	}
	return b.at(b.open.Load(), ns)
}

// refusal returns the *OpenError for a call refused at ns (UnixNano) during
// p, its Wait rounded up to the millisecond.
func (b *Breaker) refusal(p *period, ns int64) *OpenError {
	ms := (p.until - ns + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	wait := time.Duration(ms) * time.Millisecond
	if e := p.last.Load(); e != nil && e.Wait == wait {
		return e
	}
	e := &OpenError{Name: b.s.Name, State: Open, Wait: wait, Trips: p.trips, Cause: p.cause}
	p.last.Store(e)
	return e
}

// New returns a closed Breaker configured by s, or an error naming the first
// field of s out of range.
func New(s Config) (*Breaker, error) {
	if err := s.resolve(); err != nil {
		return nil, err
	}
	b := &Breaker{s: s}
	switch {
	case s.WindowCalls > 0:
		b.kind = countWindow
	case b.ratioOn() || b.slowOn():
		b.kind = timeWindow
	}
	if b.kind == countWindow {
		b.block = uint64((s.WindowCalls + maxCountBuckets - 1) / maxCountBuckets)
		n := (s.WindowCalls + int(b.block) - 1) / int(b.block)
		b.failures, b.slow = window.NewRing(n), window.NewRing(n)
	} else {
		b.clock = window.NewClock(s.Window / timeBuckets)
		b.calls, b.failures, b.slow = window.NewClockRing(timeBuckets), window.NewClockRing(timeBuckets), window.NewClockRing(timeBuckets)
	}
	b.word.Store(genOne | b.closedBits())
	return b, nil
}

// closedBits returns the state bits of the closed state: checkedClosed
// with Config.CheckTickets.
func (b *Breaker) closedBits() uint64 {
	if b.s.CheckTickets {
		return checkedClosed
	}
	return uint64(Closed)
}

// Name returns the breaker's name.
func (b *Breaker) Name() string {
	if b == nil {
		return ""
	}
	return b.s.Name
}

// AllowAt asks whether a call may be made at now; retry is true for the
// attempts of a retry loop after the first. It returns a ticket to pass to
// DoneAt with the call's outcome, or an *OpenError (matching ErrOpen) when
// the breaker refuses. Closed, it is one atomic load.
func (b *Breaker) AllowAt(now time.Time, retry bool) (ticket uint64, err error) {
	if b == nil {
		return 0, nil
	}
	w := b.word.Load()
	if w&stateMask == uint64(Closed) {
		return w, nil
	}
	return b.allowNotClosed(now, w, retry)
}

// allowNotClosed is AllowAt in the open and half-open states, and in the
// closed state with Config.CheckTickets.
func (b *Breaker) allowNotClosed(now time.Time, w uint64, retry bool) (uint64, error) {
	if w&stateMask == checkedClosed {
		return b.issueClosed(w), nil
	}
	if b.s.RetriesOnly && !retry {
		return b.passFirst(w), nil
	}
	return b.allowSlow(context.Background(), now, w, retry)
}

// passFirst returns the ticket of a first attempt that RetriesOnly lets
// through a breaker that was not closed in word w: w itself while open
// (its outcome is dropped), or, half-open, a ticket with an id but no
// slot, whose outcome counts as a probe's, once.
func (b *Breaker) passFirst(w uint64) uint64 {
	if State(w&stateMask) != HalfOpen {
		return w
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w = b.word.Load()
	if State(w&stateMask) != HalfOpen {
		return w
	}
	if len(b.pending) >= maxID {
		return w // no id left: its outcome is not counted
	}
	return w | b.issueLocked(false)
}

// issueClosed returns a ticket with an id for a call allowed by a closed
// breaker in word w with Config.CheckTickets: w itself (no id) if the
// breaker has moved on (the ticket's outcome is dropped) or every id is
// pending (its outcome is counted unchecked).
func (b *Breaker) issueClosed(w uint64) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.word.Load() != w || len(b.pending) >= maxID {
		return w
	}
	return w | b.issueLocked(false)
}

// issueLocked gives the next id of the half-open generation to a ticket,
// slot says whether it holds a probe slot, and returns the id's bits for
// the ticket. b.mu is held, and fewer than maxID ids are pending.
func (b *Breaker) issueLocked(slot bool) uint64 {
	if b.pending == nil {
		b.pending = make(map[uint32]bool)
	}
	for {
		b.lastID++
		if b.lastID > maxID {
			b.lastID = 1 // 0 is no id
		}
		if _, used := b.pending[b.lastID]; !used {
			break
		}
	}
	b.pending[b.lastID] = slot
	return uint64(b.lastID) << idShift
}

// allowSlow handles the open and half-open states.
//
//go:noinline
func (b *Breaker) allowSlow(ctx context.Context, now time.Time, w uint64, retry bool) (uint64, error) {
	ns := now.UnixNano()
	if State(w&stateMask) == Open {
		if p := b.at(b.open.Load(), ns); ns < p.until {
			return 0, b.refuse(ctx, now, b.refusal(p, ns))
		}
	}
	b.mu.Lock()
	w = b.word.Load()
	var ch change
	switch State(w & stateMask) {
	case Closed:
		b.mu.Unlock()
		return w, nil
	case checkedClosed:
		if len(b.pending) < maxID {
			w |= b.issueLocked(false)
		}
		b.mu.Unlock()
		return w, nil
	case Open:
		if p := b.at(b.open.Load(), ns); ns < p.until {
			b.mu.Unlock()
			return 0, b.refuse(ctx, now, b.refusal(p, ns))
		}
		w = b.moveLocked(w, HalfOpen)
		ch = change{from: Open, to: HalfOpen}
	}
	// Half-open: a probe slot is free while the probes in flight and those
	// that succeeded are fewer than HalfOpenProbes. Probes whose outcome
	// has not come OpenTimeout after the last slot was taken are deemed
	// lost: a new half-open generation starts, which drops their outcomes
	// should they come after all.
	if b.probing+b.probeOK >= b.s.HalfOpenProbes {
		if ns < b.probeAt {
			b.probeAt = ns // the clock stepped back: the wait runs from now
		}
		if b.probing == 0 || ns-b.probeAt < int64(b.s.OpenTimeout) {
			b.mu.Unlock()
			b.report(ctx, now, ch)
			return 0, b.refuse(ctx, now, &OpenError{Name: b.s.Name, State: HalfOpen, Trips: b.open.Load().trips})
		}
		w = b.moveLocked(w, HalfOpen)
	}
	b.probing++
	b.probeAt = ns
	w |= b.issueLocked(true) // probing ≤ HalfOpenProbes ≤ 1e6 < maxID
	b.mu.Unlock()
	b.reportIssued(ctx, now, ch, w)
	return w, nil
}

// reportIssued reports change c, made by the call that ticket tk was just
// issued to. If a hook panics, the caller never gets tk: its outcome is
// recorded as ignored (a probe's slot is freed) before the panic goes on,
// rather than holding the half-open state until OpenTimeout deems it lost.
func (b *Breaker) reportIssued(ctx context.Context, now time.Time, c change, tk uint64) {
	if c.from == c.to {
		return
	}
	done := false
	defer func() {
		if !done {
			b.record(ctx, now, tk, Ignore, false, nil)
		}
	}()
	b.report(ctx, now, c)
	done = true
}

// DoneAt reports the outcome of a call allowed by AllowAt: err is nil on
// success, elapsed is how long the call took (for SlowCall), ticket is what
// AllowAt returned. Outcomes of calls allowed in an earlier state (before a
// trip, or before the breaker closed, or probes deemed lost) are dropped.
// Closed, recording a fast success is one atomic add and allocates
// nothing.
//
// Report each ticket once: the caller (or the one layer that owns the
// ticket, such as the retry loop) must not report it again. A half-open
// ticket carries its probe's id, so that a second report is dropped
// (counted by DoubleReports). A closed ticket carries no identity, so that
// AllowAt stays one atomic load: a second report counts as another call's
// outcome (one failure counts as two, and may trip the breaker early)
// unless Config.CheckTickets gives closed tickets ids too, as tests do to
// show that a caller reports each ticket once. Permit.Done and Execute
// report once by construction.
func (b *Breaker) DoneAt(now time.Time, ticket uint64, elapsed time.Duration, err error) {
	if b == nil {
		return
	}
	w := b.word.Load()
	if ticket&^idMask != w {
		return // issued in an earlier state
	}
	o := Success
	if err != nil {
		o = b.classify(err)
	}
	slow := b.slowOn() && elapsed >= b.s.SlowCall
	if w&stateMask == uint64(Closed) && o == Success && !slow {
		// The hot path: count the call, clear the failure streak.
		if b.kind == timeWindow {
			b.calls.Add(b.clock.Epoch(now), 1)
		} else {
			b.countClockless()
		}
		return
	}
	b.record(context.Background(), now, ticket, o, slow, err)
}

// countClockless counts a success in a count window, or in no window at
// all, and clears the failure streak.
func (b *Breaker) countClockless() {
	if b.kind == countWindow {
		b.seq.Add(1)
	}
	if b.consec.Load() != 0 {
		b.consec.Store(0)
	}
}

func (b *Breaker) classify(err error) Outcome {
	if b.s.Classify != nil {
		return b.s.Classify(err)
	}
	return DefaultClassify(err)
}

// record handles every outcome but a fast success while closed.
//
//go:noinline
func (b *Breaker) record(ctx context.Context, now time.Time, ticket uint64, o Outcome, slow bool, cause error) {
	w := ticket &^ idMask
	switch State(w & stateMask) {
	case checkedClosed:
		if !b.closedDone(ticket) {
			return
		}
		fallthrough
	case Closed:
		if o == Ignore {
			return
		}
		if o == Success && !slow {
			b.countSuccess(now)
			return
		}
		if b.closedShouldTrip(now, o == Failure, slow) {
			if o != Failure {
				cause = nil // tripped by slowness: no error to show
			}
			b.trip(ctx, now, w, cause)
		}
	case HalfOpen:
		b.probeDone(ctx, now, ticket, o, slow, cause)
	}
	// Open: a first attempt let through by RetriesOnly; its outcome is
	// not counted until the breaker is half-open.
}

// closedDone takes the id of a closed ticket (Config.CheckTickets) out of
// the pending ones, and reports whether its outcome counts: false when it
// came already, or when the breaker has moved on since.
func (b *Breaker) closedDone(ticket uint64) bool {
	id := uint32((ticket & idMask) >> idShift)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.word.Load() != ticket&^idMask {
		return false
	}
	if id == 0 {
		return true // issued with every id pending: counted unchecked
	}
	if _, ok := b.pending[id]; !ok {
		b.twice++
		return false
	}
	delete(b.pending, id)
	return true
}

func (b *Breaker) countSuccess(now time.Time) {
	if b.kind == timeWindow {
		b.calls.Add(b.clock.Epoch(now), 1)
		if b.consec.Load() != 0 {
			b.consec.Store(0)
		}
		return
	}
	b.countClockless()
}

// closedShouldTrip counts a failed or slow call and reports whether the
// breaker must trip.
func (b *Breaker) closedShouldTrip(now time.Time, failed, slow bool) bool {
	var calls, failures, slows uint64
	if b.kind == countWindow {
		i := b.seq.Add(1) - 1 // this call's index since the breaker closed
		e := int64(i / b.block)
		if failed {
			b.failures.Add(e, 1)
		}
		if slow {
			b.slow.Add(e, 1)
		}
		calls = i + 1
		if first := e - int64(b.failures.Len()) + 1; first > 0 {
			calls -= uint64(first) * b.block
		}
		failures, slows = b.failures.Sum(e), b.slow.Sum(e)
	} else {
		e := b.clock.Epoch(now)
		b.calls.Add(e, 1)
		if failed {
			b.failures.Add(e, 1)
		}
		if slow {
			b.slow.Add(e, 1)
		}
		calls, failures, slows = b.calls.Sum(e), b.failures.Sum(e), b.slow.Sum(e)
	}
	if failed {
		if n := b.consec.Add(1); b.s.ConsecutiveFailures > 0 && n >= int64(b.s.ConsecutiveFailures) {
			return true
		}
	} else if b.consec.Load() != 0 {
		b.consec.Store(0)
	}
	if calls < uint64(b.s.MinCalls) {
		return false
	}
	return b.ratioOn() && float64(failures) >= b.s.FailureRatio*float64(calls) ||
		b.slowOn() && float64(slows) >= b.s.SlowRatio*float64(calls)
}

// probeDone decides on a half-open outcome: that of the ticket's probe,
// if it has not come already.
func (b *Breaker) probeDone(ctx context.Context, now time.Time, ticket uint64, o Outcome, slow bool, cause error) {
	w := ticket &^ idMask
	b.mu.Lock()
	if b.word.Load() != w {
		b.mu.Unlock()
		return
	}
	id := uint32((ticket & idMask) >> idShift)
	slot, ok := b.pending[id]
	if !ok {
		// Its outcome came already (a ticket reported twice), or it has
		// no id: it is not counted.
		if id != 0 {
			b.twice++
		}
		b.mu.Unlock()
		return
	}
	delete(b.pending, id)
	if slot {
		b.probing--
	}
	if o == Failure || slow && o == Success {
		if o != Failure {
			cause = nil
		}
		b.tripLocked(now, w, cause)
		b.mu.Unlock()
		b.report(ctx, now, change{from: HalfOpen, to: Open})
		return
	}
	if o == Ignore {
		b.mu.Unlock()
		return
	}
	b.probeOK++
	if b.probeOK < b.s.HalfOpenProbes {
		b.mu.Unlock()
		return
	}
	// Every probe succeeded: close, with fresh counts.
	b.trips = 0
	b.consec.Store(0)
	b.seq.Store(0)
	b.calls.Reset()
	b.failures.Reset()
	b.slow.Reset()
	b.moveLocked(w, Closed)
	b.mu.Unlock()
	b.report(ctx, now, change{from: HalfOpen, to: Closed})
}

// trip opens the breaker if it is still in the state of word w.
func (b *Breaker) trip(ctx context.Context, now time.Time, w uint64, cause error) {
	b.mu.Lock()
	if b.word.Load() != w {
		b.mu.Unlock()
		return // another outcome moved it first
	}
	b.tripLocked(now, w, cause)
	b.mu.Unlock()
	b.report(ctx, now, change{from: stateOf(w), to: Open})
}

// tripLocked opens the breaker for the next open period; b.mu is held and
// the breaker is in the state of word w.
func (b *Breaker) tripLocked(now time.Time, w uint64, cause error) {
	b.trips++
	d := b.openFor(b.trips)
	ns := now.UnixNano()
	b.open.Store(&period{from: ns, until: ns + int64(d), trips: b.trips, cause: cause})
	b.moveLocked(w, Open)
}

// openFor returns the open duration of the n-th consecutive trip.
func (b *Breaker) openFor(n int) time.Duration {
	d := float64(b.s.OpenTimeout) * math.Pow(b.s.OpenBackoff, float64(n-1))
	d = min(d, float64(b.s.MaxOpenTimeout))
	if j := b.s.OpenJitter; j > 0 {
		d += d * j * b.draw()
	}
	return time.Duration(d)
}

// draw returns a draw in [0, 1): Config.Rand's, clamped into that range as
// retry and backoff clamp theirs (a NaN counts as 0), so that a source that
// breaks the contract can neither shorten an open period below OpenTimeout
// nor make it negative (the breaker would be half-open at once).
func (b *Breaker) draw() float64 {
	if b.s.Rand == nil {
		return rand.Float64()
	}
	u := b.s.Rand()
	if !(u >= 0) { // also NaN
		return 0
	}
	if u >= 1 {
		return 1 - 0x1p-53
	}
	return u
}

// moveLocked starts a new generation in state to and returns its word. The
// tickets of the generation that ends are dropped, and their ids with them.
func (b *Breaker) moveLocked(w uint64, to State) uint64 {
	if to == HalfOpen {
		b.probing, b.probeOK = 0, 0
	}
	clear(b.pending)
	b.lastID = 0
	bits := uint64(to)
	if to == Closed {
		bits = b.closedBits()
	}
	n := (w&^(stateMask|idMask) + genOne) | bits
	b.word.Store(n)
	return n
}

// change is a transition to report once the lock is released.
type change struct{ from, to State }

func (b *Breaker) report(ctx context.Context, now time.Time, c change) {
	if c.from == c.to {
		return
	}
	if f := b.s.OnStateChange; f != nil {
		f(b.s.Name, c.from, c.to)
	}
	if o := b.s.Observer; o != nil {
		o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Time: now, Component: "breaker",
			Name: b.s.Name, From: c.from.String(), To: c.to.String()})
	}
}

func (b *Breaker) refuse(ctx context.Context, now time.Time, e *OpenError) error {
	if o := b.s.Observer; o != nil {
		o.Observe(ctx, event.Event{Kind: event.BreakerRejected, Time: now, Component: "breaker",
			Name: b.s.Name, Err: e, Wait: e.Wait})
	}
	return e
}

// StateAt returns the state at now: an open breaker whose open period has
// ended reports HalfOpen (the transition itself happens at the next
// AllowAt).
func (b *Breaker) StateAt(now time.Time) State {
	if b == nil {
		return Closed
	}
	s := stateOf(b.word.Load())
	if ns := now.UnixNano(); s == Open && ns >= b.at(b.open.Load(), ns).until {
		return HalfOpen
	}
	return s
}

// OpenUntil returns the end of the open period when the breaker is open at
// now (it will refuse calls until then), and false otherwise: closed,
// half-open, or open with its period over. It is one atomic load when the
// breaker is not open, and takes no lock: a fleet-wide store (module
// yaoki/redis) polls it to learn when this breaker tripped.
func (b *Breaker) OpenUntil(now time.Time) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	if State(b.word.Load()&stateMask) != Open {
		return time.Time{}, false
	}
	ns := now.UnixNano()
	until := b.at(b.open.Load(), ns).until
	if ns >= until {
		return time.Time{}, false
	}
	return time.Unix(0, until), true
}

// State is shorthand for StateAt(time.Now()).
func (b *Breaker) State() State { return b.StateAt(time.Now()) }

// DoubleReports returns how many outcomes were dropped because their
// ticket's outcome had been reported already: half-open tickets always,
// closed ones with Config.CheckTickets. A test asserts that it is 0 to
// show that the code under test reports each ticket once.
func (b *Breaker) DoubleReports() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.twice
}

// Trips returns the number of consecutive trips: 0 after the breaker
// closed, 1 after a first trip, 2 after a failed probe, and so on.
func (b *Breaker) Trips() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.trips
}
