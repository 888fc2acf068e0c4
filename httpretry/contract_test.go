package httpretry_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// rawServer is a TCP listener on loopback whose n-th connection (from 1)
// is handed to handle, which may misbehave on purpose: reset the
// connection, cut an answer, never answer. Connections are closed and the
// goroutines waited for when the test ends.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn
}

func newRawServer(t *testing.T, handle func(n int, c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(s.conns.Add(1))
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(n, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) URL() string { return "http://" + s.ln.Addr().String() + "/x" }

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
}

// readHead reads one request's line and header fields from br, its body
// left unread.
func readHead(br *bufio.Reader) (*http.Request, error) { return http.ReadRequest(br) }

// answer reads one whole request from c and answers it with status and
// body, closing the connection after.
func answer(c net.Conn, br *bufio.Reader, status int, body string) (*http.Request, []byte) {
	req, err := readHead(br)
	if err != nil {
		return nil, nil
	}
	b, _ := io.ReadAll(req.Body)
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, http.StatusText(status), len(body), body)
	return req, b
}

// rawBase is an http.Transport for tests against a rawServer.
func rawBase(t *testing.T) *http.Transport {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// closeCount is a request body that counts its Close calls.
type closeCount struct {
	io.Reader
	closed *atomic.Int32
}

func (b closeCount) Close() error { b.closed.Add(1); return nil }

// resetBeforeBody resets its first connection once the request's header
// is read, before its body; the second gets the body echoed with 200.
func resetBeforeBody(t *testing.T, bodies chan<- []byte) *rawServer {
	return newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n == 1 {
			if _, err := readHead(br); err == nil {
				reset(c)
			}
			return
		}
		if _, b := answer(c, br, 200, "ok"); b != nil {
			bodies <- b
		}
	})
}

func TestResetBeforeBodyReplayedThroughGetBody(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := resetBeforeBody(t, bodies)
	payload := strings.Repeat("p", 10<<10)
	req, _ := http.NewRequest("PUT", srv.URL(), strings.NewReader(payload))
	var gets atomic.Int32
	getBody := req.GetBody
	req.GetBody = func() (io.ReadCloser, error) { gets.Add(1); return getBody() }
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	resp, body, err := send(t, tr, req)
	wantAnswer(t, resp, body, err, 200, "ok")
	if got := <-bodies; string(got) != payload {
		t.Errorf("second attempt's body: got %d bytes, want the %d sent first", len(got), len(payload))
	}
	if gets.Load() != 1 {
		t.Errorf("GetBody called %d times, want 1 (for the second attempt)", gets.Load())
	}
}

func TestResetBeforeBodyWithoutGetBodyBuffered(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := resetBeforeBody(t, bodies)
	payload := strings.Repeat("q", 10<<10)
	var closed atomic.Int32
	req, _ := http.NewRequest("PUT", srv.URL(), closeCount{strings.NewReader(payload), &closed})
	if req.GetBody != nil {
		t.Fatal("the request has GetBody; the test needs one without")
	}
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	resp, body, err := send(t, tr, req)
	wantAnswer(t, resp, body, err, 200, "ok")
	if got := <-bodies; string(got) != payload {
		t.Errorf("second attempt's body: got %d bytes, want the %d buffered", len(got), len(payload))
	}
	if closed.Load() == 0 {
		t.Error("the caller's body was never closed")
	}
}

func TestResetBeforeBodyNotReplayableStops(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := resetBeforeBody(t, bodies)
	var closed atomic.Int32
	req, _ := http.NewRequest("PUT", srv.URL(), closeCount{strings.NewReader(strings.Repeat("r", 10<<10)), &closed})
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{}), MaxBufferedBody: -1}
	_, _, err := send(t, tr, req)
	if !errors.Is(err, httpretry.ErrBodyNotReplayable) {
		t.Fatalf("got %v, want an error matching ErrBodyNotReplayable", err)
	}
	if !strings.Contains(err.Error(), "not replayable") {
		t.Errorf("error %q does not say the body could not be sent again", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("server saw %d connections, want 1", n)
	}
	if closed.Load() == 0 {
		t.Error("the caller's body was never closed")
	}
}

// resetAfterRequest reads each whole request and resets the connection
// instead of answering, n times, then answers 200.
func resetAfterRequest(t *testing.T, resets int, keys chan<- string) *rawServer {
	return newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n <= resets {
			req, err := readHead(br)
			if err == nil {
				io.Copy(io.Discard, req.Body)
				keys <- req.Header.Get("Idempotency-Key")
				reset(c)
			}
			return
		}
		if req, _ := answer(c, br, 200, "done"); req != nil {
			keys <- req.Header.Get("Idempotency-Key")
		}
	})
}

func TestResetAfterRequestPostWithoutKeyNotRetried(t *testing.T) {
	keys := make(chan string, 8)
	srv := resetAfterRequest(t, 1, keys)
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	_, _, err := do(t, tr, "POST", srv.URL(), strings.NewReader("pay 10"))
	if !errors.Is(err, httpretry.ErrNotIdempotent) {
		t.Fatalf("got %v, want an error matching ErrNotIdempotent", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1: the first may have been executed", n)
	}
}

func TestResetAfterRequestPostWithKeyRetriedSameKey(t *testing.T) {
	keys := make(chan string, 8)
	srv := resetAfterRequest(t, 2, keys)
	req, _ := http.NewRequest("POST", srv.URL(), strings.NewReader("pay 10"))
	req.Header.Set("Idempotency-Key", "k-42")
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	resp, body, err := send(t, tr, req)
	wantAnswer(t, resp, body, err, 200, "done")
	for i := range 3 {
		if k := <-keys; k != "k-42" {
			t.Errorf("attempt %d carried key %q, want k-42", i+1, k)
		}
	}
}

func TestBodyCutAfter200IsTheCallersToSee(t *testing.T) {
	srv := newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := readHead(br); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n%s", strings.Repeat("a", 50))
		reset(c)
	})
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	req, _ := http.NewRequest("GET", srv.URL(), nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("got %v, want the 200 with its body unread", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(b) == 100 {
		t.Fatalf("read %d bytes and error %v, want a cut body and an error", len(b), err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("server saw %d connections, want 1: nothing retried behind the caller's back", n)
	}
}

// TestLongRetryableBodyNotDrainedWhole: a 503 with a 10 MB body is
// thrown away after a bounded read: its connection is closed rather than
// read to its end, and a Base allowing one connection per host still gets
// the retry through.
func TestLongRetryableBodyNotDrainedWhole(t *testing.T) {
	var calls, conns atomic.Int32
	var written atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", fmt.Sprint(10<<20))
			w.WriteHeader(503)
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range 160 {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		io.WriteString(w, "fine")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{MaxConnsPerHost: 1}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "fine")
	if n := conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2 (the long answer's closed, not reused)", n)
	}
	if w := written.Load(); w >= 10<<20 {
		t.Errorf("the server wrote all %d bytes of the thrown-away answer: it was read whole", w)
	}
}

// TestExpectContinueNeverSent: the server answers a request with
// "Expect: 100-continue" with a 503 without asking for its body; the body
// goes with the second attempt, through GetBody.
func TestExpectContinueNeverSent(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n == 1 {
			req, err := readHead(br)
			if err != nil {
				return
			}
			if req.Header.Get("Expect") != "100-continue" {
				bodies <- []byte("no Expect header")
			}
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		req, err := readHead(br)
		if err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		b, _ := io.ReadAll(req.Body)
		bodies <- b
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	base := &http.Transport{ExpectContinueTimeout: time.Hour}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
	req, _ := http.NewRequest("PUT", srv.URL(), strings.NewReader("the body"))
	req.Header.Set("Expect", "100-continue")
	resp, body, err := send(t, tr, req)
	wantAnswer(t, resp, body, err, 200, "ok")
	if got := <-bodies; string(got) != "the body" {
		t.Errorf("server got body %q, want %q", got, "the body")
	}
}

func TestGetBodyFailsOnSecondCall(t *testing.T) {
	s := newCountingServer(t, []int{503})
	req, _ := http.NewRequest("PUT", s.URL, strings.NewReader("v"))
	gone := errors.New("the file is gone")
	req.GetBody = func() (io.ReadCloser, error) { return nil, gone }
	tr := &httpretry.Transport{Base: s.base, Policy: fast(retry.Policy{})}
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
		t.Fatalf("got a %d response, want an error", resp.StatusCode)
	}
	var he *httpretry.Error
	if !errors.As(err, &he) || !errors.Is(err, gone) {
		t.Fatalf("got %v, want an *Error wrapping GetBody's", err)
	}
	if he.Attempts != 1 || he.LastStatus != 503 || !strings.Contains(err.Error(), "GetBody") {
		t.Errorf("got %v (attempts %d, last status %d), want 1 attempt, 503, and GetBody named", err, he.Attempts, he.LastStatus)
	}
	if n := s.n.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestCancelDuringBackoffClosesBodies: the caller cancels while the
// transport waits to retry: no further attempt, every body the transport
// made is closed, and the error says cancelled.
func TestCancelDuringBackoffClosesBodies(t *testing.T) {
	s := newCountingServer(t, []int{503, 503, 503})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var made, closed atomic.Int32
	req, _ := http.NewRequestWithContext(ctx, "PUT", s.URL, closeCount{strings.NewReader("v"), &closed})
	made.Add(1)
	req.GetBody = func() (io.ReadCloser, error) {
		made.Add(1)
		return closeCount{strings.NewReader("v"), &closed}, nil
	}
	p := retry.Policy{MaxAttempts: 5, OnRetry: func(retry.Wait) { cancel() }}
	tr := &httpretry.Transport{Base: s.base, Policy: p} // default backoff: the wait is long
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancel") {
		t.Fatalf("got %v, want an error that says cancelled", err)
	}
	if n := s.n.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	if made.Load() != closed.Load() {
		t.Errorf("%d bodies made, %d closed", made.Load(), closed.Load())
	}
}

// TestResponseRequestIsTheAttempts: the response handed over, whether it
// ended the retries or exhausted them, names the request that was sent to
// obtain it: the attempt's clone, with its Attempt-Count and the
// Idempotency-Key the transport created (what httpletter.Capture and the
// proxy read from it); the caller's request is left as it was.
func TestResponseRequestIsTheAttempts(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		for _, codes := range [][]int{{503}, {503, 503, 503}} {
			s := newCountingServer(t, codes)
			tr := &httpretry.Transport{Base: s.base, Policy: fast(retry.Policy{}), IdempotencyKey: httpretry.KeyAuto}
			if hedged {
				tr.Hedge = &hedge.Config{}
			}
			req, _ := http.NewRequest("POST", s.URL, strings.NewReader("x"))
			resp, _, err := send(t, tr, req)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprint(min(len(codes)+1, 3))
			if resp.Request == req || resp.Request.Header.Get("Attempt-Count") != want || resp.Request.Header.Get("Idempotency-Key") == "" {
				t.Errorf("hedged %v, after %v: resp.Request has Attempt-Count %q and key %q (the caller's: %v), want the clone of attempt %s with the created key",
					hedged, codes, resp.Request.Header.Get("Attempt-Count"), resp.Request.Header.Get("Idempotency-Key"), resp.Request == req, want)
			}
			if len(req.Header) != 0 {
				t.Errorf("the caller's header changed: %v", req.Header)
			}
		}
	}
}

func TestTrailersReachTheCaller(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "payload")
		w.Header().Set("X-Sum", "abc")
	}))
	defer srv.Close()
	for _, readBody := range []int64{0, 1 << 10} {
		t.Run(fmt.Sprintf("ReadBody=%d", readBody), func(t *testing.T) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{}), ReadBody: readBody}
			resp, body, err := do(t, tr, "GET", srv.URL, nil)
			wantAnswer(t, resp, body, err, 200, "payload")
			if got := resp.Trailer.Get("X-Sum"); got != "abc" {
				t.Errorf("trailer X-Sum: got %q, want abc", got)
			}
		})
	}
}

// TestCallersRequestUnchanged: a retried request with a created key and a
// buffered body leaves the caller's request as it was.
func TestCallersRequestUnchanged(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		s := newCountingServer(t, []int{503, 502})
		req, _ := http.NewRequest("POST", s.URL, onlyReader{strings.NewReader("body")})
		req.Header.Set("X-Mine", "1")
		body, hdr, url, cl := req.Body, req.Header.Clone(), *req.URL, req.ContentLength
		tr := &httpretry.Transport{Base: s.base, Policy: fast(retry.Policy{}), IdempotencyKey: httpretry.KeyAuto}
		if hedged {
			tr.Hedge = &hedge.Config{}
		}
		resp, _, err := send(t, tr, req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("hedged %v: got %v, %v; want 200", hedged, resp, err)
		}
		if req.Body != body || req.GetBody != nil || req.ContentLength != cl || *req.URL != url {
			t.Errorf("hedged %v: the caller's request's body, GetBody, length or URL changed", hedged)
		}
		if fmt.Sprint(req.Header) != fmt.Sprint(hdr) {
			t.Errorf("hedged %v: the caller's header changed: got %v, want %v", hedged, req.Header, hdr)
		}
	}
}

// TestRedirectLoopHopsRetriedApart: under http.Client, each hop of a
// redirect loop is a request of its own: its 503 is retried, its first
// attempt says Attempt-Count 1 (the header of the previous hop's retry is
// not carried over), and the client stops after 10 redirects.
func TestRedirectLoopHopsRetriedApart(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	var firsts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		n := hits[r.URL.Path]
		if n == 1 {
			firsts = append(firsts, r.Header.Get("Attempt-Count"))
		}
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(503)
			return
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/%d", &i)
		http.Redirect(w, r, fmt.Sprintf("/%d", i+1), http.StatusFound)
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{}), Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	_, err := tr.Client().Get(srv.URL + "/0")
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("got %v, want the client's redirect limit", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 10 {
		t.Errorf("%d hops, want 10 (the client stops at the 10th redirect answer)", len(hits))
	}
	for p, n := range hits {
		if n != 2 {
			t.Errorf("hop %s: %d attempts, want 2 (its 503, then the redirect)", p, n)
		}
	}
	for i, v := range firsts {
		if v != "1" {
			t.Errorf("hop %d's first attempt said Attempt-Count %q, want 1", i, v)
		}
	}
}

// TestOneConnectionPerHostConcurrentRetries: with one connection allowed
// per host, concurrent requests whose first answers are 503s all get
// through: each thrown-away answer frees the connection before its retry
// waits for it.
func TestOneConnectionPerHostConcurrentRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.WriteHeader(503)
			io.WriteString(w, strings.Repeat("busy ", 1000))
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{MaxConnsPerHost: 1}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{MaxAttempts: 10}), Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
}

// TestEarlyAnswerToLongBodyRetried: the server answers 503 to a 4 MB PUT
// after its header, without reading the body, and closes: whether the
// client sees the answer or the broken write, the PUT is sent again, whole,
// through GetBody.
func TestEarlyAnswerToLongBodyRetried(t *testing.T) {
	bodies := make(chan int, 4)
	srv := newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n == 1 {
			if _, err := readHead(br); err == nil {
				io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				reset(c)
			}
			return
		}
		if _, b := answer(c, br, 200, "ok"); b != nil {
			bodies <- len(b)
		}
	})
	payload := bytes.Repeat([]byte("z"), 4<<20)
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	resp, body, err := do(t, tr, "PUT", srv.URL(), bytes.NewReader(payload))
	wantAnswer(t, resp, body, err, 200, "ok")
	if got := <-bodies; got != len(payload) {
		t.Errorf("second attempt's body: %d bytes, want %d", got, len(payload))
	}
}

// TestBufferedBodyLengthMismatchRefused: a body without GetBody that
// does not have the ContentLength the caller set (a file truncated since
// its size was read) is refused, as http.Transport refuses it, instead of
// being buffered and sent as complete with the length it happened to have.
func TestBufferedBodyLengthMismatchRefused(t *testing.T) {
	for _, n := range []int{50, 150} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newCountingServer(t, nil)
			var closed atomic.Int32
			req, _ := http.NewRequest("PUT", s.URL, closeCount{strings.NewReader(strings.Repeat("b", n)), &closed})
			req.ContentLength = 100
			tr := &httpretry.Transport{Base: s.base, Policy: fast(retry.Policy{})}
			_, _, err := send(t, tr, req)
			if err == nil || !strings.Contains(err.Error(), "ContentLength") {
				t.Fatalf("got %v, want an error naming ContentLength", err)
			}
			if got := s.n.Load(); got != 0 {
				t.Errorf("server got %d requests, want none", got)
			}
			if closed.Load() == 0 {
				t.Error("the caller's body was not closed")
			}
		})
	}
}

// TestBodyLengthMismatchNotRetried: a request whose body cannot have its
// ContentLength (none at all, or a shorter one through GetBody, which every
// attempt replays the same) fails the same way on every attempt: it is
// sent once, with net/http's error.
func TestBodyLengthMismatchNotRetried(t *testing.T) {
	s := newCountingServer(t, nil)
	nilBody, _ := http.NewRequest("GET", s.URL, nil)
	nilBody.ContentLength = 5
	short, _ := http.NewRequest("PUT", s.URL, strings.NewReader("abc"))
	short.ContentLength = 10
	for _, req := range []*http.Request{nilBody, short} {
		tr := &httpretry.Transport{Base: s.base, Policy: fast(retry.Policy{})}
		_, err := tr.RoundTrip(req)
		var he *httpretry.Error
		if !errors.As(err, &he) || he.Attempts != 1 || he.Reason != retry.ReasonPermanent || !strings.Contains(err.Error(), "ContentLength=") {
			t.Errorf("%s with ContentLength %d: got %v, want net/http's error after 1 attempt, permanent", req.Method, req.ContentLength, err)
		}
	}
}

// TestCancelCauseDuringBackoff: a caller that cancels with a cause
// (context.WithCancelCause: a shutdown) while the transport waits to
// retry gets an error that carries that cause, as http.Transport's does,
// and still matches context.Canceled.
func TestCancelCauseDuringBackoff(t *testing.T) {
	for _, hedged := range []bool{false, true} {
		s := newCountingServer(t, []int{503, 503, 503})
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL, nil)
		shutdown := errors.New("shutting down")
		p := retry.Policy{MaxAttempts: 5, OnRetry: func(retry.Wait) { cancel(shutdown) }}
		tr := &httpretry.Transport{Base: s.base, Policy: p} // default backoff: the wait is long
		if hedged {
			tr.Hedge = &hedge.Config{}
		}
		_, err := tr.RoundTrip(req)
		if !errors.Is(err, shutdown) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "shutting down") {
			t.Fatalf("hedged %v: got %v, want an error that matches the cause and context.Canceled, and names the cause", hedged, err)
		}
		if n := s.n.Load(); n != 1 {
			t.Errorf("hedged %v: server saw %d requests, want 1", hedged, n)
		}
	}
}

// TestCancelCauseDuringAttempt: a caller that cancels with a cause while
// an attempt waits for its answer gets no further attempt, and an error
// that matches the cause and context.Canceled.
func TestCancelCauseDuringAttempt(t *testing.T) {
	got := make(chan struct{}, 4)
	srv := newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := readHead(br); err != nil {
			return
		}
		got <- struct{}{}
		io.Copy(io.Discard, br) // no answer until the client goes
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	shutdown := errors.New("shutting down")
	go func() { <-got; cancel(shutdown) }()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL(), nil)
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{MaxAttempts: 5})}
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, shutdown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an error that matches the cause and context.Canceled", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("server saw %d connections, want 1", n)
	}
}

// TestThrownAwayBodyCutStillRetried: a 503 whose chunked body is reset
// mid-way is thrown away (its drain fails, its connection goes) and the
// retry goes on, on a new connection.
func TestThrownAwayBodyCutStillRetried(t *testing.T) {
	srv := newRawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n == 1 {
			if _, err := readHead(br); err == nil {
				io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nbusy \r\n")
				reset(c)
			}
			return
		}
		answer(c, br, 200, "ok")
	})
	tr := &httpretry.Transport{Base: rawBase(t), Policy: fast(retry.Policy{})}
	resp, body, err := do(t, tr, "GET", srv.URL(), nil)
	wantAnswer(t, resp, body, err, 200, "ok")
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
}
