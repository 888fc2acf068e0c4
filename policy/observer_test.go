package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// The breaker a document makes reports its changes to the observer of the
// base policy's Env, as every other guard's events go there: an operator
// who gave the policy an observer sees the breaker open.
func TestDocumentBreakerReportsToObserver(t *testing.T) {
	doc, err := policy.Parse([]byte(`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 0}], "Breaker": {"ConsecutiveFailures": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &retrytest.Recorder{}
	p := doc.Policy(policy.Options{Base: retry.Policy{Env: &retry.Env{Observer: rec}}})
	boom := errors.New("boom")
	for range 2 {
		_ = retry.Do(context.Background(), p, func(context.Context) error { return boom })
	}
	got := rec.Events(event.BreakerStateChange)
	if len(got) != 1 || got[0].To != "open" {
		t.Fatalf("breaker changes seen by the policy's observer: %+v; want one, to open", got)
	}
}
