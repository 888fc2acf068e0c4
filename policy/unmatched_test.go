package policy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// outcome is how a call under a document ended, as its user and its
// operator see it: the error, the attempts made, and the events reported.
type outcome struct {
	err      error
	calls    int
	gaveUp   string          // the GaveUp event's Reason
	attempts []event.Outcome // each AttemptEnd's Outcome
	retries  int             // RetryScheduled events
}

// runTimed runs a call under doc on synctest's virtual clock: attempt n
// fails with errs[n-1], a nil entry hangs until the attempt's own timeout
// (TimeoutSeconds), and an attempt past the list succeeds.
func runTimed(t *testing.T, doc *policy.Document, errs ...error) outcome {
	t.Helper()
	var o outcome
	synctest.Test(t, func(t *testing.T) {
		rec := &retrytest.Recorder{}
		p := doc.Policy(policy.Options{Base: retry.Policy{Env: &retry.Env{Observer: rec, Rand: func() float64 { return 0.5 }}}})
		o.err = retry.Do(context.Background(), p, func(ctx context.Context) error {
			o.calls++
			if o.calls > len(errs) {
				return nil
			}
			if e := errs[o.calls-1]; e != nil {
				return e
			}
			<-ctx.Done()
			return ctx.Err()
		})
		for _, e := range rec.Events(event.GaveUp) {
			o.gaveUp = e.Reason
		}
		for _, e := range rec.Attempts() {
			o.attempts = append(o.attempts, e.Outcome)
		}
		o.retries = len(rec.Retries())
	})
	return o
}

// hang stands, in runTimed's list, for an attempt that runs into its
// timeout.
var hang error

// An attempt that runs past TimeoutSeconds, when no retrier lists
// States.Timeout (or a name that matches it), ends the call at once as a
// permanent error, as Step Functions fails the state with States.Timeout:
// not as "attempts exhausted", whether or not attempts remain. The error
// is the attempt's own underneath.
func TestUnmatchedTimeoutIsPermanent(t *testing.T) {
	doc := mustParse(t, `{
  "Retry": [ {"ErrorEquals": ["HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 2} ],
  "TimeoutSeconds": 5
}`)
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
	}{
		{"first attempt", []error{hang}, 1},
		{"after a retried 503", []error{status(503), hang}, 2},
		// The third attempt is the last the document allows (1 + 2).
		{"on the last attempt", []error{status(503), status(503), hang}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runTimed(t, doc, tc.errs...)
			if o.calls != tc.calls {
				t.Errorf("%d calls, want %d", o.calls, tc.calls)
			}
			var e *retry.Error
			if !errors.As(o.err, &e) {
				t.Fatalf("err %v (%T), want a *retry.Error", o.err, o.err)
			}
			if e.Reason != retry.ReasonPermanent || !errors.Is(o.err, retry.ErrPermanent) || errors.Is(o.err, retry.ErrExhausted) {
				t.Errorf("reason %v, err %q; want permanent error, not attempts exhausted", e.Reason, o.err)
			}
			if !strings.Contains(o.err.Error(), ": permanent error: last error: retry: attempt timed out after 5s") {
				t.Errorf("message %q; want it to say permanent error, with the timeout as the last error", o.err)
			}
			if !errors.Is(o.err, retry.ErrAttemptTimeout) || !errors.Is(o.err, context.DeadlineExceeded) || policy.Name(e.Last) != policy.Timeout {
				t.Errorf("err %v: errors.Is must see the attempt's timeout and its own error through it; Name(Last) = %q, want %s",
					o.err, policy.Name(e.Last), policy.Timeout)
			}
			if o.gaveUp != retry.ReasonPermanent.Key() {
				t.Errorf("GaveUp event reason %q, want %q", o.gaveUp, retry.ReasonPermanent.Key())
			}
			if n := len(o.attempts); n == 0 || o.attempts[n-1] != event.Rejected {
				t.Errorf("AttemptEnd outcomes %v; want the timed-out attempt rejected (an error that is not retried)", o.attempts)
			}
			if o.retries != tc.calls-1 {
				t.Errorf("%d retries scheduled, want %d", o.retries, tc.calls-1)
			}
		})
	}
}

// A timeout that a retrier matches is retried, and when that retrier has
// used its MaxAttempts the call ends as "attempts exhausted", even though
// another retrier still has retries left and the call has attempts left.
func TestMatchedTimeoutExhausts(t *testing.T) {
	doc := mustParse(t, `{
  "Retry": [
    {"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 1, "MaxAttempts": 1},
    {"ErrorEquals": ["HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 3}
  ],
  "TimeoutSeconds": 5
}`)
	o := runTimed(t, doc, hang, status(503), hang)
	if o.calls != 3 || !errors.Is(o.err, retry.ErrExhausted) || errors.Is(o.err, retry.ErrPermanent) {
		t.Fatalf("%d calls, err %v; want 3 calls (the timeout retrier's one retry), attempts exhausted", o.calls, o.err)
	}
	if !errors.Is(o.err, retry.ErrAttemptTimeout) || o.gaveUp != retry.ReasonExhausted.Key() {
		t.Errorf("err %v, GaveUp reason %q; want the timeout underneath, reason %q", o.err, o.gaveUp, retry.ReasonExhausted.Key())
	}
	if want := []event.Outcome{event.Failure, event.Throttled, event.Failure}; !slices.Equal(o.attempts, want) {
		t.Errorf("AttemptEnd outcomes %v, want %v", o.attempts, want)
	}
	// MaxAttempts 0: the retrier matches and allows no retry.
	doc.Retry[0].MaxAttempts = 0
	if o := runTimed(t, doc, hang); o.calls != 1 || !errors.Is(o.err, retry.ErrExhausted) {
		t.Errorf("MaxAttempts 0: %d calls, err %v; want 1 call, attempts exhausted", o.calls, o.err)
	}
	// MaxTotalAttempts ends a call whose retrier has retries left: exhausted too.
	doc.Retry[0].MaxAttempts, doc.MaxTotalAttempts = 5, 2
	if o := runTimed(t, doc, hang, hang); o.calls != 2 || !errors.Is(o.err, retry.ErrExhausted) {
		t.Errorf("MaxTotalAttempts 2: %d calls, err %v; want 2 calls, attempts exhausted", o.calls, o.err)
	}
}

// Errors other than timeouts that no retrier matches end the call as
// permanent too (the document's classifier says so), and that is what the
// timeouts above are held to.
func TestUnmatchedErrorIsPermanent(t *testing.T) {
	doc := mustParse(t, `{"Retry": [{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 1}], "TimeoutSeconds": 5}`)
	for _, errs := range [][]error{{status(404)}, {status(503), status(404)}} {
		o := runTimed(t, doc, errs...)
		if o.calls != len(errs) || !errors.Is(o.err, retry.ErrPermanent) || errors.Is(o.err, retry.ErrExhausted) ||
			o.gaveUp != retry.ReasonPermanent.Key() {
			t.Errorf("%v: %d calls, err %v, GaveUp reason %q; want %d calls, permanent", errs, o.calls, o.err, o.gaveUp, len(errs))
		}
	}
}
