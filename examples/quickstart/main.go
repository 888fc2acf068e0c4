// Command quickstart shows the retry core on its embedded defaults: a local
// function fails twice with a transient error, then succeeds, and each
// attempt and wait is printed.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

var errFlaky = errors.New("partner: connection reset by peer")

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gave up:", err)
		os.Exit(1)
	}
}

// run is the program, writing to w: its test runs it on virtual time.
func run(w io.Writer) error {
	start := time.Now()
	calls := 0
	callPartner := func(ctx context.Context) error {
		calls++
		fmt.Fprintf(w, "%8.1f ms  attempt %d\n", ms(time.Since(start)), calls)
		if calls <= 2 {
			return errFlaky
		}
		return nil
	}

	p := retry.Policy{} // the defaults: 3 attempts, exponential ×2 from 50 ms, full jitter, 20 s cap
	p.OnRetry = func(wait retry.Wait) {
		b := p.Backoff.Bounds(wait.Attempt)
		fmt.Fprintf(w, "%8.1f ms  attempt %d failed (%v, %s): waiting %.1f ms from %s (full jitter in [%v, %v))\n",
			ms(time.Since(start)), wait.Attempt, wait.Err, wait.Class, ms(wait.Delay), wait.Source, b.Min, b.Max)
	}

	if err := retry.Do(context.Background(), p, callPartner); err != nil {
		return err
	}
	fmt.Fprintf(w, "%8.1f ms  succeeded after %d attempts\n\n", ms(time.Since(start)), calls)

	fmt.Fprintln(w, "The default schedule (retry n waits a uniform draw below min(20 s, 50 ms·2^(n−1))):")
	for _, b := range (backoff.Schedule{}).Plan(6) {
		fmt.Fprintf(w, "  retry %d: min %v, mean %v, max %v\n", b.Retry, b.Min, b.Mean, b.Max)
	}

	// A permanent error is not retried.
	calls = 0
	err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		calls++
		return retry.Permanent(errors.New("partner: 400 bad request"))
	})
	fmt.Fprintf(w, "\nA permanent error after %d attempt: %v\n", calls, err)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
