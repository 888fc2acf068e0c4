package eventlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/event/eventlog"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// jsonLines returns a logger that writes JSON without times, and a function
// that decodes what it wrote, one map per line.
func jsonLines(t *testing.T, level slog.Level) (*slog.Logger, func() []map[string]any) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(h), func() []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			m := map[string]any{}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, m)
		}
		return out
	}
}

func TestRetryLoopLogs(t *testing.T) {
	l, lines := jsonLines(t, slog.LevelDebug)
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: eventlog.New(l), Rand: func() float64 { return 0.5 }}})
	boom := errors.New("boom")
	err := retry.Do(context.Background(), p, retrytest.Script(boom, retry.After(boom, 2*time.Second), boom).Func())
	if !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("Do = %v, want exhausted", err)
	}
	got := lines()
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (2 retries, 1 give-up): %v", len(got), got)
	}
	// Retry 1: full jitter draw 0.5 of 50 ms = 25 ms, from the backoff.
	want := []map[string]any{
		{"level": "DEBUG", "msg": "retry scheduled", "yaoki.component": "retry", "yaoki.attempt.number": 1.0,
			"yaoki.wait_seconds": 0.025, "yaoki.wait.source": "backoff",
			"error.type": "_OTHER", "error.message": "boom"},
		// Retry 2: the server's 2 s, plus 20 % × 0.5 of jitter = 2.2 s.
		{"level": "DEBUG", "msg": "retry scheduled", "yaoki.component": "retry", "yaoki.attempt.number": 2.0,
			"yaoki.wait_seconds": 2.2, "yaoki.wait.source": "server",
			"error.type": "_OTHER", "error.message": "boom"},
		{"level": "WARN", "msg": "gave up", "yaoki.component": "retry", "yaoki.attempt.number": 3.0,
			"yaoki.reason": "attempts_exhausted", "error.type": "_OTHER"},
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (line: %v)", i+1, k, got[i][k], v, got[i])
			}
		}
	}
	if _, ok := got[2]["yaoki.duration_seconds"]; !ok {
		t.Errorf("give-up line has no yaoki.duration_seconds: %v", got[2])
	}
	if msg, _ := got[2]["error.message"].(string); !strings.HasPrefix(msg, "retry: gave up after 3 attempts") {
		t.Errorf("give-up error.message = %q", msg)
	}
}

func TestLevelsAndAttributes(t *testing.T) {
	for _, tc := range []struct {
		e     event.Event
		level string // "" when not logged
		msg   string
		attrs map[string]any
	}{
		{e: event.Event{Kind: event.AttemptStart}},
		{e: event.Event{Kind: event.AttemptEnd, Outcome: event.Failure}},
		{e: event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: "payments", From: "closed", To: "open"},
			level: "INFO", msg: "breaker state changed",
			attrs: map[string]any{"yaoki.name": "payments", "yaoki.state.from": "closed", "yaoki.state.to": "open"}},
		{e: event.Event{Kind: event.BreakerRejected, Component: "httpretry", Method: "GET", Host: "api.example.com:8443", Attempt: 2, Wait: 3 * time.Second},
			level: "DEBUG", msg: "attempt refused by open breaker",
			attrs: map[string]any{"http.request.method": "GET", "server.address": "api.example.com", "server.port": 8443.0,
				"yaoki.attempt.number": 2.0, "yaoki.wait_seconds": 3.0}},
		{e: event.Event{Kind: event.BudgetRefused, Component: "retry", Level: 0.25, Reason: "budget_exhausted"},
			level: "DEBUG", msg: "retry refused by budget",
			attrs: map[string]any{"yaoki.budget_level": 0.25, "yaoki.reason": "budget_exhausted"}},
		{e: event.Event{Kind: event.ThrottleRejected, Component: "retry"}, level: "DEBUG", msg: "attempt rejected locally"},
		{e: event.Event{Kind: event.Replay, Component: "idempotency", Method: "POST", Key: "k1", Status: 201},
			level: "DEBUG", msg: "idempotent replay",
			attrs: map[string]any{"yaoki.idempotency.key": "k1", "http.response.status_code": 201.0}},
		{e: event.Event{Kind: event.Conflict, Component: "idempotency", Status: 422, Reason: "fingerprint_mismatch"},
			level: "INFO", msg: "idempotency conflict",
			attrs: map[string]any{"http.response.status_code": 422.0, "error.type": "422", "yaoki.reason": "fingerprint_mismatch"}},
		{e: event.Event{Kind: event.Conflict, Component: "idempotency", Status: 409, Reason: "in_progress"},
			level: "DEBUG", msg: "idempotency conflict"},
		{e: event.Event{Kind: event.Hedge, Component: "httpretry", Method: "GET", Attempt: 2, Wait: 50 * time.Millisecond},
			level: "DEBUG", msg: "hedge sent",
			attrs: map[string]any{"yaoki.attempt.number": 2.0, "yaoki.wait_seconds": 0.05}},
		{e: event.Event{Kind: event.HedgeWon, Component: "retry", Attempt: 3, Duration: 80 * time.Millisecond},
			level: "DEBUG", msg: "hedge won",
			attrs: map[string]any{"yaoki.attempt.number": 3.0, "yaoki.duration_seconds": 0.08}},
		{e: event.Event{Kind: event.HedgeRefused, Component: "retry", Attempt: 2, Reason: "hedge_brownout"},
			level: "DEBUG", msg: "hedge refused",
			attrs: map[string]any{"yaoki.reason": "hedge_brownout"}},
		{e: event.Event{Kind: event.GaveUp, Component: "httpretry", Status: 503, Attempt: 3, Duration: time.Second, Reason: "attempts_exhausted"},
			level: "WARN", msg: "gave up",
			attrs: map[string]any{"error.type": "503", "yaoki.duration_seconds": 1.0, "http.response.status_code": 503.0}},
	} {
		t.Run(tc.e.Kind.String(), func(t *testing.T) {
			l, lines := jsonLines(t, slog.LevelDebug)
			eventlog.New(l).Observe(context.Background(), tc.e)
			got := lines()
			if tc.level == "" {
				if len(got) != 0 {
					t.Fatalf("logged %v, want nothing", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d lines, want 1", len(got))
			}
			if got[0]["level"] != tc.level || got[0]["msg"] != tc.msg || got[0]["yaoki.component"] != tc.e.Component {
				t.Errorf("got %v, want level %s, msg %q, component %q", got[0], tc.level, tc.msg, tc.e.Component)
			}
			for k, v := range tc.attrs {
				if got[0][k] != v {
					t.Errorf("%s = %v, want %v (line: %v)", k, got[0][k], v, got[0])
				}
			}
		})
	}
}

func TestDisabledLevelCostsNothing(t *testing.T) {
	l := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := eventlog.New(l)
	e := event.Event{Kind: event.RetryScheduled, Component: "retry", Attempt: 1, Err: errors.New("x"), Wait: time.Second}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { o.Observe(ctx, e) }); n != 0 {
		t.Fatalf("a retry event below the handler's level allocates %v times, want 0", n)
	}
}

func TestNilLoggerUsesDefault(t *testing.T) {
	l, lines := jsonLines(t, slog.LevelDebug)
	// slog.SetDefault is global: restore it, and keep this test serial.
	old := slog.Default()
	slog.SetDefault(l)
	defer slog.SetDefault(old)
	eventlog.New(nil).Observe(context.Background(), event.Event{Kind: event.GaveUp, Component: "retry", Reason: "deadline"})
	if got := lines(); len(got) != 1 || got[0]["yaoki.reason"] != "deadline" {
		t.Fatalf("logged %v through the default logger, want one give-up line", got)
	}
}

func BenchmarkObserve(b *testing.B) {
	e := event.Event{Kind: event.RetryScheduled, Component: "httpretry", Method: "GET", Host: "api.example.com",
		Attempt: 1, Status: 503, Err: errors.New("503 Service Unavailable"), Wait: 40 * time.Millisecond, Source: event.Backoff}
	ctx := context.Background()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		b.Run("handler="+level.String(), func(b *testing.B) {
			o := eventlog.New(slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level})))
			b.ReportAllocs()
			for b.Loop() {
				o.Observe(ctx, e)
			}
		})
	}
}

func TestRedriveLevels(t *testing.T) {
	for outcome, want := range map[event.Outcome]slog.Level{event.Rejected: slog.LevelWarn, event.Success: slog.LevelInfo, event.Failure: slog.LevelDebug} {
		if got, ok := eventlog.Level(event.Event{Kind: event.Redrive, Outcome: outcome}); !ok || got != want {
			t.Errorf("redrive %v: level %v %v, want %v", outcome, got, ok, want)
		}
	}
}

// TestUnknownMethodIsOther: a method the semantic conventions do not know
// (one a server's client made up, or a lower-case "get") is logged as
// http.request.method "_OTHER", as the metrics count it, with the method
// as sent in http.request.method_original; a known one is logged as is.
func TestUnknownMethodIsOther(t *testing.T) {
	l, lines := jsonLines(t, slog.LevelDebug)
	obs := eventlog.New(l)
	for _, m := range []string{"FROB", "get", "PATCH"} {
		obs.Observe(context.Background(), event.Event{Kind: event.Replay, Component: "idempotency", Method: m, Status: 200})
	}
	got := lines()
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3", len(got))
	}
	for i, want := range []struct{ method, original any }{{"_OTHER", "FROB"}, {"_OTHER", "get"}, {"PATCH", nil}} {
		if got[i][event.AttrMethod] != want.method || got[i][event.AttrMethodOriginal] != want.original {
			t.Errorf("line %d: method %v, original %v; want %v, %v", i, got[i][event.AttrMethod], got[i][event.AttrMethodOriginal], want.method, want.original)
		}
	}
}

// TestThrottleLogged: what a throttle did is logged as such: a wait it
// put before an attempt is not called a retry, and a refusal because its
// wait would pass the deadline carries the reason and the wait; a wait
// for a bulkhead's slot is logged as the bulkhead's.
func TestThrottleLogged(t *testing.T) {
	l, lines := jsonLines(t, slog.LevelDebug)
	o := eventlog.New(l)
	ctx := context.Background()
	o.Observe(ctx, event.Event{Kind: event.RetryScheduled, Component: "retry", Attempt: 1, Wait: 2 * time.Second, Source: event.RateLimit})
	o.Observe(ctx, event.Event{Kind: event.ThrottleRejected, Component: "retry", Attempt: 1, Wait: 4 * time.Second, Reason: "deadline"})
	o.Observe(ctx, event.Event{Kind: event.RetryScheduled, Component: "retry", Attempt: 2, Wait: time.Second, Source: event.RateLimit, Reason: "bulkhead"})
	got := lines()
	want := []map[string]any{
		{"level": "DEBUG", "msg": "attempt delayed by throttle", "yaoki.attempt.number": 1.0, "yaoki.wait_seconds": 2.0, "yaoki.wait.source": "rate_limit"},
		{"level": "DEBUG", "msg": "attempt rejected locally", "yaoki.attempt.number": 1.0, "yaoki.wait_seconds": 4.0, "yaoki.reason": "deadline"},
		{"level": "DEBUG", "msg": "attempt delayed by bulkhead", "yaoki.attempt.number": 2.0, "yaoki.wait_seconds": 1.0, "yaoki.wait.source": "rate_limit", "yaoki.reason": "bulkhead"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (line: %v)", i+1, k, got[i][k], v, got[i])
			}
		}
	}
}
