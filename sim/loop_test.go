package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// A scripted attempt: how long it takes and how it ends (nil: success).
type scripted struct {
	took time.Duration
	err  error
}

// Guards whose answers are scripted, made afresh for each driver.
type scriptThrottle struct {
	waits  []time.Duration // AdmitAt's answers, in turn; then 0
	reject bool
}

func (t *scriptThrottle) AdmitAt(time.Time) (time.Duration, error) {
	if t.reject {
		return 0, errors.New("throttled locally")
	}
	if len(t.waits) == 0 {
		return 0, nil
	}
	w := t.waits[0]
	t.waits = t.waits[1:]
	return w, nil
}
func (t *scriptThrottle) RecordAt(time.Time, bool) {}

type scriptBreaker struct{ refuse int } // refuse the attempt with this number

type openErr struct{}

func (openErr) Error() string             { return "breaker open" }
func (openErr) RetryAfter() time.Duration { return 5 * time.Second }

func (b *scriptBreaker) AllowAt(time.Time, bool) (uint64, error) {
	if b.refuse--; b.refuse == 0 {
		return 0, openErr{}
	}
	return 1, nil
}
func (b *scriptBreaker) DoneAt(time.Time, uint64, time.Duration, error) {}

type scriptBudget struct{ retries int } // retries granted

func (b *scriptBudget) AllowRetryAt(time.Time, bool) bool {
	b.retries--
	return b.retries >= 0
}
func (b *scriptBudget) RecordAt(time.Time, bool, bool) {}

// trace records the loop's events as lines "at kind attempt detail",
// with at counted from the call's start.
type trace struct {
	start time.Time
	lines []string
}

func (tr *trace) Observe(_ context.Context, e event.Event) {
	var detail string
	switch e.Kind {
	case event.RetryScheduled:
		detail = fmt.Sprintf(" wait=%v from=%v", e.Wait, e.Source)
	case event.GaveUp:
		detail = " reason=" + e.Reason
	case event.AttemptEnd:
		detail = " outcome=" + e.Outcome.String()
	}
	tr.lines = append(tr.lines, fmt.Sprintf("%v %v %d%s", e.Time.Sub(tr.start), e.Kind, e.Attempt, detail))
}

type parityCase struct {
	name     string
	policy   retry.Policy // without Env
	guards   func() Guards
	deadline time.Duration // from the start; 0: none
	script   []scripted
	// want is the loop's decisions after each attempt (and the final
	// outcome), as "wait 25ms backoff", "success" or "give up reason".
	want []string
}

var parityCases = []parityCase{
	{name: "backoff then success",
		script: []scripted{{10 * time.Millisecond, errFailed}, {10 * time.Millisecond, errFailed}, {10 * time.Millisecond, nil}},
		want:   []string{"wait 25ms backoff", "wait 50ms backoff", "success"}},
	{name: "overload answers back off from ThrottleBase",
		policy: retry.Policy{ThrottleBase: 200 * time.Millisecond, Classify: classifyOutcome},
		script: []scripted{{time.Millisecond, errOverloaded}, {time.Millisecond, nil}},
		want:   []string{"wait 100ms backoff", "success"}},
	{name: "attempts exhausted",
		policy: retry.Policy{MaxAttempts: 2, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.None}},
		script: []scripted{{0, errTimeout}, {0, errTimeout}},
		want:   []string{"wait 1s backoff", "give up attempts_exhausted"}},
	{name: "final error",
		policy: retry.Policy{Classify: func(err error) retry.Class {
			if err == errConflict {
				return retry.ClassPermanent
			}
			return retry.ClassTransient
		}},
		script: []scripted{{0, errFailed}, {0, errConflict}},
		want:   []string{"wait 25ms backoff", "give up permanent_error"}},
	{name: "server hint honoured",
		script: []scripted{{0, retry.After(errOverloaded, 2*time.Second)}, {0, nil}},
		want:   []string{"wait 2.2s server", "success"}},
	{name: "server hint jitter shrunk to the deadline",
		deadline: 1100 * time.Millisecond,
		script:   []scripted{{0, retry.After(errOverloaded, time.Second)}, {0, nil}},
		want:     []string{"wait 1.05s server", "success"}},
	{name: "server hint past the deadline",
		deadline: 1100 * time.Millisecond,
		script:   []scripted{{200 * time.Millisecond, retry.After(errOverloaded, time.Second)}},
		want:     []string{"give up deadline"}},
	{name: "server hint too long",
		script: []scripted{{0, retry.After(errOverloaded, 2*time.Minute)}},
		want:   []string{"give up hint_too_long"}},
	{name: "backoff past the deadline",
		deadline: 30 * time.Millisecond,
		script:   []scripted{{10 * time.Millisecond, errFailed}},
		want:     []string{"give up deadline"}},
	{name: "budget refuses the second retry",
		guards: func() Guards { return Guards{Budget: &scriptBudget{retries: 1}} },
		script: []scripted{{0, errFailed}, {0, errTimeout}},
		want:   []string{"wait 25ms backoff", "give up budget_exhausted"}},
	{name: "breaker refuses the second attempt",
		guards: func() Guards { return Guards{Breaker: &scriptBreaker{refuse: 2}} },
		script: []scripted{{0, errFailed}},
		want:   []string{"wait 25ms backoff", "give up breaker_open"}},
	{name: "throttle waits, then admits",
		guards: func() Guards { return Guards{Throttle: &scriptThrottle{waits: []time.Duration{40 * time.Millisecond}}} },
		script: []scripted{{0, errFailed}, {0, nil}},
		want:   []string{"wait 25ms backoff", "success"}},
	{name: "throttle's wait past the deadline",
		deadline: time.Second,
		guards:   func() Guards { return Guards{Throttle: &scriptThrottle{waits: []time.Duration{2 * time.Second}}} },
		want:     []string{"give up deadline"}},
	{name: "throttle rejects",
		guards: func() Guards { return Guards{Throttle: &scriptThrottle{reject: true}} },
		want:   []string{"give up rejected_locally"}},
}

// deadlineCtx has a deadline and never ends: the simulator's driver moves
// virtual time, so no timer may cancel it.
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }

// policyFor returns c's policy with fresh guards, draws of 0.5 and o as
// observer.
func (c *parityCase) policyFor(o event.Observer) *retry.Policy {
	p := c.policy
	p.Env = &retry.Env{Rand: func() float64 { return 0.5 }, Observer: o}
	if c.guards != nil {
		g := c.guards()
		p.Env.Budget, p.Env.Breaker, p.Env.Throttle = g.Budget, g.Breaker, g.Throttle
	}
	return &p
}

// viaDo runs c through retry.Do, on a synctest clock.
func (c *parityCase) viaDo(t *testing.T) (decisions, events []string) {
	synctest.Test(t, func(t *testing.T) {
		tr := &trace{start: time.Now()}
		p := c.policyFor(tr)
		p.OnRetry = func(w retry.Wait) {
			decisions = append(decisions, fmt.Sprintf("wait %v %v", w.Delay, w.Source))
		}
		ctx := context.Background()
		if c.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, tr.start.Add(c.deadline))
			defer cancel()
		}
		i := 0
		err := retry.Do(ctx, *p, func(context.Context) error {
			s := c.script[i]
			i++
			time.Sleep(s.took)
			return s.err
		})
		var e *retry.Error
		switch {
		case err == nil:
			decisions = append(decisions, "success")
		case errors.As(err, &e):
			decisions = append(decisions, "give up "+e.Reason.Key())
		default:
			t.Fatalf("Do = %v", err)
		}
		events = tr.lines
	})
	return decisions, events
}

// viaSim runs c through the simulator's driver (loop.begin and loop.end)
// on virtual time.
func (c *parityCase) viaSim() (decisions, events []string) {
	tr := &trace{start: instant(0)}
	p := c.policyFor(tr)
	var src event.Source // the wait's source, which end does not return
	p.OnRetry = func(w retry.Wait) { src = w.Source }
	var ctx context.Context = context.Background()
	if c.deadline > 0 {
		ctx = deadlineCtx{ctx, instant(c.deadline)}
	}
	var l loop
	now := time.Duration(0)
	for i := 0; ; {
		wait, refused := l.begin(ctx, p, now)
		if refused != 0 {
			return append(decisions, "give up "+refused.Key()), tr.lines
		}
		if wait > 0 {
			now += wait
			continue
		}
		s := c.script[i]
		i++
		now += s.took
		wait, stop := l.end(ctx, now, s.err)
		switch {
		case s.err == nil:
			return append(decisions, "success"), tr.lines
		case stop != 0:
			return append(decisions, "give up "+stop.Key()), tr.lines
		}
		decisions = append(decisions, fmt.Sprintf("wait %v %v", wait, src))
		now += wait
	}
}

// TestDriversDecideAlike runs each scripted call through retry.Do (real
// timers on a synctest clock) and through the simulator's driver (virtual
// time): both must make the decisions the table says, and the loop must
// report the same events at the same instants under both.
func TestDriversDecideAlike(t *testing.T) {
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			gotDo, evDo := c.viaDo(t)
			gotSim, evSim := c.viaSim()
			want := strings.Join(c.want, "; ")
			if g := strings.Join(gotDo, "; "); g != want {
				t.Errorf("retry.Do decided %s\nwant %s", g, want)
			}
			if g := strings.Join(gotSim, "; "); g != want {
				t.Errorf("the simulator's driver decided %s\nwant %s", g, want)
			}
			if len(evDo) == 0 {
				t.Fatal("the observer saw no event")
			}
			if a, b := strings.Join(evDo, "\n"), strings.Join(evSim, "\n"); a != b {
				t.Errorf("events differ\nretry.Do:\n%s\nsimulator:\n%s", a, b)
			}
		})
	}
}

// onlyStepper retries only the errors it is given.
type onlyStepper struct{ retried error }

func (s onlyStepper) Step(int, error, retry.Class, float64) (time.Duration, bool) {
	return time.Second, true
}
func (s onlyStepper) Matches(err error) bool { return errors.Is(err, s.retried) }

// Policy.Immediate keeps what the policy's Stepper says of the errors it
// does not retry (retry.StepMatcher): wrapped for no waits, it still ends
// the request at such an error.
func TestImmediateKeepsMatches(t *testing.T) {
	retried := errors.New("retried")
	c := compile(Policy{Immediate: true, Stepper: func() retry.Stepper { return onlyStepper{retried} }})
	m, ok := c.rp.Stepper().(retry.StepMatcher)
	if !ok {
		t.Fatal("Immediate hides the Stepper's Matches")
	}
	if !m.Matches(retried) || m.Matches(errors.New("other")) {
		t.Fatal("Immediate's Matches differs from the Stepper's")
	}
	if w, ok := m.Step(1, retried, retry.ClassTransient, 0); w != 0 || !ok {
		t.Fatalf("Immediate's Step: %v, %v; want 0, true", w, ok)
	}
	if _, ok := compile(Policy{Immediate: true}).rp.Stepper().(retry.StepMatcher); ok {
		t.Fatal("Immediate without a Stepper of the policy's claims to match errors")
	}
}
