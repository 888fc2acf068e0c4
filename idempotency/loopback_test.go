package idempotency_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// The tests of this file send real requests through a real http.Client to
// the middleware behind an httptest.Server on loopback.

// loopback serves h on loopback and returns a function that sends a
// request to it; the server and the client's connections are closed when
// the test ends.
func loopback(t *testing.T, h http.Handler) (srv *httptest.Server, send func(r *http.Request) (*http.Response, []byte)) {
	t.Helper()
	srv = httptest.NewServer(h)
	tr := &http.Transport{DisableCompression: true}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	// send may be called from goroutines other than the test's, so it
	// reports a failure with Errorf (not Fatalf) and returns an answer of
	// status 0, which no check takes for a real one.
	return srv, func(r *http.Request) (*http.Response, []byte) {
		t.Helper()
		resp, err := client.Do(r)
		if err != nil {
			t.Errorf("%s %s: %v", r.Method, r.URL, err)
			return &http.Response{Header: http.Header{}, Trailer: http.Header{}}, nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("%s %s: read the body: %v", r.Method, r.URL, err)
		}
		return resp, body
	}
}

// request builds a request to srv with key (none when empty) and body.
func request(t *testing.T, srv *httptest.Server, method, target, key, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	return r
}

func replayed(resp *http.Response) bool { return resp.Header.Get("Idempotent-Replayed") == "true" }

// TestLoopbackFingerprint: what makes "the same request" over a real
// connection: the method, the path, the query and the body's bytes (not how
// they were framed); Content-Type and Content-Encoding only when
// Config.FingerprintHeaders names them.
func TestLoopbackFingerprint(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Methods: []string{"POST", "PATCH", "PUT"}})
	srv, send := loopback(t, m.Handler(h))
	first, _ := send(request(t, srv, "POST", "/charges?a=1", "k", `{"a":1,"b":2}`))
	if first.StatusCode != 201 {
		t.Fatalf("first: %d", first.StatusCode)
	}
	chunked := request(t, srv, "POST", "/charges?a=1", "k", "")
	chunked.Body = io.NopCloser(strings.NewReader(`{"a":1,"b":2}`))
	chunked.ContentLength = -1 // sent chunked
	if resp, _ := send(chunked); !replayed(resp) {
		t.Errorf("the same bytes sent chunked: %d, replayed %v; want the replay", resp.StatusCode, replayed(resp))
	}
	ct := request(t, srv, "POST", "/charges?a=1", "k", `{"a":1,"b":2}`)
	ct.Header.Set("Content-Type", "text/plain")
	if resp, _ := send(ct); !replayed(resp) {
		t.Errorf("another Content-Type without FingerprintHeaders: %d; want the replay (the documented default)", resp.StatusCode)
	}
	for _, tc := range []struct{ name, method, target, body string }{
		{"keys reordered", "POST", "/charges?a=1", `{"b":2,"a":1}`},
		{"whitespace", "POST", "/charges?a=1", `{"a":1, "b":2}`},
		{"query", "POST", "/charges?a=2", `{"a":1,"b":2}`},
		{"no query", "POST", "/charges", `{"a":1,"b":2}`},
		{"path", "POST", "/refunds?a=1", `{"a":1,"b":2}`},
		{"escaped path", "POST", "/charge%73?a=1", `{"a":1,"b":2}`},
		{"method", "PUT", "/charges?a=1", `{"a":1,"b":2}`},
		{"empty body", "POST", "/charges?a=1", ``},
	} {
		resp, _ := send(request(t, srv, tc.method, tc.target, "k", tc.body))
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", tc.name, resp.StatusCode)
		}
	}
	if h.runs.Load() != 1 {
		t.Errorf("runs %d, want 1", h.runs.Load())
	}

	// With FingerprintHeaders, the named fields take part.
	m2 := newMiddleware(t, idempotency.Config{FingerprintHeaders: []string{"content-type", "Content-Encoding"}})
	srv2, send2 := loopback(t, m2.Handler(&charges{}))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"a":1}`))
	zw.Close()
	r := request(t, srv2, "POST", "/c", "k2", gz.String())
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Content-Encoding", "gzip")
	send2(r)
	r = request(t, srv2, "POST", "/c", "k2", gz.String())
	r.Header.Set("Content-Type", "application/json")
	if resp, _ := send2(r); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("the same bytes without Content-Encoding: %d, want 422", resp.StatusCode)
	}
}

// TestLoopbackLargeRequest: a body over MaxRequestBytes is refused with
// 413 whether its length was announced or it came chunked, and the key is
// left unused (no collision with a truncated body).
func TestLoopbackLargeRequest(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{MaxRequestBytes: 1000})
	srv, send := loopback(t, m.Handler(h))
	big := strings.Repeat("x", 1001)
	if resp, _ := send(request(t, srv, "POST", "/c", "k", big)); resp.StatusCode != 413 {
		t.Errorf("announced: %d, want 413", resp.StatusCode)
	}
	r := request(t, srv, "POST", "/c", "k", "")
	r.Body = io.NopCloser(strings.NewReader(big))
	r.ContentLength = -1
	if resp, _ := send(r); resp.StatusCode != 413 {
		t.Errorf("chunked: %d, want 413", resp.StatusCode)
	}
	// The first 1000 bytes alone are a new request with the key.
	if resp, _ := send(request(t, srv, "POST", "/c", "k", big[:1000])); resp.StatusCode != 201 || replayed(resp) || h.runs.Load() != 1 {
		t.Errorf("exactly the limit: %d replayed %v runs %d; want 201, first run", resp.StatusCode, replayed(resp), h.runs.Load())
	}
}

// TestLoopbackReplayStatuses: each status the default Keep stores comes
// back with its fields, body and a Content-Length that matches it.
func TestLoopbackReplayStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"201 Location", 201, `{"id":1}`},
		{"204", 204, ""},
		{"302", 302, ""},
		{"303 body", 303, "see other"},
		{"304", 304, ""},
		{"implicit 200", 0, ""},
		{"implicit 200 body", 0, "hello"},
		{"404", 404, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := newMiddleware(t, idempotency.Config{})
			srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("Location", "/things/1")
				w.Header().Add("Link", "</a>; rel=a")
				w.Header().Add("Link", "</b>; rel=b")
				w.Header()["x-lower"] = []string{"v"} // not canonical
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				io.WriteString(w, tc.body)
			})))
			first, fb := send(request(t, srv, "POST", "/c", "k", "{}"))
			again, ab := send(request(t, srv, "POST", "/c", "k", "{}"))
			if runs.Load() != 1 || !replayed(again) {
				t.Fatalf("runs %d, replayed %v", runs.Load(), replayed(again))
			}
			if again.StatusCode != first.StatusCode || string(ab) != string(fb) {
				t.Errorf("replay %d %q, first %d %q", again.StatusCode, ab, first.StatusCode, fb)
			}
			if again.ContentLength != first.ContentLength || again.Header.Get("Content-Length") != first.Header.Get("Content-Length") {
				t.Errorf("Content-Length: replay %d %q, first %d %q", again.ContentLength, again.Header.Get("Content-Length"), first.ContentLength, first.Header.Get("Content-Length"))
			}
			for _, k := range []string{"Location", "Link", "X-Lower", "Content-Type"} {
				if g, w := again.Header.Values(k), first.Header.Values(k); strings.Join(g, "|") != strings.Join(w, "|") {
					t.Errorf("%s: replay %q, first %q", k, g, w)
				}
			}
		})
	}
}

// TestLoopbackStreamed: a handler that flushes as it writes: the client
// gets each part as it comes; the replay is the whole body at once.
func TestLoopbackStreamed(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	next := make(chan struct{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "part1\n")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "part2\n")
	})))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(request(t, srv, "POST", "/s", "k", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if line != "part1\n" || err != nil {
		t.Fatalf("first part %q %v", line, err)
	}
	close(next)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "part2\n" {
		t.Fatalf("rest %q", rest)
	}
	again, body := send(request(t, srv, "POST", "/s", "k", "{}"))
	if !replayed(again) || string(body) != "part1\npart2\n" || again.ContentLength != int64(len(body)) {
		t.Errorf("replay %v %q length %d", replayed(again), body, again.ContentLength)
	}
}

// TestLoopbackLowercaseSetCookie: a Set-Cookie field set under a key that
// is not in canonical form still is a Set-Cookie (net/http sends it as it
// is, clients read it as one), and is never replayed.
func TestLoopbackLowercaseSetCookie(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["set-cookie"] = []string{"session=alice-secret"}
		w.WriteHeader(201)
	})))
	first, _ := send(request(t, srv, "POST", "/c", "k", "{}"))
	if first.Header.Get("Set-Cookie") == "" {
		t.Fatalf("first: no cookie: %v", first.Header)
	}
	again, _ := send(request(t, srv, "POST", "/c", "k", "{}"))
	if !replayed(again) {
		t.Fatal("no replay")
	}
	if c := again.Header.Values("Set-Cookie"); len(c) != 0 {
		t.Errorf("the replay carries the first request's cookie %q", c)
	}
	// RecordHeader (postgres.Atomic's records) applies the same rule.
	if h := idempotency.RecordHeader(nil, http.Header{"set-cookie": {"s=1"}, "date": {"x"}, "content-length": {"1"}, "x-kept": {"k"}}); len(h) != 1 || h["x-kept"] == nil {
		t.Errorf("RecordHeader kept %v, want only x-kept", h)
	}
}

// TestLoopbackConcurrent: N requests at once with one key: one run, the
// others 409 or the replay.
func TestLoopbackConcurrent(t *testing.T) {
	h := &charges{}
	release := make(chan struct{})
	var started sync.Once
	start := make(chan struct{})
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Do(func() { close(start) })
		<-release
		h.ServeHTTP(w, r)
	})))
	firstDone := make(chan int)
	go func() {
		resp, _ := send(request(t, srv, "POST", "/c", "k", "{}"))
		firstDone <- resp.StatusCode
	}()
	<-start
	const n = 50
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := send(request(t, srv, "POST", "/c", "k", "{}"))
			if resp.StatusCode == 409 && resp.Header.Get("Retry-After") == "1" {
				conflicts.Add(1)
			}
		}()
	}
	wg.Wait()
	close(release)
	if s := <-firstDone; s != 201 || conflicts.Load() != n || h.runs.Load() != 1 {
		t.Fatalf("first %d, conflicts %d of %d, runs %d", s, conflicts.Load(), n, h.runs.Load())
	}
}

// TestLoopbackTrailers: trailers the handler sends (declared in Trailer,
// or set under http.TrailerPrefix) are part of its response and come back
// on a replay, as trailers; a Set-Cookie sent as a trailer does not.
func TestLoopbackTrailers(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Trailer", "X-Checksum, Set-Cookie")
		w.WriteHeader(201)
		io.WriteString(w, "data")
		w.Header().Set("X-Checksum", "c1")
		w.Header().Set("Set-Cookie", "session=alice-secret")
		w.Header().Add(http.TrailerPrefix+"X-Late", "l1")
		w.Header().Add(http.TrailerPrefix+"X-Late", "l2")
	})))
	first, _ := send(request(t, srv, "POST", "/t", "k", "{}"))
	if first.Trailer.Get("X-Checksum") != "c1" || first.Trailer.Get("X-Late") != "l1" {
		t.Fatalf("first trailers %v", first.Trailer)
	}
	again, body := send(request(t, srv, "POST", "/t", "k", "{}"))
	if !replayed(again) || again.StatusCode != 201 || string(body) != "data" || runs.Load() != 1 {
		t.Fatalf("replay %v %d %q runs %d", replayed(again), again.StatusCode, body, runs.Load())
	}
	if again.Trailer.Get("X-Checksum") != "c1" || strings.Join(again.Trailer.Values("X-Late"), ",") != "l1,l2" {
		t.Errorf("replay trailers %v (header %v), want X-Checksum: c1 and X-Late: l1, l2", again.Trailer, again.Header)
	}
	if c := again.Trailer.Values("Set-Cookie"); len(c) != 0 || again.Header.Get("Set-Cookie") != "" {
		t.Errorf("the replay carries the first request's cookie: trailer %q", c)
	}
	if again.Header.Get("X-Checksum") != "" || again.Header.Get("X-Late") != "" {
		t.Errorf("trailers replayed as header fields: %v", again.Header)
	}
}

// TestLoopbackHead: with HEAD among Config.Methods, the replay of a HEAD
// request carries the Content-Length the handler announced (that of the
// body a GET would get), or none when it announced none, as the first
// answer did.
func TestLoopbackHead(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{Methods: []string{"HEAD", "POST"}})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		if r.URL.Path == "/sized" {
			w.Header().Set("Content-Length", "5")
		}
		w.Header().Set("Content-Type", "text/plain")
	})))
	for _, path := range []string{"/sized", "/unsized"} {
		first, _ := send(request(t, srv, "HEAD", path, "k"+path, ""))
		again, _ := send(request(t, srv, "HEAD", path, "k"+path, ""))
		if !replayed(again) || again.StatusCode != first.StatusCode {
			t.Fatalf("%s: replay %v %d, first %d", path, replayed(again), again.StatusCode, first.StatusCode)
		}
		if g, w := again.Header.Values("Content-Length"), first.Header.Values("Content-Length"); strings.Join(g, ",") != strings.Join(w, ",") || again.ContentLength != first.ContentLength {
			t.Errorf("%s: replay Content-Length %q (%d), first %q (%d)", path, g, again.ContentLength, w, first.ContentLength)
		}
	}
	if runs.Load() != 2 {
		t.Errorf("runs %d, want 2", runs.Load())
	}
}

// TestLoopbackGzipResponse: a body the handler compressed itself comes
// back byte for byte, with its Content-Encoding and its length, to a retry
// that accepts gzip (TestLoopbackReplayContentCoding: one that does not).
func TestLoopbackGzipResponse(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("hello "), 100))
	zw.Close()
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		w.Write(gz.Bytes())
	})))
	gzipped := func() *http.Request {
		r := request(t, srv, "POST", "/g", "k", "{}")
		r.Header.Set("Accept-Encoding", "gzip")
		return r
	}
	_, fb := send(gzipped())
	again, ab := send(gzipped())
	if !replayed(again) || runs.Load() != 1 || !bytes.Equal(fb, gz.Bytes()) || !bytes.Equal(ab, gz.Bytes()) ||
		again.Header.Get("Content-Encoding") != "gzip" || again.ContentLength != int64(gz.Len()) {
		t.Errorf("replay %v runs %d: %d bytes (first %d, sent %d), Content-Encoding %q, Content-Length %d",
			replayed(again), runs.Load(), len(ab), len(fb), gz.Len(), again.Header.Get("Content-Encoding"), again.ContentLength)
	}
}

// TestLoopbackScopesAndExpiry: one key in two scopes runs twice, each
// scope replays its own; after the TTL (on a stepped clock) the key runs
// again.
func TestLoopbackScopesAndExpiry(t *testing.T) {
	clk := newClock()
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Now: clk.Now, TTL: time.Hour, Scope: func(r *http.Request) string { return r.Header.Get("X-User") }})
	srv, send := loopback(t, m.Handler(h))
	do := func(user string) (*http.Response, string) {
		r := request(t, srv, "POST", "/c", "k", "{}")
		r.Header.Set("X-User", user)
		resp, b := send(r)
		return resp, string(b)
	}
	_, a := do("alice")
	b, bb := do("bob")
	a2, a2b := do("alice")
	if replayed(b) || bb == a || !replayed(a2) || a2b != a || h.runs.Load() != 2 {
		t.Fatalf("alice %s; bob %s (replayed %v); alice again %s (replayed %v); runs %d", a, bb, replayed(b), a2b, replayed(a2), h.runs.Load())
	}
	clk.Step(time.Hour)
	if a3, _ := do("alice"); replayed(a3) || h.runs.Load() != 3 {
		t.Errorf("after the TTL: replayed %v runs %d; want a new run", replayed(a3), h.runs.Load())
	}
}
