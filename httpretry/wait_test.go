package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// These tests wait on virtual time: the scripted RoundTripper answers in
// memory, so that the waits of the retry loop run under testing/synctest.

// gaps returns the time between consecutive attempts.
func gaps(as []retrytest.Attempt) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(as); i++ {
		out = append(out, as[i].At.Sub(as[i-1].At))
	}
	return out
}

func TestRetryAfterHonoured(t *testing.T) {
	cases := []struct {
		name, script string
		min, max     time.Duration // the wait before attempt 2
	}{
		{"seconds", "429:retry-after=3,200", 3 * time.Second, 3600 * time.Millisecond},
		{"seconds, 503", "503:retry-after=7,200", 7 * time.Second, 8400 * time.Millisecond},
		{"IMF-fixdate", "503:retry-after=date+5s,200", 5 * time.Second, 6 * time.Second},
		{"RFC 850", "429:retry-after=rfc850+5s,200", 5 * time.Second, 6 * time.Second},
		{"asctime", "503:retry-after=asctime+5s,200", 5 * time.Second, 6 * time.Second},
		// "Come back now" is no hint: the backoff applies (throttled: from
		// 1 s, full jitter, so below 1 s), which spreads the clients told.
		{"date in the past", "503:retry-after=date-1h,200", 0, time.Second},
		{"zero", "429:retry-after=0,200", 0, time.Second},
		// Invalid values are ignored: the backoff applies.
		{"negative", "429:retry-after=-5,200", 0, time.Second},
		{"malformed", "429:retry-after=soon,200", 0, time.Second},
		{"fraction", "429:retry-after=1.5,200", 0, time.Second},
		{"fraction, huge", "429:retry-after=99999999999.5,200", 0, time.Second},
		// A well-formed hint, however long, is believed: over
		// MaxRetryAfter, the answer is returned (TestLongHintGivesUp).
		// Retry-After is a singleton field; a server (or a proxy in
		// front of it) that sends it twice asked for both: the longer
		// valid one is waited for, so that the client comes back before
		// neither (the first one alone was read).
		{"two fields: the longer", "503:retry-after=1:header=Retry-After=5,200", 5 * time.Second, 6 * time.Second},
		{"two fields: the longer, first", "429:retry-after=4:header=Retry-After=2,200", 4 * time.Second, 4800 * time.Millisecond},
		{"two fields, one malformed", "503:retry-after=soon:header=Retry-After=3,200", 3 * time.Second, 3600 * time.Millisecond},
		{"two fields, a date past", "503:retry-after=date-1h:header=Retry-After=2,200", 2 * time.Second, 2400 * time.Millisecond},
		// Without Retry-After, the RateLimit fields on 429 and 503.
		{"RateLimit", `429:header=RateLimit="default";r=0;t=4,200`, 4 * time.Second, 4800 * time.Millisecond},
		{"RateLimit-Reset", `503:header=RateLimit-Reset=2,200`, 2 * time.Second, 2400 * time.Millisecond},
		{"X-RateLimit-Reset", `429:header=X-RateLimit-Reset=6,200`, 6 * time.Second, 7200 * time.Millisecond},
		{"Retry-After beats RateLimit", `429:retry-after=1:header=RateLimit="d";r=0;t=9,200`, time.Second, 1200 * time.Millisecond},
		{"RateLimit ignored on 500", `500:header=RateLimit-Reset=30,200`, 0, 50 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := retrytest.NewRoundTripper(t, c.script)
				tr := &httpretry.Transport{Base: rt}
				resp, _, err := do(t, tr, "GET", "http://api.test/", nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("got %v, %v; want 200", resp, err)
				}
				g := gaps(rt.Attempts())
				if len(g) != 1 || g[0] < c.min || g[0] > c.max {
					t.Fatalf("waited %v before attempt 2, want within [%v, %v]", g, c.min, c.max)
				}
			})
		})
	}
}

func TestRetryAfterJitterSpreads(t *testing.T) {
	// Up to +20 %: with the draws 0 and 0.999, waits of 10 s and ~12 s.
	for _, u := range []float64{0, 0.999} {
		synctest.Test(t, func(t *testing.T) {
			rt := retrytest.NewRoundTripper(t, "503:retry-after=10,200")
			tr := &httpretry.Transport{Base: rt, Policy: retry.Policy{Env: &retry.Env{Rand: func() float64 { return u }}}}
			if _, _, err := do(t, tr, "GET", "http://api.test/", nil); err != nil {
				t.Fatal(err)
			}
			want := 10*time.Second + time.Duration(float64(2*time.Second)*u)
			if g := gaps(rt.Attempts()); g[0] != want {
				t.Fatalf("draw %v: waited %v, want %v", u, g[0], want)
			}
		})
	}
}

// "Retry-After: 0" (or a date already past) tells every client it reached
// to come back now; retried at once, they would all return at the same
// instant. The backoff of the status's class spreads them instead: with the
// draw 0.5, half the 1 s throttle base for a 429 or 503, 25 ms for a 500.
func TestRetryAfterZeroSpreadByBackoff(t *testing.T) {
	for script, want := range map[string]time.Duration{
		"429:retry-after=0,200":       500 * time.Millisecond,
		"503:retry-after=date-1h,200": 500 * time.Millisecond,
		"500:retry-after=0,200":       25 * time.Millisecond,
	} {
		synctest.Test(t, func(t *testing.T) {
			rt := retrytest.NewRoundTripper(t, script)
			rec := &retrytest.Recorder{}
			tr := &httpretry.Transport{Base: rt, Observer: rec, Policy: retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0.5 }}}}
			if _, _, err := do(t, tr, "GET", "http://api.test/", nil); err != nil {
				t.Fatal(err)
			}
			if g := gaps(rt.Attempts()); len(g) != 1 || g[0] != want {
				t.Fatalf("%s: waited %v, want %v", script, g, want)
			}
			if s := rec.Events(event.RetryScheduled); len(s) != 1 || s[0].Source != event.Backoff {
				t.Errorf("%s: scheduled %+v, want one retry with its wait from the backoff", script, s)
			}
		})
	}
}

func TestOverCapRetryAfterReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "429:retry-after=120:body=slow down,200")
		rec := &retrytest.Recorder{}
		tr := &httpretry.Transport{Base: rt, Observer: rec}
		start := time.Now()
		resp, body, err := do(t, tr, "GET", "http://api.test/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 429 || body != "slow down" || resp.Header.Get("Retry-After") != "120" {
			t.Fatalf("got %d %q, want the 429 with its body and Retry-After", resp.StatusCode, body)
		}
		if el := time.Since(start); el != 0 || len(rt.Attempts()) != 1 {
			t.Fatalf("took %v and %d attempts, want 0 and 1", el, len(rt.Attempts()))
		}
		if g := rec.Events(event.GaveUp); len(g) != 1 || g[0].Reason != "hint_too_long" || g[0].Status != 429 {
			t.Errorf("got give-up events %+v, want hint_too_long with status 429", g)
		}
	})
}

func TestRetryAfterPastDeadlineReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:retry-after=5,200")
		tr := &httpretry.Transport{Base: rt}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		start := time.Now()
		resp, _, err := send(t, tr, req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("got %v, %v; want the 503", resp, err)
		}
		if el := time.Since(start); el != 0 {
			t.Fatalf("took %v, want 0: a wait past the deadline is not started", el)
		}
	})
}

func TestCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:retry-after=10,200")
		tr := &httpretry.Transport{Base: rt}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(4*time.Second, cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, context.Canceled) || !errors.Is(err, retry.ErrCancelled) {
			t.Fatalf("got %v, %v; want an error matching context.Canceled and retry.ErrCancelled", resp, err)
		}
		if n := len(rt.Attempts()); n != 1 {
			t.Errorf("got %d attempts, want 1", n)
		}
		if n := rt.OpenBodies(); n != 0 {
			t.Errorf("%d response bodies left open", n)
		}
	})
}

func TestThrownAwayResponsesDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:body=busy busy,502:body=bad gateway,500:body=oops,200:body=ok")
		// Four attempts on a new host: more than the default budget's
		// starting credit (two retries) grants.
		tr := &httpretry.Transport{Base: rt, Policy: retry.Policy{MaxAttempts: 4}, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
		resp, body, err := do(t, tr, "GET", "http://api.test/", nil)
		if err != nil || resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("got %v %q, %v; want 200 ok", resp, body, err)
		}
		if open, drained := rt.OpenBodies(), rt.DrainedBodies(); open != 0 || drained != 4 {
			t.Fatalf("open %d, drained %d response bodies; want 0 open, 4 drained (3 thrown away, 1 read)", open, drained)
		}
	})
}

func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "hang,200:delay=500ms:body=in time")
		tr := &httpretry.Transport{Base: rt, Policy: retry.Policy{AttemptTimeout: time.Second, MaxElapsed: time.Minute}}
		resp, err := tr.RoundTrip(mustRequest(t, "GET", "http://api.test/"))
		if err != nil {
			t.Fatal(err)
		}
		// The body is read after RoundTrip returned, and after the
		// attempt's own timeout would have passed: it must still be
		// readable (the attempt's bound covers the wait for headers).
		time.Sleep(2 * time.Second) // virtual time: this runs in a synctest bubble
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "in time" {
			t.Fatalf("body %q, %v; want \"in time\"", b, err)
		}
		g := gaps(rt.Attempts())
		if len(g) != 1 || g[0] < time.Second || g[0] > time.Second+50*time.Millisecond {
			t.Errorf("attempt 2 started %v after attempt 1, want 1 s (the timeout) plus at most 50 ms of backoff", g)
		}
	})
}

func TestAttemptTimeoutPostNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "hang,200")
		tr := &httpretry.Transport{Base: rt, Policy: retry.Policy{AttemptTimeout: time.Second}}
		resp, err := tr.RoundTrip(mustRequest(t, "POST", "http://api.test/"))
		if resp != nil || !errors.Is(err, httpretry.ErrNotIdempotent) || !errors.Is(err, retry.ErrAttemptTimeout) {
			t.Fatalf("got %v, %v; want a timeout matching ErrNotIdempotent", resp, err)
		}
		if n := len(rt.Attempts()); n != 1 {
			t.Errorf("got %d attempts, want 1: a POST that timed out may have been executed", n)
		}
	})
}

func TestEventsCarryHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:retry-after=2,reset,200")
		rec := &retrytest.Recorder{}
		var retries []retry.Wait
		tr := &httpretry.Transport{Base: rt, Observer: rec,
			Policy: retry.Policy{OnRetry: func(w retry.Wait) { retries = append(retries, w) }}}
		if _, _, err := do(t, tr, "DELETE", "http://api.test:8443/orders/7", nil); err != nil {
			t.Fatal(err)
		}
		ends := rec.Attempts()
		if len(ends) != 3 {
			t.Fatalf("got %d attempt-end events, want 3", len(ends))
		}
		wantStatus := []int{503, 0, 200}
		wantOutcome := []event.Outcome{event.Throttled, event.Failure, event.Success}
		for i, e := range ends {
			if e.Component != "httpretry" || e.Method != "DELETE" || e.Host != "api.test:8443" || e.Attempt != i+1 {
				t.Errorf("event %d: %+v, want component httpretry, DELETE, host api.test:8443", i+1, e)
			}
			if e.Status != wantStatus[i] || e.Outcome != wantOutcome[i] {
				t.Errorf("event %d: status %d outcome %v, want %d %v", i+1, e.Status, e.Outcome, wantStatus[i], wantOutcome[i])
			}
		}
		rs := rec.Retries()
		if len(rs) != 2 || rs[0].Source != event.ServerHint || rs[0].Wait < 2*time.Second || rs[0].Status != 503 || rs[1].Source != event.Backoff {
			t.Errorf("got retry events %+v, want a server hint ≥ 2 s after the 503, then a backoff", rs)
		}
		var se *httpretry.StatusError
		if len(retries) != 2 || !errors.As(retries[0].Err, &se) || se.StatusCode() != 503 || se.RetryAfter() != 2*time.Second || !se.Throttled() {
			t.Errorf("OnRetry got %+v, want a *StatusError 503 with its 2 s hint first", retries)
		}
	})
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestTimeoutSeenThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "hang,hang,hang")
		client := (&httpretry.Transport{Base: rt, Policy: retry.Policy{AttemptTimeout: time.Second}}).Client()
		_, err := client.Get("http://api.test/")
		var ue *url.Error
		if !errors.As(err, &ue) || !ue.Timeout() || !errors.Is(err, retry.ErrExhausted) {
			t.Fatalf("got %v, want a *url.Error whose Timeout() is true", err)
		}
		if n := len(rt.Attempts()); n != 3 {
			t.Errorf("got %d attempts, want 3", n)
		}
	})
}

// TestCancelledBeforeSending: a request whose context has ended before
// RoundTrip is not sent, and the error counts no attempt; so do the
// Transport's events: no attempt start or end, one give-up after 0
// attempts whose reason is the cancellation.
func TestCancelledBeforeSending(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, observed := range []bool{false, true} {
		var (
			mu  sync.Mutex
			evs []string
		)
		tr := &httpretry.Transport{Base: base}
		if observed {
			tr.Observer = event.Func(func(_ context.Context, e event.Event) {
				mu.Lock()
				defer mu.Unlock()
				evs = append(evs, fmt.Sprintf("%v#%d:%s:%v", e.Kind, e.Attempt, e.Reason, errors.Is(e.Err, context.Canceled)))
			})
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		var he *httpretry.Error
		if resp != nil || !errors.Is(err, context.Canceled) || !errors.As(err, &he) {
			t.Fatalf("observed=%v: got %v, %v; want an *httpretry.Error matching context.Canceled", observed, resp, err)
		}
		if he.Attempts != 0 || he.Reason != retry.ReasonCancelled || strings.Contains(err.Error(), "1 attempt") {
			t.Errorf("observed=%v: Attempts %d, Reason %v, error %q: want cancelled after 0 attempts, none said", observed, he.Attempts, he.Reason, err)
		}
		mu.Lock()
		if observed && strings.Join(evs, " ") != "gave_up#0:cancelled:true" {
			t.Errorf("events %q, want one gave_up#0 with reason cancelled and the context's error", evs)
		}
		mu.Unlock()
	}
	if n := got.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

// skewedServer answers 503 with "Retry-After: <its now + 30 s>" by a
// clock skew away from the client's, stamping the answer's Date by the
// same clock as every server does, then 200.
type skewedServer struct {
	skew  time.Duration
	age   time.Duration // the 503 comes from a cache that has held it this long
	calls int
}

func (s *skewedServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.calls++
	serverNow := time.Now().Add(s.skew)
	resp := &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{}, Body: http.NoBody, Request: req}
	resp.Header.Set("Date", serverNow.UTC().Format(http.TimeFormat))
	if s.calls == 1 {
		made := serverNow.Add(-s.age)
		resp.StatusCode, resp.Status = 503, "503 Service Unavailable"
		resp.Header.Set("Date", made.UTC().Format(http.TimeFormat))
		resp.Header.Set("Retry-After", made.Add(30*time.Second).UTC().Format(http.TimeFormat))
		if s.age > 0 {
			resp.Header.Set("Age", strconv.Itoa(int(s.age.Seconds())))
		}
	}
	return resp, nil
}

// TestRetryAfterDateOnServerClock: a Retry-After date is the server's
// clock's; a client whose clock differs by a minute (a VM that drifted, a
// device without NTP) reads it against the answer's Date, also the
// server's, and waits the 30 s asked (+ up to 20 %). Read against its own
// clock, the date was in the past for a client a minute ahead (it came
// back at once, with every other such client), and 90 s away for one a
// minute behind (more than MaxRetryAfter: it gave up). An answer a cache
// has held for 20 s (Age: 20) has 10 s of its 30 left.
func TestRetryAfterDateOnServerClock(t *testing.T) {
	for _, c := range []struct {
		skew, age, want time.Duration
	}{
		{-time.Minute, 0, 30 * time.Second},
		{time.Minute, 0, 30 * time.Second},
		{time.Minute, 20 * time.Second, 10 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			srv := &skewedServer{skew: c.skew, age: c.age}
			tr := &httpretry.Transport{Base: srv}
			start := time.Now()
			resp, _, err := do(t, tr, "GET", "http://api.test/", nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("server %v off, age %v: got %v, %v; want 200 after one retry", c.skew, c.age, resp, err)
			}
			if took := time.Since(start); took < c.want || took > c.want*12/10 {
				t.Errorf("server %v off, age %v: came back after %v, want %v (+ up to 20 %%)", c.skew, c.age, took, c.want)
			}
		})
	}
}

// TestQuotaSpentOnOtherStatus: an API that answers a spent quota with
// another status than 429 (GitHub's primary rate limit answers 403 with
// X-RateLimit-Remaining: 0 and X-RateLimit-Reset; a gateway's 502 may
// carry its upstream's fields) says when the quota comes back: a status
// the Transport retries (403 added to Statuses here) waits for that reset,
// when a remaining field says 0 in so many words. Without one, as on 500
// with a bare RateLimit-Reset, the fields are not why the request failed
// and the backoff applies. The 403 was retried after 50 ms backoffs, each
// answered 403 again, until the attempts ran out.
func TestQuotaSpentOnOtherStatus(t *testing.T) {
	cases := []struct {
		name, script string
		min, max     time.Duration
	}{
		{"403, X-RateLimit-Remaining: 0", "403:header=X-RateLimit-Remaining=0:header=X-RateLimit-Reset=6,200", 6 * time.Second, 7200 * time.Millisecond},
		{"403, RateLimit-Remaining: 0", "403:header=RateLimit-Remaining=0:header=RateLimit-Reset=3,200", 3 * time.Second, 3600 * time.Millisecond},
		{"502, RateLimit r=0", `502:header=RateLimit="d";r=0;t=4,200`, 4 * time.Second, 4800 * time.Millisecond},
		{"500, bare RateLimit-Reset", "500:header=RateLimit-Reset=30,200", 0, 50 * time.Millisecond},
		{"502, RateLimit without r", `502:header=RateLimit="d";t=9,200`, 0, 50 * time.Millisecond},
		{"403, quota left", "403:header=X-RateLimit-Remaining=5:header=X-RateLimit-Reset=6,200", 0, 50 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := retrytest.NewRoundTripper(t, c.script)
				tr := &httpretry.Transport{Base: rt, Statuses: append(httpretry.DefaultStatuses(), 403)}
				resp, _, err := do(t, tr, "GET", "http://api.test/", nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("got %v, %v; want 200", resp, err)
				}
				if g := gaps(rt.Attempts()); len(g) != 1 || g[0] < c.min || g[0] > c.max {
					t.Fatalf("waited %v before attempt 2, want within [%v, %v]", g, c.min, c.max)
				}
			})
		})
	}
}
