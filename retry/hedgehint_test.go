package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// TestHedgedRoundKeepsServerHint: in a hedged round, the first attempt is
// answered "503, come back in 2 s" while its hedge is still out; the hedge
// then fails without a hint (a reset connection). The server's word beats
// the backoff: the retry goes 2 s later, not after the 10 ms backoff that
// the last failure alone would give. A hint too long for MaxRetryAfter ends
// the call once the round has failed, as it would without hedging. The
// hint of an attempt that failed while another was in flight was dropped.
func TestHedgedRoundKeepsServerHint(t *testing.T) {
	reset := errors.New("read: connection reset")
	p := retry.Policy{MaxAttempts: 3, Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 10 * time.Millisecond, Jitter: backoff.None}}
	synctest.Test(t, func(t *testing.T) {
		// Attempt 1 fails at 60ms with the hint; the hedge, sent at 50ms,
		// fails at 70ms; the retry goes at 70ms + 2s and answers 1ms later.
		s := &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, time.Millisecond},
			errs: []error{retry.After(errors.New("503"), 2*time.Second), reset}}
		p := p
		p.Env = &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1), Rand: func() float64 { return 0 }}
		s.answers(t, p, 3, 70*time.Millisecond+2*time.Second+time.Millisecond)
	})
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, time.Millisecond},
			errs: []error{retry.After(errors.New("503"), 2*time.Minute), reset}}
		p := p
		p.Env = &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}
		_, err := retry.HedgeValue(t.Context(), p, s.call, s.discard)
		if !errors.Is(err, retry.ErrHintTooLong) || s.n.Load() != 2 {
			t.Errorf("HedgeValue = %v after %d attempts, want the hint too long after the round's 2", err, s.n.Load())
		}
	})
}

// TestHedgedRoundKeepsThrottling: in a hedged round, the first attempt is
// answered "429, too many requests" (no hint) while its hedge is out; the
// hedge then fails with a reset connection. The server said it is
// overloaded: the retry waits the throttling base (ThrottleBase), not the
// backoff of transient errors, as it would if the 429 had come last.
func TestHedgedRoundKeepsThrottling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, time.Millisecond},
			errs: []error{retry.Throttling(errors.New("429")), errors.New("read: connection reset")}}
		p := retry.Policy{MaxAttempts: 3, ThrottleBase: time.Second,
			Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 10 * time.Millisecond, Jitter: backoff.None},
			Env:     &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		s.answers(t, p, 3, 70*time.Millisecond+time.Second+time.Millisecond)
	})
}

// The retry after such a round is charged as a retry after a throttling
// answer: a token bucket takes ThrottleCost (5), not RetryCost (14).
func TestHedgedRoundThrottledRetryCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, err := budget.NewBucket(budget.BucketConfig{})
		if err != nil {
			t.Fatal(err)
		}
		s := &script{lat: []time.Duration{60 * time.Millisecond, 20 * time.Millisecond, time.Millisecond},
			errs: []error{retry.Throttling(errors.New("429")), errors.New("read: connection reset")}}
		p := retry.Policy{MaxAttempts: 3,
			Env: &retry.Env{Budget: bk, Hedger: fixedHedger(t, 50*time.Millisecond, 1), Sleep: func(context.Context, time.Duration) error { return nil }}}
		if _, err := retry.HedgeValue(context.Background(), p, s.call, s.discard); err != nil {
			t.Fatal(err)
		}
		// The hedge took RetryCost (14, it is charged as a retry), the retry
		// ThrottleCost (5); the retry's success gives back RetryCost.
		want := float64(budget.DefaultCapacity - 14 - 5 + 14)
		if lv := bk.Level(); lv != want {
			t.Errorf("bucket level %v, want %v (the retry after the 429 charged 5)", lv, want)
		}
	})
}

// TestNoHedgeAfterServerSaidWait: in a hedged round, the first hedge (sent
// at 50ms) is answered "come back in 2 s" (a hint), or "429, overloaded"
// (no hint), at 60ms while the first attempt is still out. The server has
// said not to send more now: no second hedge is sent at 100ms (the round
// goes on with the first attempt, which answers at 300ms). A second copy
// went out 40ms after the server asked for 2 s.
func TestNoHedgeAfterServerSaidWait(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"hint", retry.After(errors.New("503"), 2*time.Second)},
		{"throttled", retry.Throttling(errors.New("429"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &events{}
				s := &script{lat: []time.Duration{300 * time.Millisecond, 10 * time.Millisecond, time.Millisecond},
					errs: []error{nil, c.err}}
				p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 2), Observer: obs}}
				s.answers(t, p, 1, 300*time.Millisecond)
				if n, h := s.n.Load(), obs.count(event.Hedge); n != 2 || h != 1 {
					t.Errorf("%d attempts, %d hedges; want 2 attempts, 1 hedge: none after the server said to wait", n, h)
				}
			})
		})
	}
}
