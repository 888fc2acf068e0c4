// Package eventlog writes the toolkit's events to a log/slog logger, so
// that what retries do shows in the logs an application already has:
//
//	p := retry.Policy{Env: &retry.Env{Observer: eventlog.New(slog.Default())}}
//
// Levels: each retry is logged at Debug, each give-up at Warn, each breaker
// transition at Info; hedges sent, won and refused at Debug. Refusals by a budget, a breaker or a throttle are
// logged at Debug (the give-up that follows is the Warn line), idempotent
// replays at Debug and idempotency conflicts at Debug, except a key reused
// for a different request (422), which is a client's bug and logged at
// Info. Attempts themselves (event.AttemptStart and event.AttemptEnd) are not
// logged: the retry or give-up that follows a failed attempt carries its
// error, and a successful attempt is the normal case; count them with the
// metrics of module yaoki/otel.
//
// Attributes are named as the event package's Attr constants say, which are
// the names the OpenTelemetry observer gives the same facts (for example
// http.request.method, server.address, error.type, yaoki.attempt.number,
// yaoki.wait_seconds, yaoki.wait.source, yaoki.reason); only the fields that apply
// to an event are written.
//
// It is a package of its own, not a function of package event, so that the
// many packages that report events do not link log/slog into programs that
// never log them.
package eventlog

import (
	"context"
	"log/slog"

	"github.com/yaoki-go/yaoki/event"
)

// Logger is an event.Observer that writes events to a *slog.Logger. It is
// safe for concurrent use if its slog.Handler is (those of log/slog are).
// An event whose level the handler does not enable costs one Enabled call.
type Logger struct {
	l *slog.Logger
}

// New returns an observer that logs to l. A nil l logs to slog.Default()
// as it is at each event.
func New(l *slog.Logger) *Logger {
	return &Logger{l: l}
}

// Level returns the level at which events of kind e are logged, and false
// for events that are not logged at all (attempt starts and ends).
func Level(e event.Event) (slog.Level, bool) {
	switch e.Kind {
	case event.GaveUp:
		return slog.LevelWarn, true
	case event.BreakerStateChange:
		return slog.LevelInfo, true
	case event.Conflict:
		if e.Status == 422 {
			return slog.LevelInfo, true
		}
		return slog.LevelDebug, true
	case event.RetryScheduled, event.BudgetRefused, event.BreakerRejected, event.ThrottleRejected, event.Replay,
		event.Hedge, event.HedgeWon, event.HedgeRefused:
		return slog.LevelDebug, true
	case event.Redrive:
		// Parked work waits for an operator; work redriven is news; a
		// redrive that failed and is due again is routine.
		switch e.Outcome {
		case event.Rejected:
			return slog.LevelWarn, true
		case event.Success:
			return slog.LevelInfo, true
		}
		return slog.LevelDebug, true
	}
	return 0, false
}

var messages = [...]string{
	event.RetryScheduled:     "retry scheduled",
	event.GaveUp:             "gave up",
	event.BudgetRefused:      "retry refused by budget",
	event.BreakerStateChange: "breaker state changed",
	event.BreakerRejected:    "attempt refused by open breaker",
	event.ThrottleRejected:   "attempt rejected locally",
	event.Replay:             "idempotent replay",
	event.Conflict:           "idempotency conflict",
	event.Redrive:            "dead letter redriven",
	event.Hedge:              "hedge sent",
	event.HedgeWon:           "hedge won",
	event.HedgeRefused:       "hedge refused",
}

// Observe logs e at its Level.
func (x *Logger) Observe(ctx context.Context, e event.Event) {
	level, ok := Level(e)
	if !ok {
		return
	}
	l := x.l
	if l == nil {
		l = slog.Default()
	}
	if !l.Enabled(ctx, level) {
		return
	}
	msg := messages[e.Kind]
	if e.Kind == event.RetryScheduled && e.Source == event.RateLimit {
		msg = "attempt delayed by throttle" // no retry: the throttle holds an attempt back
		if e.Reason == "bulkhead" {
			msg = "attempt delayed by bulkhead" // it waited for a slot
		}
	}
	var buf [16]slog.Attr
	l.LogAttrs(ctx, level, msg, Attrs(buf[:0], e)...)
}

// Attrs appends to dst the attributes of e that apply to it, named as the
// event package's Attr constants say, and returns the extended slice.
// Durations are float seconds, their keys ending in _seconds; the error is written as error.type and
// error.message. Observers that log in another way can use it to name
// things the same.
func Attrs(dst []slog.Attr, e event.Event) []slog.Attr {
	dst = append(dst, slog.String(event.AttrComponent, e.Component))
	if e.Name != "" {
		dst = append(dst, slog.String(event.AttrName, e.Name))
	}
	if m := e.KnownMethod(); m != "" {
		dst = append(dst, slog.String(event.AttrMethod, m))
		if m != e.Method {
			dst = append(dst, slog.String(event.AttrMethodOriginal, e.Method))
		}
	}
	if e.Host != "" {
		addr, port := e.Server()
		dst = append(dst, slog.String(event.AttrServerAddress, addr))
		if port != 0 {
			dst = append(dst, slog.Int(event.AttrServerPort, port))
		}
	}
	if e.Attempt != 0 {
		dst = append(dst, slog.Int(event.AttrAttempt, e.Attempt))
	}
	if (e.Kind == event.AttemptEnd || e.Kind == event.Redrive) && e.Outcome != 0 {
		dst = append(dst, slog.String(event.AttrOutcome, e.Outcome.String()))
	}
	if e.Status != 0 {
		dst = append(dst, slog.Int(event.AttrStatusCode, e.Status))
	}
	switch e.Kind {
	case event.RetryScheduled:
		dst = append(dst, slog.Float64(event.AttrWait, e.Wait.Seconds()), slog.String(event.AttrWaitSource, e.Source.String()))
	case event.Hedge:
		dst = append(dst, slog.Float64(event.AttrWait, e.Wait.Seconds()))
	case event.BreakerRejected, event.ThrottleRejected:
		if e.Wait > 0 {
			dst = append(dst, slog.Float64(event.AttrWait, e.Wait.Seconds()))
		}
	case event.BreakerStateChange:
		dst = append(dst, slog.String(event.AttrStateFrom, e.From), slog.String(event.AttrStateTo, e.To))
	case event.BudgetRefused:
		dst = append(dst, slog.Float64(event.AttrLevel, e.Level))
	}
	if e.Kind == event.GaveUp || e.Kind == event.AttemptEnd || e.Kind == event.Redrive || e.Kind == event.HedgeWon {
		dst = append(dst, slog.Float64(event.AttrDuration, e.Duration.Seconds()))
	}
	if e.Reason != "" {
		dst = append(dst, slog.String(event.AttrReason, e.Reason))
	}
	if e.Key != "" {
		dst = append(dst, slog.String(event.AttrKey, e.Key))
	}
	if t := e.ErrorType(); t != "" {
		dst = append(dst, slog.String(event.AttrErrorType, t))
	}
	if e.Err != nil {
		dst = append(dst, slog.String(event.AttrErrorMessage, e.Err.Error()))
	}
	return dst
}
