package policy_test

import (
	"context"
	"fmt"
	"syscall"

	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A Step Functions Retry block, pasted as the documentation prints it,
// drives a Go call: the 503s are retried by the first retrier, the reset by
// the second, each with its own schedule.
func Example() {
	doc, err := policy.Parse([]byte(`"Retry": [ {
    "ErrorEquals": [ "HTTP.429", "HTTP.503" ],
    "IntervalSeconds": 1,
    "MaxAttempts": 3,
    "BackoffRate": 2.0
  }, {
    "ErrorEquals": [ "Net.Reset" ],
    "IntervalSeconds": 0.1,
    "MaxAttempts": 1
  } ]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := doc.Policy(policy.Options{})
	p.OnRetry = func(w retry.Wait) {
		fmt.Printf("attempt %d failed with %s: retry in %v\n", w.Attempt, policy.Name(w.Err), w.Delay)
	}
	p, _ = retrytest.NoWait(p) // a real program leaves this out and waits
	calls := 0
	err = retry.Do(context.Background(), p, func(ctx context.Context) error {
		calls++
		switch calls {
		case 1, 2:
			return unavailable{}
		case 3:
			return fmt.Errorf("read tcp 127.0.0.1:8080: %w", syscall.ECONNRESET)
		}
		return nil
	})
	fmt.Println("calls:", calls, "error:", err)
	// Output:
	// attempt 1 failed with HTTP.503: retry in 1s
	// attempt 2 failed with HTTP.503: retry in 2s
	// attempt 3 failed with Net.Reset: retry in 100ms
	// calls: 4 error: <nil>
}

type unavailable struct{}

func (unavailable) Error() string   { return "503 Service Unavailable" }
func (unavailable) StatusCode() int { return 503 }
