package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// The front end must do what the net/http path does: each case sends the
// same bytes through a proxy with the front end and through one without
// (Server.NetHTTPOnly), to the same scripted upstream, and compares what
// the upstream saw (method, target, fields) and what the client got
// (status, fields but Date, body, trailer).

// diffCase is one request and the upstream's script: the answers it
// gives to the attempts, in turn (the last one again after).
type diffCase struct {
	name     string
	request  string   // what the client sends
	answers  []string // what the upstream answers each attempt
	upstream string   // the route's upstream path and query ("" none)
}

var diffCases = []diffCase{
	{name: "plain GET", request: "GET /a/b HTTP/1.1\r\nHost: front.example\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"}},
	{name: "query and upstream base", upstream: "/v2?k=1", request: "GET /a?x=1&y=%20 HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}},
	{name: "forwarded chain", request: "GET / HTTP/1.1\r\nHost: front\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 10.0.0.2, 10.0.0.3\r\nX-Forwarded-Host: evil\r\nX-Forwarded-Proto: https\r\nForwarded: for=1.2.3.4\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "hop-by-hop request fields", request: "GET / HTTP/1.1\r\nHost: front\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\nX-Keep: 1\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "client closes", request: "GET / HTTP/1.1\r\nHost: front\r\nConnection: close\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "HEAD", request: "HEAD /h HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n"}},
	{name: "503 twice then 200", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nbusy", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nbusy", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "503 to the end", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nbusy"}},
	{name: "429 with a hint too long", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3600\r\nContent-Length: 4\r\n\r\nslow"}},
	{name: "503 Do-Not-Retry", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 503 Service Unavailable\r\nDo-Not-Retry: true\r\nContent-Length: 4\r\n\r\nbusy"}},
	{name: "404 not retried", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnone"}},
	{name: "Location into the upstream", upstream: "/v2", request: "GET /r HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 302 Found\r\nLocation: /v2/next\r\nLink: </v2/p?page=2>; rel=next\r\nContent-Length: 0\r\n\r\n"}},
	{name: "chunked with trailer", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n"}},
	{name: "HTTP/1.0 answer to close", request: "GET /c HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"}},
	{name: "204 and 304", request: "GET /n HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"}},
	{name: "304 with a length", request: "GET /n HTTP/1.1\r\nHost: front\r\nIf-None-Match: \"x\"\r\n\r\n",
		answers: []string{"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n"}},
	{name: "hop-by-hop answer fields", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nConnection: X-Private, keep-alive\r\nX-Private: p\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nX-Public: q\r\nVia: 1.1 other\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "no Content-Type kept so", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n<html"}},
	{name: "103 then 200", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "folded answer field", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "reason phrase of its own", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 200 Fine Thanks\r\nContent-Length: 2\r\n\r\nok"}},
	{name: "malformed answer", request: "GET / HTTP/1.1\r\nHost: front\r\n\r\n",
		answers: []string{"HTTP/1.1 2xx OK\r\n\r\n"}},
}

func TestFrontSameAsNetHTTP(t *testing.T) {
	for _, c := range diffCases {
		t.Run(c.name, func(t *testing.T) {
			frontSaw, frontGot, frontEvents := diffRun(t, c, false)
			httpSaw, httpGot, httpEvents := diffRun(t, c, true)
			if frontEvents == "" {
				t.Error("the observer heard nothing")
			}
			if frontEvents != httpEvents {
				t.Errorf("the observer heard, from the front end:\n%s\nfrom net/http:\n%s", frontEvents, httpEvents)
			}
			if frontSaw != httpSaw {
				t.Errorf("the upstream saw, from the front end:\n%s\nfrom net/http:\n%s", frontSaw, httpSaw)
			}
			if frontGot != httpGot {
				t.Errorf("the client got, from the front end:\n%s\nfrom net/http:\n%s", frontGot, httpGot)
			}
		})
	}
}

// diffRun sends c through a proxy (netHTTPOnly: without its front end) and
// returns what the upstream saw and what the client got, written out.
func diffRun(t *testing.T, c diffCase, netHTTPOnly bool) (saw, got, events string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	url, _ := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			mu.Lock()
			n := len(seen)
			seen = append(seen, describeRequest(req))
			mu.Unlock()
			io.WriteString(conn, c.answers[min(n, len(c.answers)-1)])
			if strings.HasPrefix(c.answers[min(n, len(c.answers)-1)], "HTTP/1.0") {
				return // an answer delimited by the close
			}
		}
	})
	up, err := neturl.Parse(url + c.upstream)
	if err != nil {
		t.Fatal(err)
	}
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections)
	rec := &diffEvents{}
	s := &Server{base: base, buffers: &bufferPool{}, NetHTTPOnly: netHTTPOnly, Observer: rec}
	// Backoff of a millisecond: the retries do not wait for the
	// default's.
	pol := retry.Policy{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: time.Millisecond}, ThrottleBase: time.Millisecond}
	rs, err := s.build(&Config{Routes: []*Route{{Name: "--upstream", Upstream: up, Policy: pol}}})
	if err != nil {
		t.Fatal(err)
	}
	s.routes.Store(rs)
	t.Cleanup(rs.close)
	front := httptest.NewUnstartedServer(s)
	if !netHTTPOnly {
		front.Listener = s.Listener(front.Listener)
	}
	front.Start()
	t.Cleanup(func() {
		front.Close()
		waitFront(t, s)
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on a failure, not a wait
	if _, err := io.WriteString(conn, c.request); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(c.request, " ")
	// The 1xx answers, then the final one.
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		if resp.StatusCode < 200 {
			got += fmt.Sprintf("%s\n%s\n", resp.Status, describeHeader(resp.Header))
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got += describeResponse(resp, body, err)
		break
	}
	conn.Close()
	mu.Lock()
	defer mu.Unlock()
	return strings.Join(seen, "\n"), got, rec.String()
}

// diffEvents records the events of a run, written out without what
// differs from run to run (times, ports, durations).
type diffEvents struct {
	mu    sync.Mutex
	lines []string
}

func (d *diffEvents) Observe(_ context.Context, e event.Event) {
	host, _, _ := strings.Cut(e.Host, ":")
	line := fmt.Sprintf("%v %s %s %s attempt=%d outcome=%v status=%d source=%v reason=%s", e.Kind, e.Component, e.Method, host, e.Attempt, e.Outcome, e.Status, e.Source, e.Reason)
	d.mu.Lock()
	d.lines = append(d.lines, line)
	d.mu.Unlock()
}

func (d *diffEvents) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func describeRequest(r *http.Request) string {
	h := r.Header.Clone()
	h["Host"] = []string{"upstream"} // its port differs from run to run
	return fmt.Sprintf("%s %s %s\n%s", r.Method, r.RequestURI, r.Proto, describeHeader(h))
}

func describeResponse(r *http.Response, body []byte, err error) string {
	h := r.Header.Clone()
	delete(h, "Date")
	if r.StatusCode >= 500 && strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
		// The problem's detail names ports and paths of the run.
		body = []byte(strings.Split(string(body), `"detail"`)[0])
		delete(h, "Content-Length")
	}
	return fmt.Sprintf("%s %v %v\n%s\nbody %q (%v)\ntrailer %v", r.Status, r.TransferEncoding, r.Close, describeHeader(h), body, err, r.Trailer)
}

func describeHeader(h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %q\n", k, h[k])
	}
	return b.String()
}

func TestFrontDiffHelpersCompare(t *testing.T) {
	// The comparison can fail: two different headers differ.
	a := describeHeader(http.Header{"A": {"1"}})
	b := describeHeader(http.Header{"A": {"2"}})
	if reflect.DeepEqual(a, b) {
		t.Fatal("describeHeader gives the same text for different headers")
	}
}
