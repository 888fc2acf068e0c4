package eventlog_test

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/yaoki-go/yaoki/event/eventlog"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// Attach the observer to a policy: each retry is a Debug line, the give-up
// a Warn line, with the same attribute names as the metrics.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "yaoki.duration_seconds" || a.Key == "error.message" {
				return slog.Attr{} // not repeatable from run to run
			}
			return a
		},
	}))
	p, _ := retrytest.NoWait(retry.Policy{
		MaxAttempts: 2,
		Env: &retry.Env{
			Observer: eventlog.New(logger),
			Rand:     func() float64 { return 0.5 }, // a repeatable jitter draw
		},
	})
	reset := errors.New("connection reset")
	_ = retry.Do(context.Background(), p, retrytest.Script(reset, reset).Func())
	// Output:
	// level=DEBUG msg="retry scheduled" yaoki.component=retry yaoki.attempt.number=1 yaoki.wait_seconds=0.025 yaoki.wait.source=backoff error.type=_OTHER
	// level=WARN msg="gave up" yaoki.component=retry yaoki.attempt.number=2 yaoki.reason=attempts_exhausted error.type=_OTHER
}
