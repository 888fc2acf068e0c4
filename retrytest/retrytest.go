// Package retrytest helps users test their own code that uses package retry,
// without waiting: NoWait makes a policy skip its waits (and records them),
// Script makes a function that fails as told, and Recorder records every
// attempt, retry and give-up a policy reports.
//
// For code that calls HTTP services, Server is a real loopback server and
// RoundTripper an in-memory http.RoundTripper, both answering as a script
// says ("503,429:retry-after=1,200", see ParseScript) and recording every
// request with its headers, body and arrival time. The RoundTripper makes
// no network I/O, so tests of waits can run under testing/synctest.
//
// Tests that want real waits on virtual time should run under
// testing/synctest instead; the retry loop's timers are synctest-aware.
package retrytest

import (
	"context"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// NoWait returns p changed so that its waits end at once (unless the
// context is already done), and a Waits that records each wait the policy
// asked for. Everything else (attempt limits, classification, hints,
// budgets) behaves as in production, so a test sees the same decisions.
// p's Env, if any, is copied, not changed: the copy shares its guards.
func NoWait(p retry.Policy) (retry.Policy, *Waits) {
	w := &Waits{}
	p.Env = p.Env.Clone()
	p.Env.Sleep = func(ctx context.Context, d time.Duration) error {
		w.mu.Lock()
		w.d = append(w.d, d)
		w.mu.Unlock()
		return ctx.Err()
	}
	return p, w
}

// Waits records the waits a policy asked for. It is safe for concurrent
// use.
type Waits struct {
	mu sync.Mutex
	d  []time.Duration
}

// All returns the waits recorded so far, in order.
func (w *Waits) All() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// Script returns a function for retry.Do that returns errs[0] on its first
// call, errs[1] on its second, and so on, then nil for every later call.
// It is safe for concurrent use; Calls counts the calls.
func Script(errs ...error) *Scripted {
	return &Scripted{errs: errs}
}

// Scripted is a function that fails as scripted; see Script. It is safe
// for concurrent use: concurrent calls of its Func take the script's
// errors in turn, each once.
type Scripted struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

// Func returns the scripted function.
func (s *Scripted) Func() func(context.Context) error {
	return func(context.Context) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls++
		if s.calls <= len(s.errs) {
			return s.errs[s.calls-1]
		}
		return nil
	}
}

// Calls returns how many times the function was called.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Recorder is an event.Observer that keeps every event it is given, for
// assertions. Attach it as Policy.Env.Observer. It is safe for concurrent use;
// the zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []event.Event
}

// Observe records e.
func (r *Recorder) Observe(_ context.Context, e event.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns the recorded events, in order; with kinds given, only
// those of these kinds.
func (r *Recorder) Events(kinds ...event.Kind) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(kinds) == 0 {
		return append([]event.Event(nil), r.events...)
	}
	var out []event.Event
	for _, e := range r.events {
		for _, k := range kinds {
			if e.Kind == k {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// Attempts returns the AttemptEnd events: one per attempt made, with its
// outcome, error and duration.
func (r *Recorder) Attempts() []event.Event { return r.Events(event.AttemptEnd) }

// Retries returns the RetryScheduled events of retries: one per wait
// before a retry, with its length and source. A throttle's wait before an
// attempt (Source event.RateLimit) schedules no retry and is left out;
// Events(event.RetryScheduled) has it.
func (r *Recorder) Retries() []event.Event {
	var out []event.Event
	for _, e := range r.Events(event.RetryScheduled) {
		if e.Source != event.RateLimit {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets every recorded event.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}
