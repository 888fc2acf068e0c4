package layer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/retry"
)

func TestParseAttempt(t *testing.T) {
	for v, want := range map[string]int{
		"": 0, "1": 1, " 2 ": 2, "1000": 1000, "1001": 1001, "0": 0, "-1": 0, "x": 0, "1.5": 0, "99999": 99999, "+3": 3,
		"007": 7, "000": 0, "+": 0, "++1": 0, "999999999": 999999999, "1000000000": MaxAttempt, "123456789012345678901234567890": MaxAttempt,
	} {
		if got := parseAttempt(v); got != want {
			t.Errorf("parseAttempt(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestMiddlewareMarksRetryingCallers(t *testing.T) {
	var single bool
	var attempt int
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		single = retry.IsSingleAttempt(r.Context())
		attempt = Attempt(r)
	}))
	for _, c := range []struct {
		header  string
		single  bool
		attempt int
	}{
		{"", false, 0},
		{"1", true, 1},
		{"3", true, 3},
		{"garbage", true, 1}, // a caller in the protocol, whatever it wrote
		{" ", false, 0},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Attempt-Count", c.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if single != c.single || attempt != c.attempt {
			t.Errorf("Attempt-Count %q: single %v, attempt %d; want %v, %d", c.header, single, attempt, c.single, c.attempt)
		}
	}
}

// TestAttemptCountRepeated: an attempt header that reached the server in
// more than one field line, or as one line of comma-separated values (a
// proxy or server library that merges repeated fields, as Node.js and
// Envoy do), still comes from a retrying caller: its largest valid number
// counts. Only the first field line was read, and a list was not a number,
// so the handler's own loop retried, multiplying the caller's retries.
func TestAttemptCountRepeated(t *testing.T) {
	var attempt int
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempt = Attempt(r)
		if retry.IsSingleAttempt(r.Context()) != (attempt > 0) {
			t.Errorf("attempt %d, single attempt %v", attempt, retry.IsSingleAttempt(r.Context()))
		}
	}))
	for _, c := range []struct {
		lines []string
		want  int
	}{
		{[]string{"2, 3"}, 3},
		{[]string{"3,2"}, 3},
		{[]string{"x", "4"}, 4},
		{[]string{"4", "x"}, 4},
		{[]string{"1, x"}, 1},
		{[]string{"", "2"}, 2},
		{[]string{"2", "5"}, 5},
		{[]string{"x, y", "0"}, 1},
		{[]string{","}, 0},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		for _, l := range c.lines {
			r.Header.Add("Attempt-Count", l)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if attempt != c.want {
			t.Errorf("Attempt-Count %q: attempt %d, want %d", c.lines, attempt, c.want)
		}
	}
}

func TestConfiguredNames(t *testing.T) {
	mw, err := New(Config{AttemptHeader: "x-try", DoNotRetryHeader: "x-final", RetryStatus: 502})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Try", "2")
	var got bool
	mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = FromRetryingCaller(r)
		DoNotRetry(w, r)
	})).ServeHTTP(rec, r)
	if !got || rec.Header().Get("X-Final") != "true" {
		t.Fatalf("retrying %v, headers %v", got, rec.Header())
	}
	for _, c := range []Config{{AttemptHeader: "bad name"}, {DoNotRetryHeader: "a:b"}, {RetryStatus: 429}, {GiveUpStatus: 200}} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", c, err)
		}
	}
}

var nowait = func(context.Context, time.Duration) error { return nil }

func TestFail(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	ctx := context.Background()
	fail := func(context.Context) error { return down }
	p := retry.Policy{Env: &retry.Env{Sleep: nowait}}
	open, _ := breaker.New(breaker.Config{ConsecutiveFailures: 1, OpenJitter: breaker.Disabled})
	open.Execute(ctx, fail)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	hinted := func(context.Context) error { return retry.After(down, 2500*time.Millisecond) }
	// A second left: the server's 2.5 s, and a backoff of 2 s, pass it.
	soon, cancelSoon := context.WithTimeout(ctx, time.Second)
	defer cancelSoon()
	slow := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Constant, Base: 2 * time.Second, Jitter: backoff.None}, Env: &retry.Env{Sleep: nowait}}

	cases := []struct {
		name       string
		err        error
		status     int
		dnr        bool
		retryAfter string
	}{
		{"single attempt for a retrying caller", retry.Do(retry.SingleAttempt(ctx), p, fail), 503, false, ""},
		{"single attempt with a server hint", retry.Do(retry.SingleAttempt(ctx), p, hinted), 503, false, "3"},
		{"own retries exhausted", retry.Do(ctx, p, fail), 503, true, ""},
		{"wrapped, as httpretry does", fmt.Errorf("httpretry: GET /x: %w", retry.Do(ctx, p, fail)), 503, true, ""},
		{"breaker open", retry.Do(ctx, retry.Policy{Env: &retry.Env{Breaker: open, Sleep: nowait}}, fail), 503, true, "30"},
		{"permanent", retry.Do(ctx, p, func(context.Context) error { return retry.Permanent(down) }), 502, true, ""},
		// The server's word outlasted the deadline: the layers above are
		// told when to come back, as for an overlong hint.
		{"server hint past the deadline", retry.Do(soon, p, hinted), 503, true, "3"},
		{"backoff past the deadline", retry.Do(soon, slow, fail), 503, true, ""},
		{"caller cancelled", retry.Do(cancelled, p, fail), 503, false, ""},
		{"not a retry error", down, 502, false, ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		var status int
		Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status = Fail(w, r, c.err)
		})).ServeHTTP(rec, r)
		if rec.Code != c.status || status != c.status {
			t.Errorf("%s: status %d (returned %d), want %d", c.name, rec.Code, status, c.status)
		}
		if got := rec.Header().Get("Do-Not-Retry") == "true"; got != c.dnr {
			t.Errorf("%s: Do-Not-Retry %v, want %v", c.name, got, c.dnr)
		}
		if got := rec.Header().Get("Retry-After"); got != c.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", c.name, got, c.retryAfter)
		}
		if !strings.Contains(rec.Body.String(), c.err.Error()) {
			t.Errorf("%s: body %q does not say what failed", c.name, rec.Body)
		}
	}
}

// FuzzParseAttempt: any header value parses to 0 (not a retrying caller)
// or to an attempt number in 1..MaxAttempt that is the value's decimal
// number (MaxAttempt for a larger one).
func FuzzParseAttempt(f *testing.F) {
	for _, s := range []string{"", "1", "3", " 2 ", "1000", "1001", "0", "-1", "+3", "x", "1e3", "0x10", "\t7\n", "٣"} {
		f.Add(s)
	}
	for _, s := range []string{"garbage", "attempt=2; max=3", " , ", ",,", "x, 5", "1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		// A field line that is not blank says the caller retries: never
		// 0, whatever it holds; one that is blank says nothing.
		blank := !strings.ContainsFunc(v, func(r rune) bool { return r != ',' && !unicode.IsSpace(r) })
		if got := attemptOf([]string{v}); (got == 0) != blank || got < 0 || got > MaxAttempt {
			t.Fatalf("attemptOf(%q) = %d; blank %v", v, got, blank)
		}
		n := parseAttempt(v)
		if n == 0 {
			return
		}
		if n < 1 || n > MaxAttempt {
			t.Fatalf("parseAttempt(%q) = %d, outside 1..MaxAttempt", v, n)
		}
		if got := strings.TrimLeft(strings.TrimSpace(v), "+0"); got != fmt.Sprint(n) && !(n == MaxAttempt && len(got) > 9) {
			t.Fatalf("parseAttempt(%q) = %d, not the value's number", v, n)
		}
	})
}
