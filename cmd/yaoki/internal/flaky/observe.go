package flaky

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/event"
)

// flakyAnswer is one answer of yaoki flaky, as it logs it.
type flakyAnswer struct {
	n, op, pos int // request, keyed operation and script position
	elapsed    time.Duration
	attemptHdr string // the client's attempt header, "" if none
	key        string // its Idempotency-Key, "" if none
	answer     string // the step as the script writes it
	st         step
	replayed   bool
}

// serverAddr is the address that r came to, the one flaky listens on:
// the events' Host, a label of the metrics, which the Host field a client
// writes (any value) would make unbounded. r.Host when the server did not
// say (a request made by hand).
func serverAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return r.Host
}

// reportAnswer reports an answer of yaoki flaky: to the observer, as the attempt
// it ends for the client (event.AttemptEnd with Component "flaky", Attempt
// from the client's attempt header, the status and the outcome the client
// will see; a reset is an attempt that failed with ECONNRESET) and, for a
// replay, an event.Replay; and to the logger, as a structured record. It
// reports whether it logged the answer, so that flaky writes its plain log
// line otherwise.
func reportAnswer(o *telemetry.Running, r *http.Request, a flakyAnswer) (logged bool) {
	if o == nil {
		return false
	}
	if obs := o.Observer; obs != nil {
		host := serverAddr(r)
		e := event.Event{Kind: event.AttemptEnd, Time: time.Now(), Component: "flaky", Method: r.Method, Host: host,
			Status: a.st.status, Outcome: answerOutcome(a.st), Duration: a.st.slow}
		e.Attempt, _ = strconv.Atoi(a.attemptHdr)
		if a.st.reset {
			e.Err = syscall.ECONNRESET
		}
		obs.Observe(r.Context(), e)
		if a.replayed {
			obs.Observe(r.Context(), event.Event{Kind: event.Replay, Time: e.Time, Component: "flaky",
				Method: r.Method, Host: host, Status: a.st.status, Key: a.key})
		}
	}
	if o.Logger == nil {
		return false
	}
	attrs := []slog.Attr{
		slog.Int("flaky.request", a.n),
		slog.Int64("flaky.ms", a.elapsed.Milliseconds()),
		slog.String(event.AttrMethod, r.Method),
		slog.String("url.path", r.URL.Path),
		slog.String(event.AttrAttempt, a.attemptHdr),
		slog.String(event.AttrKey, a.key),
		slog.Int("flaky.operation", a.op),
		slog.Int("flaky.step", a.pos),
		slog.String("flaky.answer", a.answer),
	}
	if a.st.status != 0 {
		attrs = append(attrs, slog.Int(event.AttrStatusCode, a.st.status))
	}
	o.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	return true
}

// answerOutcome is how a client that follows the toolkit's rules takes an
// answer: 2xx and 3xx succeed, 429 and 503 are throttling, 408, 500, 502,
// 504 and resets are failures worth retrying, and the rest are final.
func answerOutcome(st step) event.Outcome {
	switch {
	case st.reset:
		return event.Failure
	case st.status == 429 || st.status == 503:
		return event.Throttled
	case st.status == 408 || st.status == 500 || st.status == 502 || st.status == 504:
		return event.Failure
	case st.status < 400:
		return event.Success
	}
	return event.Rejected
}

// say writes a line of flaky's own (listening, summary) as a log record
// with --log-format, or as the plain line format makes.
func say(o *telemetry.Running, w io.Writer, msg string, format string, args ...any) {
	if o == nil || o.Logger == nil {
		fmt.Fprintf(w, format, args...)
		return
	}
	o.Logger.Info(msg, slog.String("text", strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")))
}

// flakyMetricsHelp says what flaky's metrics and logs hold.
const flakyMetricsHelp = `
For flaky, each answer counts as an attempt of its client
(yaoki_attempts_total with yaoki_component="flaky", by status and by the
outcome a client following yaoki's rules sees; a reset is a failure with
error_type="connection_reset"), and each replay of a keyed operation as an
idempotency replay. With --log-format, its request lines (and its listening
and summary lines) are log records too: msg "request", "listening", "summary".`
