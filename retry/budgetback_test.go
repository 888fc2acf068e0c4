package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

// Both budgets that charge retries give back those not sent.
var (
	_ retry.BudgetCanceller = (*budget.Bucket)(nil)
	_ retry.BudgetCanceller = (*budget.Share)(nil)
)

var constantSecond = backoff.Schedule{Kind: backoff.Constant, Base: time.Second, Jitter: backoff.None}

// TestRetryNotSentGivesBudgetBack: the budget pays for a retry when the
// loop decides to wait for it; a retry that is then not sent hands its cost
// back: the breaker refuses it (it tripped during the wait), or the caller
// cancels during the wait. A token bucket lost a retry's cost (14 tokens)
// at each, and a share counted a retry that never went, so that a burst of
// callers hanging up during their backoff drained the budget with nothing
// sent.
func TestRetryNotSentGivesBudgetBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bk, err := budget.NewBucket(budget.BucketConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := budget.NewShare(budget.ShareConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			b     retry.Budget
			level func() float64
		}{
			{"bucket", bk, bk.Level},
			{"share", sh, sh.Level},
		} {
			want := c.level()
			// The breaker refuses the retry.
			p := retry.Policy{Env: &retry.Env{Budget: c.b, Breaker: fakeOpenForRetries{}}}
			err := retry.Do(context.Background(), p, func(context.Context) error { return errFlaky })
			if !errors.Is(err, retry.ErrBreakerOpen) {
				t.Fatalf("%s: Do = %v, want the breaker's refusal of the retry", c.name, err)
			}
			if got := c.level(); got != want {
				t.Errorf("%s: budget level %v after a retry the breaker refused, want %v (its cost back)", c.name, got, want)
			}
			// The caller cancels during the wait.
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Millisecond, cancel)
			p = retry.Policy{Backoff: constantSecond, Env: &retry.Env{Budget: c.b}}
			err = retry.Do(ctx, p, func(context.Context) error { return errFlaky })
			if !errors.Is(err, retry.ErrCancelled) {
				t.Fatalf("%s: Do = %v, want cancelled during the wait", c.name, err)
			}
			if got := c.level(); got != want {
				t.Errorf("%s: budget level %v after a retry whose caller left during the wait, want %v", c.name, got, want)
			}
			// A retry that is sent keeps its cost.
			calls := 0
			p = retry.Policy{Env: &retry.Env{Budget: c.b, Sleep: func(context.Context, time.Duration) error { return nil }}}
			_ = retry.Do(context.Background(), p, func(context.Context) error {
				calls++
				if calls == 1 {
					return errFlaky
				}
				return nil
			})
			if got := c.level(); got >= want && c.name == "share" {
				t.Errorf("%s: budget level %v after a retry sent, want below %v", c.name, got, want)
			}
		}
	})
}

// flagBudget grants every retry and records the flags of each grant and
// each cancellation.
type flagBudget struct{ asked, cancelled []string }

func (b *flagBudget) AllowRetryAt(_ time.Time, timeout bool) bool {
	b.asked = append(b.asked, fmt.Sprintf("timeout=%v", timeout))
	return true
}
func (b *flagBudget) RecordAt(time.Time, bool, bool) {}
func (b *flagBudget) CancelRetryAt(_ time.Time, throttled, timeout bool) {
	b.cancelled = append(b.cancelled, fmt.Sprintf("throttled=%v timeout=%v", throttled, timeout))
}

// A budget that is not told the class of a retry (not a ClassBudget) gets
// it back with the flags it was asked with: not "throttled", even after a
// throttling answer, since it charged the retry as any other.
func TestRetryGivenBackWithTheFlagsAsked(t *testing.T) {
	b := &flagBudget{}
	p := retry.Policy{Env: &retry.Env{Budget: b, Breaker: fakeOpenForRetries{}}}
	_ = retry.Do(context.Background(), p, func(context.Context) error { return retry.Throttling(errFlaky) })
	if fmt.Sprint(b.asked, b.cancelled) != "[timeout=false] [throttled=false timeout=false]" {
		t.Errorf("asked %v, given back %v; want one retry asked and given back, neither throttled nor timed out", b.asked, b.cancelled)
	}
}
