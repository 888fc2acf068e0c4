package httpretry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// fast is a policy for tests against real servers: the default rules, with
// waits of at most a millisecond (throttling included) so that tests
// do not sleep.
func fast(p retry.Policy) retry.Policy {
	p.Backoff = backoff.Schedule{Base: time.Millisecond, Cap: time.Millisecond}
	p.ThrottleBase = time.Millisecond
	return p
}

// serverTransport returns a Transport over a fresh http.Transport for srv,
// closing its idle connections when the test ends.
func serverTransport(t *testing.T, srv *retrytest.Server, tr *httpretry.Transport) *httpretry.Transport {
	t.Helper()
	base := srv.Client().Transport
	t.Cleanup(srv.Client().CloseIdleConnections)
	tr.Base = base
	tr.Policy = fast(tr.Policy)
	return tr
}

func do(t *testing.T, rt http.RoundTripper, method, url string, body io.Reader) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, rt, req)
}

func send(t *testing.T, rt http.RoundTripper, req *http.Request) (*http.Response, string, error) {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if resp != nil {
			t.Errorf("RoundTrip returned both a response (%d) and an error (%v)", resp.StatusCode, err)
		}
		return nil, "", err
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr != nil {
		t.Fatalf("reading the response body: %v", rerr)
	}
	return resp, string(b), nil
}

// wantAnswer stops the test unless a call answered status with body and
// no error.
func wantAnswer(t *testing.T, resp *http.Response, body string, err error, status int, wantBody string) {
	t.Helper()
	if err != nil {
		t.Fatalf("got error %v, want %d %q and no error", err, status, wantBody)
	}
	if resp.StatusCode != status || body != wantBody {
		t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, status, wantBody)
	}
}

// wantAttempts stops the test unless srv saw n attempts, and returns them.
func wantAttempts(t *testing.T, srv *retrytest.Server, n int) []retrytest.Attempt {
	t.Helper()
	as := srv.Attempts()
	if len(as) != n {
		t.Fatalf("got %d attempts, want %d", len(as), n)
	}
	return as
}

func header(as []retrytest.Attempt, name string) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Header.Get(name))
	}
	return out
}

func TestRetryableStatusThenSuccess(t *testing.T) {
	srv := retrytest.NewServer(t, "503,500:body=oops,200:body=hello")
	tr := serverTransport(t, srv, &httpretry.Transport{})
	resp, body, err := do(t, tr, "GET", srv.URL+"/x", nil)
	wantAnswer(t, resp, body, err, 200, "hello")
	as := wantAttempts(t, srv, 3)
	if got := strings.Join(header(as, "Attempt-Count"), ","); got != "1,2,3" {
		t.Errorf("Attempt-Count headers: got %s, want 1,2,3", got)
	}
}

func TestExhaustedReturnsLastResponseReadable(t *testing.T) {
	srv := retrytest.NewServer(t, "503:body=first,502:body=second,504:body=last,200")
	tr := serverTransport(t, srv, &httpretry.Transport{})
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 504, "last") // the last response, readable
	wantAttempts(t, srv, 3)                     // the default
}

func TestNonRetryableStatusReturnedAtOnce(t *testing.T) {
	for _, code := range []string{"200", "201", "304", "400", "401", "403", "404", "409", "422", "501", "505"} {
		t.Run(code, func(t *testing.T) {
			srv := retrytest.NewServer(t, code+":body=b,200")
			tr := serverTransport(t, srv, &httpretry.Transport{})
			resp, _, err := do(t, tr, "GET", srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Status[:3]; got != code {
				t.Errorf("got %s, want %s", got, code)
			}
			if n := len(srv.Attempts()); n != 1 {
				t.Errorf("got %d attempts, want 1", n)
			}
		})
	}
}

func TestStatusesConfigurable(t *testing.T) {
	srv := retrytest.NewServer(t, "404,503,200")
	tr := serverTransport(t, srv, &httpretry.Transport{Statuses: []int{404}})
	resp, _, err := do(t, tr, "GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || len(srv.Attempts()) != 2 {
		t.Fatalf("got %d after %d attempts, want 503 after 2 (404 retried, 503 not in the set)", resp.StatusCode, len(srv.Attempts()))
	}
}

func TestIdempotentMethodsRetried(t *testing.T) {
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"} {
		t.Run(m, func(t *testing.T) {
			srv := retrytest.NewServer(t, "503,200")
			tr := serverTransport(t, srv, &httpretry.Transport{})
			resp, _, err := do(t, tr, m, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || len(srv.Attempts()) != 2 {
				t.Fatalf("got %d after %d attempts, want 200 after 2", resp.StatusCode, len(srv.Attempts()))
			}
		})
	}
}

func TestPostWithoutKeySentOnce(t *testing.T) {
	for _, m := range []string{"POST", "PATCH", "PROPFIND"} {
		t.Run(m, func(t *testing.T) {
			srv := retrytest.NewServer(t, "503:body=busy,200")
			rec := &retrytest.Recorder{}
			tr := serverTransport(t, srv, &httpretry.Transport{Observer: rec})
			resp, body, err := do(t, tr, m, srv.URL, strings.NewReader(`{"pay":10}`))
			wantAnswer(t, resp, body, err, 503, "busy")
			as := wantAttempts(t, srv, 1)
			if k := as[0].Header.Get("Idempotency-Key"); k != "" {
				t.Errorf("got Idempotency-Key %q with KeyOff, want none", k)
			}
			g := rec.Events(event.GaveUp)
			if len(g) != 1 || g[0].Reason != "not_idempotent" {
				t.Errorf("got give-up events %+v, want one with reason not_idempotent", g)
			}
		})
	}
}

var uuid4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestPostWithKeyRetriedSameKey(t *testing.T) {
	cases := []struct {
		name   string
		mode   httpretry.KeyMode
		header string // the caller's key header, "" for none
		want   string // the key expected on every attempt, "uuid" for a created one
	}{
		{"given", httpretry.KeyOff, "Idempotency-Key", "caller-key-1"},
		{"given X-", httpretry.KeyOff, "X-Idempotency-Key", ""},
		{"auto", httpretry.KeyAuto, "", "uuid"},
		{"auto keeps the caller's", httpretry.KeyAuto, "Idempotency-Key", "caller-key-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := retrytest.NewServer(t, "503,429,200:body=done")
			tr := serverTransport(t, srv, &httpretry.Transport{IdempotencyKey: c.mode})
			req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("order=1"))
			if c.header != "" {
				req.Header.Set(c.header, "caller-key-1")
			}
			resp, body, err := send(t, tr, req)
			wantAnswer(t, resp, body, err, 200, "done")
			as := wantAttempts(t, srv, 3)
			keys := header(as, "Idempotency-Key")
			for i, k := range keys {
				if k != keys[0] {
					t.Errorf("attempt %d key %q, attempt 1 key %q: want the same key on every attempt", i+1, k, keys[0])
				}
				if string(as[i].Body) != "order=1" {
					t.Errorf("attempt %d body %q, want \"order=1\"", i+1, as[i].Body)
				}
			}
			switch {
			case c.want == "uuid" && !uuid4.MatchString(keys[0]):
				t.Errorf("created key %q is not a UUID v4", keys[0])
			case c.want != "uuid" && keys[0] != c.want:
				t.Errorf("got key %q, want %q", keys[0], c.want)
			}
			if req.Header.Get("Attempt-Count") != "" || (c.header == "" && req.Header.Get("Idempotency-Key") != "") {
				t.Errorf("the caller's request was modified: %v", req.Header)
			}
		})
	}
}

func TestAutoKeyNewPerLogicalRequest(t *testing.T) {
	srv := retrytest.NewServer(t, "503,200,503,200")
	tr := serverTransport(t, srv, &httpretry.Transport{IdempotencyKey: httpretry.KeyAuto})
	for range 2 {
		if _, _, err := do(t, tr, "POST", srv.URL, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	k := header(srv.Attempts(), "Idempotency-Key")
	if k[0] != k[1] || k[2] != k[3] || k[0] == k[2] {
		t.Fatalf("got keys %q, want one key per logical request, shared by its attempts", k)
	}
	// Idempotent requests get no key.
	if _, _, err := do(t, tr, "PUT", srv.URL, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if k := srv.Attempts()[4].Header.Get("Idempotency-Key"); k != "" {
		t.Errorf("PUT got key %q, want none", k)
	}
}

// onlyReader hides the type of its reader so that http.NewRequest cannot
// set GetBody.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestBodyIdenticalOnEveryAttempt(t *testing.T) {
	payload := strings.Repeat("0123456789", 3000) // 30 kB
	bodies := map[string]func() io.Reader{
		"GetBody":         func() io.Reader { return strings.NewReader(payload) },
		"buffered":        func() io.Reader { return onlyReader{strings.NewReader(payload)} },
		"buffered, empty": func() io.Reader { return onlyReader{strings.NewReader("")} },
	}
	for name, mk := range bodies {
		t.Run(name, func(t *testing.T) {
			srv := retrytest.NewServer(t, "503,reset,500,200")
			// Four attempts on a new host: more than the default budget's
			// starting credit grants.
			tr := serverTransport(t, srv, &httpretry.Transport{Policy: retry.Policy{MaxAttempts: 4}, Guards: httpretry.Guards{Budget: httpretry.NoBudget}})
			resp, _, err := do(t, tr, "PUT", srv.URL, mk())
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("got %d, want 200", resp.StatusCode)
			}
			as := wantAttempts(t, srv, 4)
			want := as[0].Body
			if name != "buffered, empty" && string(want) != payload {
				t.Fatalf("attempt 1 body has %d bytes, want the %d sent", len(want), len(payload))
			}
			for _, a := range as[1:] {
				if !bytes.Equal(a.Body, want) {
					t.Errorf("attempt %d body has %d bytes, differs from attempt 1's %d", a.N, len(a.Body), len(want))
				}
			}
		})
	}
}

// closeCounter counts Close calls on a request body.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestBodyTooLongSentOnce(t *testing.T) {
	payload := strings.Repeat("x", 100)
	t.Run("status", func(t *testing.T) {
		srv := retrytest.NewServer(t, "503,200")
		rec := &retrytest.Recorder{}
		tr := serverTransport(t, srv, &httpretry.Transport{MaxBufferedBody: 10, Observer: rec})
		body := &closeCounter{Reader: strings.NewReader(payload)}
		req, _ := http.NewRequest("PUT", srv.URL, body)
		resp, _, err := send(t, tr, req)
		if err != nil {
			t.Fatal(err)
		}
		as := srv.Attempts()
		if resp.StatusCode != 503 || len(as) != 1 || string(as[0].Body) != payload {
			t.Fatalf("got %d after %d attempts (body %d bytes), want the 503 after 1 with the whole body", resp.StatusCode, len(as), len(as[0].Body))
		}
		if body.closed == 0 {
			t.Error("the request body was not closed")
		}
		if g := rec.Events(event.GaveUp); len(g) != 1 || g[0].Reason != "body_not_replayable" {
			t.Errorf("got give-up events %+v, want reason body_not_replayable", g)
		}
	})
	t.Run("error", func(t *testing.T) {
		srv := retrytest.NewServer(t, "reset,200")
		tr := serverTransport(t, srv, &httpretry.Transport{MaxBufferedBody: 10})
		_, _, err := do(t, tr, "PUT", srv.URL, onlyReader{strings.NewReader(payload)})
		if !errors.Is(err, httpretry.ErrBodyNotReplayable) {
			t.Fatalf("got %v, want an error matching ErrBodyNotReplayable", err)
		}
		if !strings.Contains(err.Error(), "sent once, not retried") {
			t.Errorf("message %q does not say why it was not retried", err)
		}
		if n := len(srv.Attempts()); n != 1 {
			t.Errorf("got %d attempts, want 1", n)
		}
	})
	t.Run("ContentLength", func(t *testing.T) {
		srv := retrytest.NewServer(t, "503,200")
		tr := serverTransport(t, srv, &httpretry.Transport{MaxBufferedBody: 10})
		req, _ := http.NewRequest("PUT", srv.URL, onlyReader{strings.NewReader(payload)})
		req.ContentLength = int64(len(payload))
		resp, _, err := send(t, tr, req)
		if err != nil || resp.StatusCode != 503 || len(srv.Attempts()) != 1 {
			t.Fatalf("got %v, %v after %d attempts, want the 503 after 1", resp, err, len(srv.Attempts()))
		}
	})
}

func TestRefusedConnectionRetriedWhateverTheMethod(t *testing.T) {
	for _, m := range []string{"GET", "POST"} {
		t.Run(m, func(t *testing.T) {
			rt := retrytest.NewRoundTripper(t, "refused,refused,200:body=ok")
			tr := &httpretry.Transport{Base: rt, Policy: fast(retry.Policy{})}
			resp, body, err := do(t, tr, m, "http://127.0.0.1:1/", onlyReader{strings.NewReader("payload")})
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || body != "ok" || len(rt.Attempts()) != 3 {
				t.Fatalf("got %d %q after %d attempts, want 200 \"ok\" after 3", resp.StatusCode, body, len(rt.Attempts()))
			}
			for _, a := range rt.Attempts() {
				if string(a.Body) != "payload" {
					t.Errorf("attempt %d body %q, want \"payload\"", a.N, a.Body)
				}
			}
		})
	}
}

func TestRealRefusedConnectionError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
	_, _, err = do(t, tr, "GET", "http://alice:s3cret@"+addr+"/orders?id=7", nil)
	var he *httpretry.Error
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want an *httpretry.Error", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, retry.ErrExhausted) {
		t.Errorf("errors.Is sees ECONNREFUSED %v, ErrExhausted %v; want both", errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, retry.ErrExhausted))
	}
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Errorf("got retry error %+v, want 3 attempts", re)
	}
	msg := err.Error()
	for _, want := range []string{"httpretry: GET http://alice:xxxxx@" + addr + "/orders?id=7", "3 attempts", "attempts exhausted", "connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("message %q shows the password", msg)
	}
	if he.Method != "GET" || he.Attempts != 3 || he.Reason != retry.ReasonExhausted {
		t.Errorf("got %+v", he)
	}
}

func TestTransportFailures(t *testing.T) {
	cases := []struct {
		script   string
		method   string
		attempts int
		ok       bool
	}{
		{"reset,200", "GET", 2, true},
		{"eof,200", "GET", 2, true},
		{"eof,eof,200", "DELETE", 3, true},
		{"reset,200", "POST", 1, false}, // it may have been executed
		{"eof,200", "PATCH", 1, false},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.script, func(t *testing.T) {
			srv := retrytest.NewServer(t, c.script)
			tr := serverTransport(t, srv, &httpretry.Transport{})
			resp, _, err := do(t, tr, c.method, srv.URL, nil)
			if n := len(srv.Attempts()); n != c.attempts {
				t.Errorf("got %d attempts, want %d", n, c.attempts)
			}
			if c.ok {
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("got %v, want 200", err)
				}
				return
			}
			if !errors.Is(err, httpretry.ErrNotIdempotent) {
				t.Fatalf("got %v, want an error matching ErrNotIdempotent", err)
			}
			if !strings.Contains(err.Error(), "sent once, not retried (method not idempotent and no Idempotency-Key)") {
				t.Errorf("message %q does not say why", err)
			}
		})
	}
}

func TestDoNotRetry(t *testing.T) {
	cases := []struct {
		name, header, script string
		attempts             int
	}{
		{"default", "", "503:do-not-retry,200", 1},
		{"custom", "X-Final", "503:header=X-Final=TRUE,200", 1},
		{"custom ignores default", "X-Final", "503:do-not-retry,200", 2},
		{"off", httpretry.NoHeader, "503:do-not-retry,200", 2},
		{"false", "", "503:header=Do-Not-Retry=false,200", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := retrytest.NewServer(t, c.script)
			rec := &retrytest.Recorder{}
			tr := serverTransport(t, srv, &httpretry.Transport{DoNotRetryHeader: c.header, Observer: rec})
			_, _, err := do(t, tr, "GET", srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantAttempts(t, srv, c.attempts)
			if c.attempts == 1 {
				if g := rec.Events(event.GaveUp); len(g) != 1 || g[0].Reason != "do_not_retry" {
					t.Errorf("got give-up events %+v, want reason do_not_retry", g)
				}
			}
		})
	}
}

func TestAttemptHeader(t *testing.T) {
	cases := []struct{ field, name, want string }{
		{"", "Attempt-Count", "1,2"},
		{"x-try", "X-Try", "1,2"},
		{httpretry.NoHeader, "Attempt-Count", ","},
	}
	for _, c := range cases {
		srv := retrytest.NewServer(t, "500,200")
		tr := serverTransport(t, srv, &httpretry.Transport{AttemptHeader: c.field})
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Attempt-Count", "")
		req.Header.Del("Attempt-Count")
		if _, _, err := send(t, tr, req); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(header(srv.Attempts(), c.name), ","); got != c.want {
			t.Errorf("AttemptHeader %q: %s headers %q, want %q", c.field, c.name, got, c.want)
		}
	}
}

// sentRequests is a RoundTripper that records the requests it is given
// and answers them with the statuses of codes, in turn.
type sentRequests struct {
	codes []int
	sent  []*http.Request
}

func (s *sentRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	code := s.codes[min(len(s.sent), len(s.codes)-1)]
	s.sent = append(s.sent, req)
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

func TestAttemptHeaderAlreadySet(t *testing.T) {
	// A request whose header already says it is attempt 1 is sent as it
	// is on its first attempt: no copy; any other value is replaced in a
	// copy, and the caller's request is never changed.
	for _, c := range []struct {
		caller string
		same   bool // the first attempt is the caller's own request
	}{{"1", true}, {"2", false}, {"", false}, {"1 ", false}} {
		base := &sentRequests{codes: []int{503, 200}}
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
		req, _ := http.NewRequest("GET", "http://api.test/x", nil)
		if c.caller != "" {
			req.Header.Set("Attempt-Count", c.caller)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("caller's %q: got %v, %v; want 200 after a retry", c.caller, resp, err)
		}
		var got []string
		for _, r := range base.sent {
			got = append(got, r.Header.Get("Attempt-Count"))
		}
		if strings.Join(got, ",") != "1,2" {
			t.Errorf("caller's %q: attempts sent with Attempt-Count %q, want 1,2", c.caller, got)
		}
		if same := base.sent[0] == req; same != c.same {
			t.Errorf("caller's %q: first attempt sent the caller's request %v, want %v", c.caller, same, c.same)
		}
		if v := req.Header.Get("Attempt-Count"); v != c.caller {
			t.Errorf("caller's %q: the caller's request now says %q", c.caller, v)
		}
	}
}

func TestSingleAttemptContext(t *testing.T) {
	srv := retrytest.NewServer(t, "503,200")
	tr := serverTransport(t, srv, &httpretry.Transport{})
	req, _ := http.NewRequestWithContext(retry.SingleAttempt(context.Background()), "GET", srv.URL, nil)
	resp, _, err := send(t, tr, req)
	if err != nil || resp.StatusCode != 503 || len(srv.Attempts()) != 1 {
		t.Fatalf("got %v %v after %d attempts, want the 503 after 1", resp, err, len(srv.Attempts()))
	}
}

func TestSingleAttemptKeepsCallersAttemptNumber(t *testing.T) {
	// A gateway that relays a request from a caller that retries (its
	// Attempt-Count: 3 made the call a single attempt) sends that caller's
	// number on: the upstream sees which of the caller's attempts this is,
	// not the "1" of a loop that makes one. A number that is not one, or a
	// call that retries itself, gets httpretry's own numbering.
	for _, c := range []struct {
		single bool
		caller string
		method string
		want   string
	}{
		{true, "3", "GET", "3"},
		{true, "3", "POST", "3"}, // with the Idempotency-Key added (KeyAuto): a copy of the header
		{true, "1000", "GET", "1000"},
		{true, "1001", "GET", "1001"},
		{true, "00", "GET", "1"},
		{true, "12345678901", "GET", "1"},
		{true, "0", "GET", "1"},
		{true, "x", "GET", "1"},
		{true, "3 ", "GET", "1"},
		{true, "", "GET", "1"},
		{false, "3", "GET", "1"},
	} {
		base := &sentRequests{codes: []int{503}}
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{}), IdempotencyKey: httpretry.KeyAuto}
		ctx := context.Background()
		if c.single {
			ctx = retry.SingleAttempt(ctx)
		}
		req, _ := http.NewRequestWithContext(ctx, c.method, "http://api.test/x", nil)
		if c.caller != "" {
			req.Header["Attempt-Count"] = []string{c.caller}
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		resp.Body.Close()
		if c.single && len(base.sent) != 1 {
			t.Fatalf("%+v: %d attempts, want 1", c, len(base.sent))
		}
		sent := base.sent[0].Header
		if got := sent["Attempt-Count"]; len(got) != 1 || got[0] != c.want {
			t.Errorf("%+v: first attempt sent with Attempt-Count %q, want %q", c, got, c.want)
		}
		if c.method == "POST" && sent.Get("Idempotency-Key") == "" {
			t.Errorf("%+v: the POST went without its Idempotency-Key", c)
		}
		if v := req.Header["Attempt-Count"]; c.caller != "" && (len(v) != 1 || v[0] != c.caller) {
			t.Errorf("%+v: the caller's request now says %q", c, v)
		}
	}
}

func TestNoRetryForBadRequests(t *testing.T) {
	tr := &httpretry.Transport{Policy: fast(retry.Policy{})}
	for _, url := range []string{"ftp://127.0.0.1/x", "http:///nohost"} {
		req, _ := http.NewRequest("GET", url, nil)
		_, _, err := send(t, tr, req)
		var re *retry.Error
		if !errors.As(err, &re) || re.Attempts != 1 || re.Reason != retry.ReasonPermanent {
			t.Errorf("%s: got %v, want a permanent error after 1 attempt", url, err)
		}
	}
}

func TestInvalidTransport(t *testing.T) {
	cases := []struct {
		tr   *httpretry.Transport
		want string
	}{
		{&httpretry.Transport{Statuses: []int{503, 99}}, "Statuses: 99 out of range"},
		{&httpretry.Transport{Policy: retry.Policy{MaxAttempts: -7}}, "MaxAttempts: -7"},
		{&httpretry.Transport{AttemptHeader: "bad header"}, "AttemptHeader"},
		{&httpretry.Transport{IdempotencyKey: 9}, "IdempotencyKey: KeyMode(9)"},
		{&httpretry.Transport{ReadBody: -1}, "ReadBody: -1"},
	}
	for _, c := range cases {
		if err := c.tr.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: got %v, want an error about %s", err, c.want)
		}
		body := &closeCounter{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest("PUT", "http://127.0.0.1:1/", body)
		resp, err := c.tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, httpretry.ErrInvalidConfig) {
			t.Errorf("RoundTrip: got %v, %v; want an error matching ErrInvalidConfig", resp, err)
		}
		if body.closed != 1 {
			t.Errorf("request body closed %d times, want 1", body.closed)
		}
	}
	err := (&httpretry.Transport{Policy: retry.Policy{MaxAttempts: -7}}).Validate()
	if !errors.Is(err, retry.ErrInvalidConfig) {
		t.Errorf("got %v, want an error matching retry.ErrInvalidConfig too", err)
	}
	if err := (&httpretry.Transport{}).Validate(); err != nil {
		t.Errorf("zero Transport: got %v, want nil", err)
	}
}

// refuseAll is a retry.Breaker that refuses every attempt, to check that a
// request that is never sent still has its body closed.
type refuseAll struct{}

func (refuseAll) AllowAt(time.Time, bool) (uint64, error)        { return 0, errors.New("open") }
func (refuseAll) DoneAt(time.Time, uint64, time.Duration, error) {}

func TestBodyClosedWhenNoAttemptIsMade(t *testing.T) {
	tr := &httpretry.Transport{Base: retrytest.NewRoundTripper(t, "200"), Policy: retry.Policy{Env: &retry.Env{Breaker: refuseAll{}}}}
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:1/", body)
	resp, err := tr.RoundTrip(req)
	if resp != nil || !errors.Is(err, retry.ErrBreakerOpen) {
		t.Fatalf("got %v, %v; want a breaker-open error", resp, err)
	}
	if body.closed != 1 {
		t.Errorf("request body closed %d times, want 1", body.closed)
	}
}

func TestClientOneLiner(t *testing.T) {
	srv := retrytest.NewServer(t, "429,200:body=ok")
	client := httpretry.NewClient(fast(retry.Policy{}))
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok" {
		t.Fatalf("got %d %q, want 200 \"ok\"", resp.StatusCode, b)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return string(b)
}
