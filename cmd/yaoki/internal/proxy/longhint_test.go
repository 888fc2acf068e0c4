package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

func TestProxyLongHintRelayedWithoutDoNotRetry(t *testing.T) {
	// An upstream that asks to be left alone for longer than the route's
	// policy waits (MaxRetryAfter, 60 s): the proxy stops at once and
	// relays the answer with its Retry-After. It added Do-Not-Retry, which
	// told a client that would wait that long (a batch job) never to come
	// back; Do-Not-Retry says the proxy's own retries were spent, and
	// here it made none. A hint the proxy waited for and a status it
	// retried to the end still get Do-Not-Retry.
	for _, c := range []struct {
		header, value string
		dnr           string
	}{
		{"Retry-After", "120", ""},
		{"Ratelimit", `"default";r=0;t=3600`, ""},
		{"Retry-After", "0", "true"}, // waited for, retried to the end
		{"", "", "true"},             // no hint: the backoff, to the end
	} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.header != "" {
				w.Header().Set(c.header, c.value)
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		// Waits of a millisecond: the test waits for no backoff.
		front := routeFront(t, up.URL, Route{Policy: retry.Policy{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: time.Millisecond}}})
		resp, err := front.Client().Get(front.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		up.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Do-Not-Retry") != c.dnr {
			t.Errorf("%s: %s: got %d with Do-Not-Retry %q, want 429 with %q", c.header, c.value, resp.StatusCode, resp.Header.Get("Do-Not-Retry"), c.dnr)
		}
		if c.header != "" && resp.Header.Get(c.header) != c.value {
			t.Errorf("%s: %s: relayed as %q", c.header, c.value, resp.Header.Get(c.header))
		}
	}
}

func TestProxyHintPastDeadlineRelayedWithoutDoNotRetry(t *testing.T) {
	// The same for a route whose policy has a deadline (DeadlineSeconds,
	// MaxElapsed) shorter than the wait asked for: a 429 with
	// Retry-After: 30 under a 10 s deadline. The proxy stops at once (the
	// wait would end past its deadline) and relayed the answer with
	// Do-Not-Retry, which told a client with a longer deadline never to
	// come back as asked; the proxy made no retry. Under a 60 s deadline
	// it waits the 30 s and retries (virtual time), and the 429 it retried
	// to the end keeps Do-Not-Retry.
	for _, c := range []struct {
		deadline time.Duration
		attempts int32
		dnr      string
	}{
		{10 * time.Second, 1, ""},
		{time.Minute, 2, "true"},
	} {
		synctest.Test(t, func(t *testing.T) {
			var got atomic.Int32
			dial := pipeRoute(t, 0, Route{Policy: retry.Policy{MaxAttempts: 2, MaxElapsed: c.deadline}}, io.Discard,
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got.Add(1)
					w.Header().Set("Retry-After", "30")
					w.WriteHeader(http.StatusTooManyRequests)
				}))
			conn := dial()
			io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 429 || resp.Header.Get("Do-Not-Retry") != c.dnr || resp.Header.Get("Retry-After") != "30" || got.Load() != c.attempts {
				t.Errorf("deadline %v: got %d with Do-Not-Retry %q, Retry-After %q after %d attempts; want 429 with %q, 30, after %d",
					c.deadline, resp.StatusCode, resp.Header.Get("Do-Not-Retry"), resp.Header.Get("Retry-After"), got.Load(), c.dnr, c.attempts)
			}
		})
	}
}
