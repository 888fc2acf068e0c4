package breaker

import (
	"context"
	"time"
)

// Execute calls fn if the breaker allows it, records its outcome and
// returns its error, or returns the breaker's *OpenError without calling
// fn. When fn fails after ctx ended, the outcome is ignored whatever the
// error (the caller gave up, which says nothing about the dependency). If fn panics, the panic is recorded as a failure
// (*PanicError) and fn's panic continues with the same value.
//
// With RetriesOnly, Execute counts as a first attempt and always calls fn.
//
// Execute reads the clock only when a decision needs it: never for a
// success with a count window (or no ratio trip) and no SlowCall, once for a
// success with a time window (the bucket), twice with SlowCall (the
// duration). AllowAt and
// DoneAt, which take now, never read it.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if b == nil {
		return fn(ctx)
	}
	t, start, err := b.begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			now := time.Now()
			b.recordOutcome(ctx, now, t, b.elapsed(start, now), Failure, &PanicError{Value: r})
			panic(r)
		}
	}()
	err = fn(ctx)
	b.finish(ctx, t, start, err)
	return err
}

// begin is AllowAt for a first attempt made now; start is the clock reading
// when SlowCall needs the call's duration, zero otherwise.
func (b *Breaker) begin(ctx context.Context) (ticket uint64, start time.Time, err error) {
	if b.slowOn() {
		start = time.Now()
	}
	w := b.word.Load()
	if w&stateMask == uint64(Closed) {
		return w, start, nil
	}
	if w&stateMask == checkedClosed {
		return b.issueClosed(w), start, nil
	}
	if b.s.RetriesOnly {
		return b.passFirst(w), start, nil
	}
	now := start
	if now.IsZero() {
		now = time.Now()
	}
	ticket, err = b.allowSlow(ctx, now, w, false)
	return ticket, start, err
}

// finish is DoneAt for a call that began with begin.
func (b *Breaker) finish(ctx context.Context, ticket uint64, start time.Time, err error) {
	if err == nil && b.clockless() && ticket == b.word.Load() && ticket&stateMask == uint64(Closed) {
		b.countClockless()
		return
	}
	now := time.Now()
	if err != nil && ctx.Err() != nil {
		// The caller gave up: whatever fn returned then (its context's
		// error, or a reset or an EOF from the cut call) says nothing
		// about the dependency.
		b.recordOutcome(ctx, now, ticket, 0, Ignore, err)
		return
	}
	b.DoneAt(now, ticket, b.elapsed(start, now), err)
}

func (b *Breaker) elapsed(start, now time.Time) time.Duration {
	if start.IsZero() {
		return 0
	}
	return now.Sub(start)
}

// recordOutcome is DoneAt with the outcome already decided.
func (b *Breaker) recordOutcome(ctx context.Context, now time.Time, ticket uint64, elapsed time.Duration, o Outcome, err error) {
	if ticket&^idMask != b.word.Load() {
		return
	}
	b.record(ctx, now, ticket, o, b.slowOn() && elapsed >= b.s.SlowCall, err)
}

// Permit is one allowed call, returned by Allow; report its outcome with
// Done. Done disarms the Permit it is called on, so that a second Done on
// it (an explicit one and a deferred one) is a no-op. A copy of a Permit
// is the same call: report through one copy only (Done on two copies
// counts the call twice while the breaker is closed; see DoneAt). It is a
// small value: passing it around allocates nothing.
type Permit struct {
	b      *Breaker
	ticket uint64
	start  time.Time
}

// Allow asks whether a call may be made now (a first attempt). It returns a
// Permit whose Done reports the call's outcome, or an *OpenError. Like
// Execute, it reads the clock only when a decision needs it.
func (b *Breaker) Allow() (Permit, error) {
	if b == nil {
		return Permit{}, nil // its Done does nothing
	}
	if w := b.word.Load(); w&stateMask == uint64(Closed) && !b.slowOn() {
		return Permit{b: b, ticket: w}, nil
	}
	return b.allowPermit()
}

func (b *Breaker) allowPermit() (Permit, error) {
	t, start, err := b.begin(context.Background())
	if err != nil {
		return Permit{}, err
	}
	return Permit{b: b, ticket: t, start: start}, nil
}

// Done reports the call's outcome: err is nil on success. With SlowCall,
// the call's duration is measured from Allow. It disarms p: a second Done
// on p reports nothing. Calling Done on one Permit from two goroutines at
// once is a data race (the race detector reports it).
func (p *Permit) Done(err error) {
	if b := p.b; b != nil {
		p.b = nil
		b.finish(context.Background(), p.ticket, p.start, err)
	}
}
