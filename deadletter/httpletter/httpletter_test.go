package httpletter_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/deadlettertest"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func newPost(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-42")
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Cookie", "session=secret")
	req.Header.Add("X-Trace", "a")
	req.Header.Add("X-Trace", "b")
	return req
}

func TestEncodeDecode(t *testing.T) {
	req := newPost(t, "https://partner.example/v1/charges?x=1", `{"amount":1000}`)
	p, err := httpletter.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p, []byte("secret")) {
		t.Fatalf("the payload keeps credentials: %s", p)
	}
	if b, _ := io.ReadAll(req.Body); string(b) != `{"amount":1000}` {
		t.Fatalf("Encode read the request's own body: %q left", b)
	}
	r, err := httpletter.Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	want := httpletter.Request{Method: "POST", URL: "https://partner.example/v1/charges?x=1",
		Header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"order-42"}, "X-Trace": {"a", "b"}},
		Body:   []byte(`{"amount":1000}`)}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("Decode(Encode):\n got %+v\nwant %+v", r, want)
	}
	out, err := r.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out.GetBody == nil || out.ContentLength != int64(len(want.Body)) || out.Header.Get("X-Trace") != "a" {
		t.Fatalf("New: %+v", out)
	}
	l, err := httpletter.Letter("payments", req)
	if err != nil || l.Key != "order-42" || l.Queue != "payments" || !bytes.Equal(l.Payload, p) {
		t.Fatalf("Letter: %+v %v", l, err)
	}
}

func TestEncodeRefuses(t *testing.T) {
	rel := &http.Request{Method: "GET", URL: mustURL(t, "/x"), Header: http.Header{}}
	if _, err := httpletter.Encode(rel); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Errorf("relative URL: %v", err)
	}
	noGet := newPost(t, "http://h/x", "body")
	noGet.GetBody = nil
	if _, err := httpletter.Encode(noGet); err == nil || !strings.Contains(err.Error(), "GetBody") {
		t.Errorf("body without GetBody: %v", err)
	}
	big := newPost(t, "http://h/x", strings.Repeat("x", deadletter.MaxPayloadBytes))
	if _, err := httpletter.Encode(big); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("1 MiB body: %v", err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestDecodeRefuses(t *testing.T) {
	for name, p := range map[string]string{
		"not JSON":      `POST /x HTTP/1.1`,
		"unknown field": `{"method":"GET","url":"http://h/","extra":1}`,
		"bad method":    `{"method":"GE T","url":"http://h/"}`,
		"no method":     `{"url":"http://h/"}`,
		"ftp URL":       `{"method":"GET","url":"ftp://h/"}`,
		"relative URL":  `{"method":"GET","url":"/x"}`,
		"port 99999":    `{"method":"GET","url":"http://h:99999/"}`,
		"port 0":        `{"method":"GET","url":"http://h:0/"}`,
		"header CRLF":   `{"method":"GET","url":"http://h/","header":{"X":["a\r\nB: c"]}}`,
		"header ESC":    `{"method":"GET","url":"http://h/","header":{"X":["a\u001b[31mb"]}}`,
		"header DEL":    `{"method":"GET","url":"http://h/","header":{"X":["a\u007f"]}}`,
		"header BEL":    `{"method":"GET","url":"http://h/","header":{"X":["\u0007"]}}`,
		"header name":   `{"method":"GET","url":"http://h/","header":{"X Y":["a"]}}`,
		"trailing data": `{"method":"GET","url":"http://h/"} {}`,
		"bad base64":    `{"method":"GET","url":"http://h/","body":"!!"}`,
	} {
		if _, err := httpletter.Decode([]byte(p)); err == nil || !strings.HasPrefix(err.Error(), "httpletter: decode: ") {
			t.Errorf("%s: %v, want an httpletter: decode: error", name, err)
		}
	}
}

// errDialed is what sendable's transport answers once net/http has checked
// a request and wants a connection for it.
var errDialed = errors.New("dialed")

// sendable reports why net/http's client would refuse to send req, "" if
// it would not: a real http.Transport checks it up to the dial, which
// fails, and the request is written to nowhere (which checks its Host).
func sendable(req *http.Request) string {
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, errDialed }}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req.Clone(req.Context()))
	if resp != nil {
		resp.Body.Close()
	}
	if err != nil && !errors.Is(err, errDialed) {
		return err.Error()
	}
	if err := req.Clone(req.Context()).Write(io.Discard); err != nil {
		return err.Error()
	}
	return ""
}

func TestDecodeAcceptsTabs(t *testing.T) {
	r, err := httpletter.Decode([]byte(`{"method":"GET","url":"http://h/","header":{"X":["a\tb"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	req, err := r.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if why := sendable(req); why != "" {
		t.Fatalf("net/http refuses a tab: %s", why)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"method":"POST","url":"https://h/x?y=1","header":{"Idempotency-Key":["k"]},"body":"e30="}`))
	f.Add([]byte(`{"method":"GET","url":"http://h/"}`))
	f.Add([]byte(`{"method":"GET","url":"http://h/","header":{"X":["a\nb"]}}`))
	f.Add([]byte(`{"method":"GET","url":"http://h/","header":{"X":["a\u001bb\tc"]}}`))
	f.Add([]byte(`{"method":"GET","url":"http://h:99999/%zz"}`))
	f.Add([]byte(`{"method":"POST","url":"http://10.0.0.1:8080/x#f","host":"api.example:443","body":"eA=="}`))
	f.Add([]byte(`{"method":"PUT","url":"http://h/o","body":"eA==","trailer":{"x-checksum":["a",""]}}`))
	f.Add([]byte(`{"method":"GET","url":"http://h/o","trailer":{"X-Sum":["a"]}}`))
	f.Add([]byte(`{"method":"PUT","url":"http://h/o","trailer":{"Content-Length":["3"]}}`))
	f.Add([]byte(`{"method":"0","url":"http://:"}`)) // a port, no host: net/http has no host to send it to
	f.Add([]byte(`{"method":"GET","url":"http://[]:80/"}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := httpletter.Decode(p)
		if err != nil {
			return
		}
		// Whatever Decode accepts can be sent, and encodes back to itself.
		req, err := r.New(context.Background())
		if err != nil {
			t.Fatalf("Decode accepted %q, New refused it: %v", p, err)
		}
		if why := sendable(req); why != "" {
			t.Fatalf("Decode accepted %q, net/http refuses to send it: %s", p, why)
		}
		p2, err := httpletter.Encode(req)
		if err != nil {
			t.Fatalf("Encode of a decoded request: %v", err)
		}
		r2, err := httpletter.Decode(p2)
		if err != nil {
			t.Fatalf("Decode of Encode's payload %q: %v", p2, err)
		}
		if r2.Method != r.Method || !bytes.Equal(r2.Body, r.Body) || len(r2.Trailer) != len(r.Trailer) {
			t.Fatalf("round trip changed the request: %+v → %+v", r, r2)
		}
	})
}

// partner is a real server on loopback behind the idempotency middleware:
// it answers 503 with Retry-After while down, and executes each charge once.
type partner struct {
	mu         sync.Mutex
	down       bool
	executions int
	sawAuth    string
	srv        *httptest.Server
}

func newPartner(t *testing.T) *partner {
	p := &partner{down: true}
	mw, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.srv = httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sawAuth = r.Header.Get("Authorization")
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		if p.down {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		p.executions++
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	})))
	t.Cleanup(func() {
		p.srv.Client().CloseIdleConnections()
		p.srv.Close()
	})
	return p
}

func TestRedriveAgainstIdempotentServer(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Second)
	p := newPartner(t)
	store, _ := deadletter.NewMemory(0)

	// The charge ran out of retries while the partner was down.
	req := newPost(t, p.srv.URL+"/charges", `{"amount":1000}`)
	l, err := httpletter.Letter("payments", req)
	if err != nil {
		t.Fatal(err)
	}
	l.ID = "order-42"
	if _, err := deadletter.Capture(ctx, store, l, errors.New("partner: 503"), t0); err != nil {
		t.Fatal(err)
	}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "payments", Rand: func() float64 { return 0 },
		Handler: httpletter.Handler(p.srv.Client(), func(req *http.Request) error {
			req.Header.Set("Authorization", "Bearer fresh")
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}

	// Still down: the server's 10 min beat the backoff's 2.5 min.
	began := time.Now()
	if rep, err := r.RedriveAt(ctx, t0); err != nil || rep.Failed != 1 {
		t.Fatalf("redrive while down: %+v %v", rep, err)
	}
	took := time.Since(began)
	// The hint counts from the answer, which came within took of t0.
	got, _ := store.Get(ctx, "order-42")
	if d := got.Due.Sub(t0); d < 10*time.Minute || d > 10*time.Minute+took || !strings.Contains(got.Error, "503") {
		t.Fatalf("after a 503 with Retry-After 600: due in %v, want 10m to 10m+%v; error %q", d, took, got.Error)
	}
	if p.sawAuth != "Bearer fresh" {
		t.Fatalf("the redrive sent Authorization %q, want the fresh one from prepare", p.sawAuth)
	}

	// Back up: the charge is executed, the letter deleted.
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	if rep, err := r.RedriveAt(ctx, got.Due); err != nil || rep.Done != 1 {
		t.Fatalf("redrive when up: %+v %v", rep, err)
	}
	// The same letter redriven again (a duplicate capture): the server
	// replays the stored response, and the charge is not made twice.
	if _, err := deadletter.Capture(ctx, store, l, errors.New("partner: timeout"), t0); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.RedriveAt(ctx, t0.Add(11*time.Minute)); err != nil || rep.Done != 1 {
		t.Fatalf("second redrive: %+v %v", rep, err)
	}
	if p.executions != 1 {
		t.Fatalf("the charge was executed %d times, want once", p.executions)
	}
}

func TestRedriveParksClientErrors(t *testing.T) {
	ctx := context.Background()
	p := newPartner(t)
	store, _ := deadletter.NewMemory(0)
	l, _ := httpletter.Letter("q", newPost(t, p.srv.URL+"/missing", "{}"))
	l, _ = deadletter.Capture(ctx, store, l, errors.New("x"), time.Now())
	// Two letters that no redrive can send: a payload that is not a
	// request, and a header value with an ESC that net/http refuses.
	for id, payload := range map[string]string{
		"garbled": "not a request",
		"escaped": `{"method":"POST","url":"` + p.srv.URL + `/charges","header":{"X-Note":["a\u001b[31mb"]}}`,
	} {
		bad := deadletter.Letter{ID: id, Queue: "q", Payload: []byte(payload), Attempts: 3, Created: time.Now(), Due: time.Now()}
		if err := store.Put(ctx, bad); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "q", Handler: httpletter.Handler(p.srv.Client(), nil)})
	rep, err := r.RedriveAt(ctx, time.Now())
	if err != nil || rep.Parked != 3 {
		t.Fatalf("%+v %v, want all three parked (404, a payload that is not a request, a control byte)", rep, err)
	}
	got, _ := store.Get(ctx, l.ID)
	if got.Reason != deadletter.ReasonPermanent || !strings.Contains(got.Error, "404") || got.Attempts != 2 {
		t.Fatalf("after a 404: %+v, want parked with one more attempt (2)", got)
	}
	// Nothing was sent for the undecodable ones: no attempt is counted.
	for id, want := range map[string]string{"garbled": "not a request document", "escaped": "control byte 0x1b"} {
		g, _ := store.Get(ctx, id)
		if !g.Parked || g.Reason != deadletter.ReasonPermanent || !strings.Contains(g.Error, want) || g.Attempts != 3 || g.Redrives != 1 {
			t.Fatalf("%s: %+v, want parked, error naming %q, Attempts still 3", id, g, want)
		}
	}
}

func TestCapture(t *testing.T) {
	ctx := context.Background()
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	p, _ := retrytest.NoWait(retry.Policy{})
	client := httpretry.NewClient(p)
	defer client.CloseIdleConnections()
	send := func() (*http.Request, *http.Response, error) {
		req := newPost(t, srv.URL+"/charges", `{"amount":1000}`)
		resp, err := client.Do(req)
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return req, resp, err
	}
	store, _ := deadletter.NewMemory(0)
	now := time.Now()

	// Retries that ended on a 503: the client hands over the last response.
	req, resp, err := send()
	l, ok, cerr := httpletter.Capture(ctx, store, "payments", req, resp, err, now)
	if cerr != nil || !ok {
		t.Fatalf("after 503s: captured %v, %v", ok, cerr)
	}
	if l.Reason != "status 503" || l.Attempts != 3 || l.Key != "order-42" || !strings.Contains(l.Error, "503") {
		t.Fatalf("letter %+v: want reason status 503, the 3 attempts the client made, the key", l)
	}

	// Completed, or refused for good: nothing to redrive.
	for _, code := range []int{http.StatusCreated, http.StatusNotFound, http.StatusUnprocessableEntity} {
		status = code
		req, resp, err := send()
		if _, ok, cerr := httpletter.Capture(ctx, store, "payments", req, resp, err, now); ok || cerr != nil {
			t.Fatalf("status %d: captured %v, %v; want nothing kept", code, ok, cerr)
		}
	}

	// A transport error that ended the retries.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	req = newPost(t, deadURL+"/charges", "{}")
	resp, err = client.Do(req)
	l, ok, cerr = httpletter.Capture(ctx, store, "payments", req, resp, err, now)
	if cerr != nil || !ok || l.Attempts != 3 || l.Reason != "attempts exhausted" {
		t.Fatalf("after a refused connection: %+v captured %v, %v", l, ok, cerr)
	}

	// The caller stopped: not a failure of the work.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	req = newPost(t, srv.URL+"/charges", "{}").WithContext(cctx)
	resp, err = client.Do(req)
	if _, ok, _ := httpletter.Capture(ctx, store, "payments", req, resp, err, now); ok {
		t.Fatalf("a call the caller cancelled was captured (%v)", err)
	}
	if store.Len() != 2 {
		t.Fatalf("%d letters kept, want 2", store.Len())
	}
}

func TestNoCredentialInLetters(t *testing.T) {
	store, _ := deadletter.NewMemory(0)
	deadlettertest.TestHTTPSecrets(t, store, nil)
}

// TestRedriveLongHint: a redrive answered 503 (or 429) with a well-formed
// hint longer than a year, or than a time.Duration holds, leaves the
// letter for when the server said, not for the redriver's backoff (a
// few minutes), and a hint too long for a Duration is due at the latest
// time a Duration reaches, not wrapped into the past (where every pass
// would send it again). A malformed hint is no hint.
func TestRedriveLongHint(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, header, value string
		status              int
		want                time.Duration // the least wait; 0: the backoff's
	}{
		{"Retry-After 40000000 s", "Retry-After", "40000000", 503, 40000000 * time.Second},
		{"Retry-After past a Duration", "Retry-After", "99999999999999999999", 503, math.MaxInt64},
		{"Retry-After in year 9999", "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", 503, math.MaxInt64},
		{"X-RateLimit-Reset far ahead", "X-RateLimit-Reset", "99999999999999999999", 429, math.MaxInt64},
		{"Retry-After malformed", "Retry-After", "40000000.5", 503, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(c.header, c.value)
				w.WriteHeader(c.status)
			}))
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			store, _ := deadletter.NewMemory(0)
			l, err := httpletter.Letter("q", newPost(t, srv.URL+"/charges", "{}"))
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if l, err = deadletter.Capture(ctx, store, l, errors.New("503"), t0); err != nil {
				t.Fatal(err)
			}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "q", Rand: func() float64 { return 0 },
				Handler: httpletter.Handler(srv.Client(), nil)})
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := r.RedriveAt(ctx, t0); err != nil || rep.Failed != 1 {
				t.Fatalf("redrive: %+v %v; want one failed", rep, err)
			}
			got, err := store.Get(ctx, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			d := got.Due.Sub(t0)
			switch {
			case c.want == 0 && (d <= 0 || d > time.Hour):
				t.Fatalf("%s: %s: due in %v; want the backoff's wait, the hint ignored", c.header, c.value, d)
			case c.want > 0 && d < c.want-time.Second:
				t.Fatalf("%s: %s: due in %v (at %v); want at least %v", c.header, c.value, d, got.Due, c.want)
			}
			if rep, err := r.RedriveAt(ctx, t0.Add(24*time.Hour)); err != nil || rep.Claimed != 0 && c.want > 0 {
				t.Fatalf("a day later: %+v %v; want nothing claimed", rep, err)
			}
		})
	}
}

// TestDecodeRefusesDuplicateNames: a letter written by hand may name a
// header (or a trailer field, or a member of the document) twice in the
// same spelling; a JSON decoder keeps the last and drops the others'
// values without a word. Decode refuses it, naming the name, so that the
// operator writes one list rather than have values lost.
func TestDecodeRefusesDuplicateNames(t *testing.T) {
	for _, c := range []struct{ payload, name string }{
		{`{"method":"GET","url":"http://h/","header":{"X-Trace":["a"],"X-Trace":["b"]}}`, "X-Trace"},
		{`{"method":"PUT","url":"http://h/","body":"eA==","trailer":{"X-Sum":["a"],"X-Sum":["b"]}}`, "X-Sum"},
		{`{"method":"POST","url":"http://h/","body":"eA==","body":"eQ=="}`, "body"},
		{`{"method":"POST","url":"http://h/","header":{"A":["1"]},"header":{"B":["2"]}}`, "header"},
	} {
		r, err := httpletter.Decode([]byte(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), "twice") {
			t.Errorf("Decode(%s) = %+v, %v; want it refused, naming %s twice", c.payload, r, err, c.name)
		}
	}
	// Names in different members are not duplicates.
	if _, err := httpletter.Decode([]byte(`{"method":"PUT","url":"http://h/","body":"eA==","header":{"X":["1"]},"trailer":{"X":["2"]}}`)); err != nil {
		t.Errorf("a header and a trailer field of the same name: %v", err)
	}
}
