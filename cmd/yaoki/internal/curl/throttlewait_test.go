package curl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// overloaded is an error the retry loop classes as throttling (a 429).
type overloaded struct{}

func (overloaded) Error() string   { return "429 Too Many Requests" }
func (overloaded) Throttled() bool { return true }

// TestVerboseThrottleWait: with --retry-mode adaptive, a 429 starts the
// client-side rate limiter, which makes the retry wait for a token after
// its backoff. -v says so, with the attempt that waits, and
// %{num_retries} counts one retry: the limiter's wait is not a second one.
func TestVerboseThrottleWait(t *testing.T) {
	var out strings.Builder
	obs := &httpObserver{w: &lockedWriter{w: &out}, verbose: true, limit: "3"}
	th, err := throttle.NewCubic(throttle.CubicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p := retry.Policy{Env: &retry.Env{Throttle: th, Observer: obs, Sleep: func(context.Context, time.Duration) error { return nil }}}
	calls := 0
	err = retry.Do(t.Context(), p, func(context.Context) error {
		if calls++; calls == 1 {
			return overloaded{}
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("Do = %v after %d calls, want success at the second", err, calls)
	}
	if _, _, retries := obs.counts(); retries != 1 {
		t.Errorf("%d retries counted, want 1:\n%s", retries, out.String())
	}
	for _, want := range []string{"* retrying: waiting", "before attempt 2, from backoff", "* throttled: waiting", "before attempt 2 for the client-side rate limiter"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-v lacks %q:\n%s", want, out.String())
		}
	}
}
