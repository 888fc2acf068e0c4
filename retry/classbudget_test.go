package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

// The loop tells a budget that charges by class (budget.Bucket, the AWS
// quota) whether a retry follows a throttling answer: a call that is
// throttled twice then fails once more pays 5 + 5 for its two retries, not
// 14 + 14.
func TestClassBudgetChargesThrottledRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want float64
	}{
		{"throttled", retry.Throttling(errors.New("429")), 500 - 2*budget.DefaultThrottleCost},
		{"transient", errors.New("500"), 500 - 2*budget.DefaultRetryCost},
	} {
		b, err := budget.NewBucket(budget.BucketConfig{})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{MaxAttempts: 3, Env: &retry.Env{Budget: b, Sleep: func(context.Context, time.Duration) error { return nil }}}
		_ = retry.Do(context.Background(), p, func(context.Context) error { return tc.err })
		if got := b.Level(); got != tc.want {
			t.Errorf("%s: level %v after two retries, want %v", tc.name, got, tc.want)
		}
	}
}
