package curl

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// retryWindow is curl's --retry-max-time: after a failed attempt, a retry
// is made only while less than max has passed since the first attempt
// started, and only if the server's Retry-After, added to the whole
// seconds passed, does not reach past max. The attempt in flight is never
// cut, nor the wait before the next one: -m bounds those. This is what
// curl 7.88 does (tool_operate.c, and measured against a loopback server:
// --retry-delay 1 --retry-max-time 2 makes 3 attempts, at 0, 1 and 2 s; a
// 3 s answer under --retry-max-time 1 is not retried; Retry-After: 3
// under --retry-max-time 2 ends the retries at once). A retryWindow is
// safe for concurrent use (hedged attempts end concurrently).
type retryWindow struct {
	max   time.Duration // > 0
	start time.Time     // when the first attempt started

	mu      sync.Mutex
	stopped string // why a retry was refused, "" if none was
}

// stopAt returns why a failed attempt that ended at now, whose server hint
// is hint (-1: none), may not be retried, or "" if it may.
func (w *retryWindow) stopAt(now time.Time, hint time.Duration) string {
	elapsed := now.Sub(w.start)
	if elapsed >= w.max {
		return fmt.Sprintf("--retry-max-time %s passed since the first attempt", flags.SecondsText(w.max))
	}
	// curl adds the whole seconds passed (it counts in seconds) to the
	// hint: a hint that ends a fraction of a second past the limit is
	// still honoured.
	if hint >= 0 && elapsed.Truncate(time.Second)+hint > w.max {
		return fmt.Sprintf("the server's Retry-After (%s) would end past --retry-max-time %s (%s since the first attempt)", flags.SecondsText(hint), flags.SecondsText(w.max), flags.SecondsText(elapsed))
	}
	return ""
}

// classify wraps next, the classification of errors that httpretry finds
// retryable, so that none is retried once the window is closed.
func (w *retryWindow) classify(next func(error) retry.Class) func(error) retry.Class {
	if next == nil {
		next = httpretry.Classify
	}
	return func(err error) retry.Class {
		hint := time.Duration(-1)
		var h retry.Hinter
		if errors.As(err, &h) {
			hint = h.RetryAfter()
		}
		if why := w.stopAt(time.Now(), hint); why != "" {
			w.mu.Lock()
			w.stopped = why
			w.mu.Unlock()
			return retry.ClassPermanent
		}
		return next(err)
	}
}

// why returns why a retry was refused, or "".
func (w *retryWindow) why() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}
