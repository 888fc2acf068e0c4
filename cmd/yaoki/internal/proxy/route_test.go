package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// Each way the transport can end without an answer, and the proxy's answer
// for it: status, reason, Retry-After and Do-Not-Retry.
func TestProblemFor(t *testing.T) {
	wrap := func(n int, re *retry.Error) error {
		return &httpretry.Error{Method: "GET", URL: "http://up/x", Attempts: n, Reason: re.Reason, Err: re}
	}
	for _, c := range []struct {
		name       string
		err        error
		retrying   bool
		status     int
		reason     string
		retryAfter int
		doNotRetry bool
	}{
		{"connection refused 3 times", wrap(3, &retry.Error{Reason: retry.ReasonExhausted, Last: syscall.ECONNREFUSED}), false, 502, "attempts_exhausted", -1, true},
		{"every attempt timed out", wrap(3, &retry.Error{Reason: retry.ReasonExhausted, Last: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}), false, 504, "attempts_exhausted", -1, true},
		{"breaker open", wrap(0, &retry.Error{Reason: retry.ReasonBreakerOpen, Wait: 12300 * time.Millisecond}), false, 503, "breaker_open", 13, true},
		{"budget exhausted", wrap(1, &retry.Error{Reason: retry.ReasonBudgetExhausted, Last: syscall.ECONNRESET}), false, 503, "budget_exhausted", -1, true},
		{"throttled locally", wrap(0, &retry.Error{Reason: retry.ReasonRejectedLocally}), false, 503, "rejected_locally", -1, true},
		{"deadline", wrap(2, &retry.Error{Reason: retry.ReasonDeadline, Wait: time.Second}), false, 504, "deadline", -1, true},
		{"one attempt for a retrying client", wrap(1, &retry.Error{Reason: retry.ReasonOuterLayer, Last: syscall.ECONNREFUSED}), true, 503, "outer_layer_retries", -1, false},
		{"TLS error", wrap(1, &retry.Error{Reason: retry.ReasonPermanent, Last: errors.New("x509: unknown authority")}), false, 502, "permanent_error", -1, true},
		{"POST without key", &httpretry.Error{Method: "POST", Attempts: 1, Reason: retry.ReasonPermanent, NotRetried: httpretry.ErrNotIdempotent,
			Err: &retry.Error{Reason: retry.ReasonPermanent, Last: syscall.ECONNRESET}}, false, 502, "not_idempotent", -1, false},
		{"POST without key, retrying client", &httpretry.Error{Method: "POST", Attempts: 1, Reason: retry.ReasonPermanent, NotRetried: httpretry.ErrNotIdempotent,
			Err: &retry.Error{Reason: retry.ReasonPermanent, Last: syscall.ECONNRESET}}, true, 502, "not_idempotent", -1, true},
		{"body too long", &httpretry.Error{Method: "PUT", Attempts: 1, Reason: retry.ReasonPermanent, NotRetried: httpretry.ErrBodyNotReplayable,
			Err: &retry.Error{Reason: retry.ReasonPermanent, Last: syscall.ECONNRESET}}, false, 502, "body_not_replayable", -1, false},
		{"not from httpretry", fmt.Errorf("dial: %w", context.DeadlineExceeded), false, 504, "upstream_timeout", -1, false},
		{"unknown", errors.New("boom"), false, 502, "upstream_error", -1, false},
		{"the client's body unreadable, while buffering", &httpretry.Error{Method: "PUT", Err: fmt.Errorf("httpretry: reading the request body to buffer it: %w", &clientBodyError{err: io.ErrUnexpectedEOF})}, false, 400, "bad_request_body", -1, false},
		{"the client's body unreadable, streamed", &httpretry.Error{Method: "PUT", Attempts: 1, Reason: retry.ReasonPermanent, NotRetried: httpretry.ErrBodyNotReplayable,
			Err: &retry.Error{Reason: retry.ReasonPermanent, Last: &clientBodyError{err: io.ErrUnexpectedEOF}}}, true, 400, "bad_request_body", -1, false},
	} {
		p, ra, dnr := problemFor(c.err, c.retrying)
		if p.Status != c.status || p.Reason != c.reason || ra != c.retryAfter || dnr != c.doNotRetry {
			t.Errorf("%s: got %d %s, Retry-After %d, Do-Not-Retry %v; want %d %s, %d, %v",
				c.name, p.Status, p.Reason, ra, dnr, c.status, c.reason, c.retryAfter, c.doNotRetry)
		}
	}
}

// The answer is RFC 9457 problem details, with its headers.
func TestWriteProxyProblem(t *testing.T) {
	w := httptest.NewRecorder()
	writeProxyProblem(w, proxyProblem{Status: 503, Reason: "breaker_open", Detail: "d", Attempts: 2}, 7)
	body := w.Body.String()
	if w.Code != 503 || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("Retry-After") != "7" ||
		body != `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"d","reason":"breaker_open","attempts":2}` {
		t.Fatalf("%d %v %s", w.Code, w.Header(), body)
	}
	w = httptest.NewRecorder()
	writeProxyProblem(w, proxyProblem{Status: 502, Reason: "attempts_exhausted"}, -1)
	if _, ok := w.Header()["Retry-After"]; ok || strings.Contains(w.Body.String(), `"attempts":`) {
		t.Fatalf("without a known wait or attempts: %v %s", w.Header(), w.Body.String())
	}
}

// The upstream gets the X-Forwarded-For, X-Forwarded-Host and
// X-Forwarded-Proto fields that httputil.ProxyRequest.SetXForwarded gives a
// request whose incoming chain is kept: the client appended to the chain,
// the client's Host, the scheme it came in on; and no X-Forwarded-For
// when the client's address has no port to split off.
func TestProxyForwardedHeaders(t *testing.T) {
	seen := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		io.WriteString(w, "ok\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	tr := newUpstreamTransport()
	defer tr.CloseIdleConnections()
	h := routeProxy(t, tr, nil, u)
	for _, c := range []struct {
		name   string
		remote string
		prior  []string
		tls    bool
	}{
		{"no chain", "192.0.2.1:1234", nil, false},
		{"a chain of one", "192.0.2.1:1234", []string{"10.0.0.1"}, false},
		{"a chain over two fields", "[2001:db8::1]:443", []string{"10.0.0.1, 10.0.0.2", "10.0.0.3"}, true},
		{"an address without port", "192.0.2.1", []string{"10.0.0.1"}, false},
	} {
		in := httptest.NewRequest("GET", "http://front.example:8080/x", nil)
		in.RemoteAddr = c.remote
		if c.prior != nil {
			in.Header["X-Forwarded-For"] = c.prior
		}
		if !c.tls {
			in.TLS = nil
		} else if in.TLS == nil {
			in.TLS = &tls.ConnectionState{}
		}
		// What httputil's own method sets on the same request with its
		// chain kept.
		want := &httputil.ProxyRequest{In: in, Out: in.Clone(context.Background())}
		want.Out.Header = http.Header{"X-Forwarded-For": c.prior}
		want.SetXForwarded()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, in)
		if w.Code != 200 {
			t.Fatalf("%s: status %d", c.name, w.Code)
		}
		got := <-seen
		for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
			if !slices.Equal(got[k], want.Out.Header[k]) {
				t.Errorf("%s: the upstream got %s %q, want %q", c.name, k, got[k], want.Out.Header[k])
			}
		}
	}
}
