package event_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// An Observer sees every attempt, retry and give-up of a policy. Here a
// function prints them; package eventlog logs them with log/slog, and module
// yaoki/otel turns them into OpenTelemetry metrics.
func Example() {
	print := event.Func(func(_ context.Context, e event.Event) {
		switch e.Kind {
		case event.AttemptEnd:
			fmt.Printf("attempt %d: %s (error.type=%q)\n", e.Attempt, e.Outcome, e.ErrorType())
		case event.RetryScheduled:
			fmt.Printf("retry after attempt %d, wait from %s\n", e.Attempt, e.Source)
		case event.GaveUp:
			fmt.Printf("gave up after %d attempts: %s\n", e.Attempt, e.Reason)
		}
	})
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: print}})
	unavailable := errors.New("partner unavailable")
	call := retrytest.Script(unavailable, context.DeadlineExceeded, unavailable)
	_ = retry.Do(context.Background(), p, call.Func())
	// Output:
	// attempt 1: failure (error.type="_OTHER")
	// retry after attempt 1, wait from backoff
	// attempt 2: failure (error.type="timeout")
	// retry after attempt 2, wait from backoff
	// attempt 3: failure (error.type="_OTHER")
	// gave up after 3 attempts: attempts_exhausted
}
