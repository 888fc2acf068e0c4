package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// TestHedgedTimeoutNotFinal: in a hedged call, the first attempt runs
// into AttemptTimeout while its hedge is out, and the policy's classifier
// calls the inner error (context.DeadlineExceeded) final. An attempt that
// hit AttemptTimeout is retryable whatever the classifier says, as in Do:
// the round goes on and the hedge's answer is returned. The driver took
// it for final, and its loop then asked for a retry with the hedge still
// in flight: a third attempt after a backoff, and the hedge's answer late
// (or lost, when it too ran past the timeout).
func TestHedgedTimeoutNotFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &events{}
		s := &script{lat: []time.Duration{time.Second, 25 * time.Millisecond}}
		p := retry.Policy{AttemptTimeout: 30 * time.Millisecond,
			Classify: func(err error) retry.Class {
				if errors.Is(err, context.DeadlineExceeded) {
					return retry.ClassPermanent
				}
				return retry.ClassTransient
			},
			Env: &retry.Env{Hedger: fixedHedger(t, 10*time.Millisecond, 1), Observer: obs}}
		// The first attempt times out at 30ms; the hedge, sent at 10ms,
		// answers at 35ms.
		s.answers(t, p, 2, 35*time.Millisecond)
		synctest.Wait()
		if n := s.n.Load(); n != 2 {
			t.Errorf("%d attempts, want 2: no retry while the hedge is out", n)
		}
		// Reported as Do reports a timed-out attempt: a failure, not what
		// the classifier says of the inner error.
		if ends := obs.of(event.AttemptEnd); len(ends) != 2 || ends[0].Attempt != 1 || ends[0].Outcome != event.Failure {
			t.Errorf("attempt ends %+v, want attempt 1's first, a failure", ends)
		}
	})
}

// onlyMatches is a StepMatcher that retries only err, at once.
type onlyMatches struct{ err error }

func (m onlyMatches) Step(int, error, retry.Class, float64) (time.Duration, bool) { return 0, true }
func (m onlyMatches) Matches(err error) bool                                      { return errors.Is(err, m.err) }

// TestHedgedUnmatchedErrorFinal: in a hedged call, the hedge fails with an
// error that the policy's StepMatcher does not match (a document's
// retriers do not list it) while the first attempt is out. As in Do, that
// error is final: the call ends with it at once (ReasonPermanent), and the
// first attempt is cancelled. The call waited for the first attempt.
func TestHedgedUnmatchedErrorFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		listed, bad := errors.New("503"), errors.New("400")
		s := &script{lat: []time.Duration{time.Second, 10 * time.Millisecond}, errs: []error{nil, bad}}
		p := retry.Policy{Stepper: func() retry.Stepper { return onlyMatches{listed} },
			Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		start := time.Now()
		_, err := retry.HedgeValue(context.Background(), p, s.call, s.discard)
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ReasonPermanent || !errors.Is(err, bad) || time.Since(start) != 60*time.Millisecond {
			t.Fatalf("HedgeValue = %v after %v; want the unmatched error, final, at 60ms", err, time.Since(start))
		}
		synctest.Wait()
	})
}
