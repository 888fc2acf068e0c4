package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// The guards below keep books on what the loop took and gave back, and
// refuse, wait or panic at the draw of a seeded source.

type ledger struct {
	t    *testing.T
	r    *rand.Rand
	step string // the driver's step, for messages
	// bulkhead
	slots, slotLimit int
	// throttle: turns given, handed back (CancelAt), answered (RecordAt)
	admitted, cancelled, recorded int
	// budget: retries granted and handed back (CancelRetryAt)
	granted, refunded int
	// breaker: tickets given and not yet reported
	open    map[uint64]bool
	nextTk  uint64
	panicky bool // guards may panic
}

type panicked struct{ where string }

func (g *ledger) maybePanic(where string) {
	if g.panicky && g.r.IntN(40) == 0 {
		panic(panicked{where})
	}
}

type bulkheadOf struct{ *ledger }

func (b bulkheadOf) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil && b.r.IntN(4) == 0 {
		return err // it would wait for a slot: the loop says Acquire
	}
	if b.slots >= b.slotLimit || b.r.IntN(8) == 0 {
		return errors.New("bulkhead full")
	}
	b.slots++
	return nil
}

func (b bulkheadOf) Release() {
	b.slots--
	if b.slots < 0 {
		b.t.Fatalf("%s: bulkhead released more often than acquired", b.step)
	}
}

type throttleOf struct{ *ledger }

func (th throttleOf) AdmitAt(now time.Time) (time.Duration, error) {
	th.maybePanic("throttle")
	switch th.r.IntN(8) {
	case 0:
		return 0, errors.New("throttle: rejected locally")
	case 1:
		th.admitted++
		return time.Duration(1+th.r.IntN(100)) * time.Millisecond, nil
	}
	th.admitted++
	return 0, nil
}

func (th throttleOf) CancelAt(time.Time) { th.cancelled++ }

func (th throttleOf) RecordAt(time.Time, bool) { th.recorded++ }

type breakerOf struct{ *ledger }

func (b breakerOf) AllowAt(now time.Time, retry bool) (uint64, error) {
	b.maybePanic("breaker")
	if b.r.IntN(8) == 0 {
		return 0, errors.New("breaker: open")
	}
	b.nextTk++
	b.open[b.nextTk] = true
	return b.nextTk, nil
}

func (b breakerOf) DoneAt(now time.Time, tk uint64, _ time.Duration, err error) {
	if !b.open[tk] {
		b.t.Fatalf("%s: breaker ticket %d reported but not outstanding", b.step, tk)
	}
	delete(b.open, tk)
}

type budgetOf struct{ *ledger }

func (b budgetOf) AllowRetryAt(time.Time, bool) bool {
	b.maybePanic("budget")
	if b.r.IntN(6) == 0 {
		return false
	}
	b.granted++
	return true
}

func (b budgetOf) CancelRetryAt(time.Time, bool, bool) { b.refunded++ }
func (b budgetOf) RecordAt(time.Time, bool, bool)      {}

type hedgerOf struct{ *ledger }

func (h hedgerOf) PlanAt(time.Time) (time.Duration, bool) { return 10 * time.Millisecond, true }
func (h hedgerOf) AllowAt(time.Time) error {
	h.maybePanic("hedger")
	if h.r.IntN(5) == 0 {
		return errors.New("hedge: budget exhausted")
	}
	return nil
}
func (h hedgerOf) ObserveAt(time.Time, time.Duration, bool) {}
func (h hedgerOf) MaxHedges() int                           { return 2 }

// attemptBook checks the observer's events: each attempt starts once, then
// ends once, and nothing is reported of a call once it gave up but the
// ends of its attempts still in flight.
type attemptBook struct {
	*ledger
	started, ended map[int]bool
	gaveUp         bool
}

func (o *attemptBook) Observe(_ context.Context, e event.Event) {
	switch e.Kind {
	case event.AttemptStart:
		if o.started[e.Attempt] || o.gaveUp {
			o.t.Fatalf("%s: attempt %d started twice, or after the give-up", o.step, e.Attempt)
		}
		o.started[e.Attempt] = true
	case event.AttemptEnd:
		if !o.started[e.Attempt] || o.ended[e.Attempt] {
			o.t.Fatalf("%s: attempt %d ended without a start, or twice", o.step, e.Attempt)
		}
		o.ended[e.Attempt] = true
	case event.GaveUp:
		if o.gaveUp {
			o.t.Fatalf("%s: gave up twice", o.step)
		}
		o.gaveUp = true
	}
	o.maybePanic("observer")
}

// TestLoopGuardsBalanced drives Loops through random sequences of what
// drivers do (attempts that succeed, fail, say when to come back or are
// final; hedges beside them; the caller cancelling; waits cut short)
// against guards that refuse, wait and panic at random, and checks the
// books after every call: every bulkhead slot taken is released once,
// every breaker ticket reported once, every throttle turn handed back or
// answered unless its attempt was sent and its caller gone; every retry
// the budget granted sent or handed back; every
// attempt started ends once.
func TestLoopGuardsBalanced(t *testing.T) {
	for seed := range uint64(400) {
		g := &ledger{t: t, r: rand.New(rand.NewPCG(seed, 7)), slotLimit: 2, open: map[uint64]bool{}, panicky: seed%2 == 1}
		for call := range 20 {
			g.step = fmt.Sprintf("seed %d call %d", seed, call)
			sentGone, retries := loopCall(g)
			if g.slots != 0 {
				t.Fatalf("%s: %d bulkhead slots still held", g.step, g.slots)
			}
			if len(g.open) != 0 {
				t.Fatalf("%s: breaker tickets never reported: %v", g.step, g.open)
			}
			if g.admitted != g.cancelled+g.recorded+sentGone {
				t.Fatalf("%s: throttle turns: %d given, %d handed back, %d answered, %d sent with the caller gone",
					g.step, g.admitted, g.cancelled, g.recorded, sentGone)
			}
			// Every retry the budget granted was sent or handed back, also
			// when a guard, a hook or the observer panicked.
			if g.granted != g.refunded+retries {
				t.Fatalf("%s: budget: %d retries granted, %d handed back, %d sent", g.step, g.granted, g.refunded, retries)
			}
			g.admitted, g.cancelled, g.recorded, g.granted, g.refunded = 0, 0, 0, 0, 0
		}
	}
}

// loopCall runs one call and returns how many of its attempts were sent
// while holding a throttle turn but not answered (the caller had gone, or
// they were cancelled or panicked), which the throttle is not told of, and
// how many attempts after the first it sent (retries and hedges).
func loopCall(g *ledger) (unanswered, retries int) {
	obs := &attemptBook{ledger: g, started: map[int]bool{}, ended: map[int]bool{}}
	env := &retry.Env{Bulkhead: bulkheadOf{g}, Throttle: throttleOf{g}, Breaker: breakerOf{g}, Budget: budgetOf{g},
		Hedger: hedgerOf{g}, Observer: obs, Rand: g.r.Float64}
	p := retry.Policy{MaxAttempts: 1 + g.r.IntN(5), Env: env}
	if g.r.IntN(3) == 0 {
		p.MaxElapsed = time.Duration(1+g.r.IntN(500)) * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var l retry.Loop
	type flight struct {
		t        retry.Ticket
		admitted bool // holds a throttle turn (the ledger cannot tell tickets apart)
	}
	var inFlight []*flight
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(panicked); !ok {
				panic(v)
			}
			// A guard or the observer panicked on the driver's goroutine:
			// the attempts in flight are reported cancelled, as the
			// hedging driver does when it unwinds.
			for _, f := range inFlight {
				unanswered += count(f.admitted)
				func() {
					defer func() { _ = recover() }()
					l.Cancelled(ctx, now, &f.t)
				}()
			}
		}
	}()
	tick := func() { now = now.Add(time.Duration(g.r.IntN(50)) * time.Millisecond) }
	start := now
	l.Start(ctx, &p, now)
	// send runs Before (or Hedge) to a verdict for a new attempt, moving
	// time through its waits; it returns the flight, or nil and the verdict.
	send := func(hedge bool) (*flight, retry.Decision) {
		f := &flight{}
		admitted := g.admitted
		var d retry.Decision
		if hedge {
			d = l.Hedge(ctx, now, &f.t)
		} else {
			d = l.Before(ctx, now, &f.t)
		}
		for {
			switch d.Verdict {
			case retry.Acquire:
				d = l.Acquired(ctx, now, &f.t, bulkheadOf{g}.Acquire(ctx))
				continue
			case retry.Sleep:
				if g.r.IntN(6) == 0 {
					cancel()
					d = l.Interrupted(ctx, now, &f.t, ctx.Err())
					continue
				}
				now = now.Add(d.Wait)
				d = l.Before(ctx, now, &f.t)
				continue
			case retry.Send:
				// Before and Hedge always ask the throttle: an attempt
				// sent holds one turn.
				f.admitted = g.admitted > admitted
				if f.t.Attempt() > 1 {
					retries++
				}
				inFlight = append(inFlight, f)
				return f, d
			}
			return nil, d
		}
	}
	if _, d := send(false); d.Verdict == retry.GiveUp {
		return unanswered, retries
	}
	for len(inFlight) > 0 {
		tick()
		switch r := g.r.IntN(10); {
		case r == 0 && len(inFlight) < 3:
			send(true) // a refused hedge leaves the call as it was
			continue
		case r == 1:
			cancel()
		}
		// The oldest attempt in flight answers.
		f := inFlight[0]
		inFlight = inFlight[1:]
		var err error
		switch g.r.IntN(5) {
		case 0:
			err = nil
		case 1:
			err = retry.Permanent(errors.New("400"))
		case 2:
			err = retry.After(errors.New("503"), time.Duration(g.r.IntN(3000))*time.Millisecond)
		default:
			err = errors.New("500")
		}
		// A failure once the call's time is over (the caller cancelled,
		// MaxElapsed passed) is not the dependency's: the throttle is not
		// told. A success is an answer, even then.
		over := ctx.Err() != nil || p.MaxElapsed > 0 && !now.Before(start.Add(p.MaxElapsed))
		if err != nil && over {
			unanswered += count(f.admitted)
		}
		if err != nil && len(inFlight) > 0 && ctx.Err() == nil && !retry.IsPermanent(err) {
			l.Abandon(ctx, now, &f.t, err)
			continue
		}
		d := l.After(ctx, now, &f.t, err)
		if d.Verdict == retry.Sleep && len(inFlight) == 0 {
			now = now.Add(d.Wait)
			if _, d := send(false); d.Verdict == retry.GiveUp {
				return unanswered, retries
			}
			continue
		}
		// The call is over: the others are cancelled.
		for len(inFlight) > 0 {
			o := inFlight[0]
			inFlight = inFlight[1:] // not to be cancelled again if the observer panics
			unanswered += count(o.admitted)
			l.Cancelled(ctx, now, &o.t)
		}
	}
	return unanswered, retries
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}
