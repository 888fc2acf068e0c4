package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// The pipeline tests run the whole "never does anything twice" path
// against real servers, under faults: a client (httpretry, the default
// policy with its waits skipped, KeyAuto) sends a payment through
// internal/faultproxy to a real HTTP server on loopback whose handler is
// behind the idempotency middleware over PostgreSQL; a call that runs out
// of retries is captured as a dead letter in postgres.DeadLetters
// (httpletter) and redriven by a deadletter.Redriver through the same
// client. Each test checks what the handler executed and what the client
// and the redriver got.

// payments is the server side of the pipeline: POST /payments behind the
// idempotency middleware, the key required, over PostgreSQL. It records
// every request that reaches it (arrival) and every run of the handler.
type payments struct {
	mu       sync.Mutex
	changed  chan struct{}       // closed and replaced at each change, for wait
	arrivals []arrival           // every request that reached the server, in order
	served   int                 // requests whose middleware returned
	runs     map[string][]string // the handler's answers, by key: one per run
	onArrive func(n int)         // the test's faults, when request n's header has arrived
	onRun    func(n int)         // the test's faults, in run n (from 1) before it answers
}

// arrival is a request as it reached the server, and the status the
// server answered it with (0 until it has; the client may not have got it).
type arrival struct {
	key, attempt string
	status       int
}

// statusWriter records the status a request was answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// principal is who the request's bearer token says it comes from: the
// token up to its "-" ("alice-1" and "alice-2" are two tokens of alice).
func principal(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	who, _, _ := strings.Cut(token, "-")
	if !ok {
		return ""
	}
	return who
}

// newPayments starts the server, with the middleware over store, and
// returns it with its address; the server is closed when t ends. Requests
// need a bearer token (401 without); keys are scoped by its principal and
// the fingerprint holds the Content-Type.
func newPayments(t *testing.T, store idempotency.Store) (*payments, string) {
	t.Helper()
	p := &payments{changed: make(chan struct{}), runs: map[string][]string{}}
	mw, err := idempotency.New(idempotency.Config{Store: store, Scope: principal,
		FingerprintHeaders: []string{"Content-Type"}, ErrorLog: log.New(testLog{t}, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	pay := mw.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := r.Header.Get(header.IdempotencyKey)
		p.mu.Lock()
		n := 0
		for _, rs := range p.runs {
			n += len(rs)
		}
		n++
		body := fmt.Sprintf(`{"payment":"pay_%d"}`, n)
		p.runs[key] = append(p.runs[key], body)
		hook := p.onRun
		p.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, body)
	}))
	mux := http.NewServeMux()
	mux.Handle("POST /payments", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.arrivals = append(p.arrivals, arrival{key: r.Header.Get(header.IdempotencyKey), attempt: r.Header.Get(header.AttemptCount)})
		n, hook := len(p.arrivals), p.onArrive
		p.signal()
		p.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		sw := &statusWriter{ResponseWriter: w}
		if principal(r) == "" {
			http.Error(sw, "a bearer token is required", http.StatusUnauthorized)
		} else {
			pay.ServeHTTP(sw, r)
		}
		p.mu.Lock()
		p.arrivals[n-1].status = sw.status
		p.served++
		p.signal()
		p.mu.Unlock()
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return p, srv.Listener.Addr().String()
}

// signal wakes the waiters; p.mu is held.
func (p *payments) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait waits until cond, called with p.mu held, holds, for up to 30 s,
// without polling: the server signals each change. It reports whether
// cond held.
func (p *payments) wait(cond func() bool) bool {
	timeout := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		ok, ch := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timeout:
			return false
		}
	}
}

// quiet waits until every request that reached the server has been
// served (its record completed or released).
func (p *payments) quiet(t *testing.T) {
	t.Helper()
	if !p.wait(func() bool { return p.served == len(p.arrivals) }) {
		t.Fatal("the server did not finish its requests within 30 s")
	}
}

// statuses returns the status each arrival was answered with.
func statuses(as []arrival) []int {
	var s []int
	for _, a := range as {
		s = append(s, a.status)
	}
	return s
}

// snapshot returns the arrivals and the runs of the handler so far.
func (p *payments) snapshot() ([]arrival, map[string][]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	runs := map[string][]string{}
	for k, v := range p.runs {
		runs[k] = append([]string(nil), v...)
	}
	return append([]arrival(nil), p.arrivals...), runs
}

// totalRuns counts the handler's runs under every key.
func totalRuns(runs map[string][]string) int {
	n := 0
	for _, rs := range runs {
		n += len(rs)
	}
	return n
}

// outcome is what a call through the pipeline's client got: a response
// (read and closed) or an error.
type outcome struct {
	status   int
	replayed string
	body     string
	err      error
	key      string // the Idempotency-Key the request carried
}

func (o outcome) String() string {
	if o.err != nil {
		return "error: " + o.err.Error()
	}
	return fmt.Sprintf("%d %s (replayed %q)", o.status, o.body, o.replayed)
}

// recorder is the client's outermost RoundTripper: it records the outcome
// of every call (an httpretry call with its retries, or a redrive).
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []outcome
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rec.next.RoundTrip(req)
	o := outcome{err: err, key: req.Header.Get(header.IdempotencyKey)}
	if err == nil {
		b, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		o.status, o.replayed, o.body = resp.StatusCode, resp.Header.Get(header.IdempotentReplayed), string(b)
		if resp.Request != nil && o.key == "" {
			o.key = resp.Request.Header.Get(header.IdempotencyKey)
		}
	}
	rec.mu.Lock()
	rec.got = append(rec.got, o)
	rec.mu.Unlock()
	return resp, err
}

func (rec *recorder) outcomes() []outcome {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]outcome(nil), rec.got...)
}

// pipelineClient returns the client of the pipeline: httpretry with the
// default policy (its waits skipped, as retrytest.NoWait does: attempts,
// classification and budget as in production) and KeyAuto, over a
// transport that opens a connection per attempt (so net/http never sends a
// request again by itself) and dials with dial if set. rec records each
// call's outcome.
func pipelineClient(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, *recorder) {
	t.Helper()
	p, _ := retrytest.NoWait(retry.Policy{})
	base := &http.Transport{DisableKeepAlives: true, DialContext: dial}
	t.Cleanup(base.CloseIdleConnections)
	rec := &recorder{next: &httpretry.Transport{Policy: p, IdempotencyKey: httpretry.KeyAuto, Base: base}}
	return &http.Client{Transport: rec}, rec
}

// paymentBody is the payment the client sends.
const paymentBody = `{"amount":1000,"currency":"EUR"}`

// newPayment returns a payment POST to url, as alice (token alice-1). Its
// body is body (as GetBody gives it to every attempt after the first);
// first, if set, is the first attempt's reader of the same bytes.
func newPayment(t *testing.T, url, body string, first io.ReadCloser) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if first != nil {
		req.Body = first
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer alice-1")
	return req
}

// do sends req through client and returns the response, read and closed,
// or the error.
func do(client *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := client.Do(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

// stalling is a request body that sends its first part, then waits until
// release is closed before the rest: the request is on its way when the
// test cuts the link.
type stalling struct {
	parts   []string
	release <-chan struct{}
}

func (s *stalling) Read(b []byte) (int, error) {
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	if len(s.parts) == 1 {
		<-s.release
	}
	n := copy(b, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	if s.parts[0] == "" {
		s.parts = s.parts[1:]
	}
	return n, nil
}

func (s *stalling) Close() error { return nil }

// TestPipelineRetries: a payment POST through httpretry (default policy,
// KeyAuto) and a fault-injecting proxy to a server whose handler is behind
// the idempotency middleware over PostgreSQL. Whatever the network loses
// (the reply after the server handled the request, once or twice; the
// link while the request is being sent), the client's retries end with
// the one answer, the handler runs once, every attempt carries the same
// key, and the answer is marked as a replay when it is one.
func TestPipelineRetries(t *testing.T) {
	_, pool := start(t)
	for _, tc := range []struct {
		name     string
		statuses []int // the server's answers to the attempts that reached it
		replayed bool  // the client's answer is a replay
		// faults returns what to do when request n's header arrives, the
		// body, and the first attempt's reader of it (nil: the plain one).
		faults func(t *testing.T, srv *payments, proxy *faultproxy.Proxy) (func(n int), string, io.ReadCloser)
	}{
		{name: "reply lost once", statuses: []int{201, 201}, replayed: true,
			faults: func(_ *testing.T, _ *payments, proxy *faultproxy.Proxy) (func(int), string, io.ReadCloser) {
				return func(n int) {
					if n == 1 {
						proxy.DropNextReply()
					}
				}, paymentBody, nil
			}},
		{name: "reply lost twice", statuses: []int{201, 201, 201}, replayed: true,
			faults: func(_ *testing.T, _ *payments, proxy *faultproxy.Proxy) (func(int), string, io.ReadCloser) {
				return func(n int) {
					if n <= 2 {
						proxy.DropNextReply()
					}
				}, paymentBody, nil
			}},
		{name: "link cut while the request is sent", statuses: []int{400, 201}, // body_unreadable: the handler never saw it
			replayed: false,
			faults: func(_ *testing.T, _ *payments, proxy *faultproxy.Proxy) (func(int), string, io.ReadCloser) {
				// The first attempt's header and more than a buffer of
				// its body go out; the rest waits until the link is cut.
				head := paymentBody[:len(paymentBody)-1] + `,"memo":"` + strings.Repeat("x", 16<<10)
				tail := `"}`
				release := make(chan struct{})
				return func(n int) {
					if n == 1 {
						proxy.Cut() // every connection cut, new ones let through
						close(release)
					}
				}, head + tail, &stalling{parts: []string{head, tail}, release: release}
			}},
		{name: "cut as the handler answers, the retry meets 409", statuses: []int{201, 409, 201}, replayed: true,
			faults: func(t *testing.T, srv *payments, proxy *faultproxy.Proxy) (func(int), string, io.ReadCloser) {
				srv.onRun = func(int) {
					proxy.Cut() // the answer cannot leave, and the retry comes in while the handler runs
					if !srv.wait(func() bool { return srv.served >= 1 }) {
						t.Error("the client's retry did not arrive")
					}
				}
				// The retry got 409 in_progress with Retry-After: the
				// client waits (no time here), and its next attempt
				// arrives once the first run's answer is recorded.
				return func(n int) {
					if n == 3 && !srv.wait(func() bool { return srv.served >= 2 }) {
						t.Error("the first run did not end")
					}
				}, paymentBody, nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := newPayments(t, postgres.NewIdempotencyStore(pool))
			proxy := faultproxy.New(t, addr)
			client, rec := pipelineClient(t, nil)
			onArrive, body, first := tc.faults(t, srv, proxy)
			srv.onArrive = onArrive

			req := newPayment(t, "http://"+proxy.Addr+"/payments", body, first)
			resp, err := do(client, req)
			if err != nil {
				t.Fatalf("the client's call: %v, want an answer", err)
			}
			srv.quiet(t)
			got := rec.outcomes()[0]
			arrivals, runs := srv.snapshot()
			key := got.key
			if len(key) != 36 || req.Header.Get(header.IdempotencyKey) != "" {
				t.Fatalf("key %q (the caller's request header %q): want a created UUID, the caller's request untouched", key, req.Header.Get(header.IdempotencyKey))
			}
			if !slices.Equal(statuses(arrivals), tc.statuses) {
				t.Fatalf("the server answered the attempts that reached it %v, want %v", statuses(arrivals), tc.statuses)
			}
			for i, a := range arrivals {
				if a.key != key || a.attempt != fmt.Sprint(i+1) {
					t.Fatalf("attempt %d arrived as %+v, want key %s and Attempt-Count %d", i+1, a, key, i+1)
				}
			}
			if totalRuns(runs) != 1 || len(runs[key]) != 1 {
				t.Fatalf("the handler ran %v, want once under key %s", runs, key)
			}
			want := map[bool]string{true: "true", false: ""}[tc.replayed]
			if resp.StatusCode != http.StatusCreated || got.body != runs[key][0] || got.replayed != want {
				t.Fatalf("the client got %v, want 201 %s with Idempotent-Replayed %q", got, runs[key][0], want)
			}
		})
	}
}

// redriveObserver records the Redrive events of a redriver.
type redriveObserver struct {
	mu     sync.Mutex
	events []event.Event
}

func (o *redriveObserver) Observe(_ context.Context, e event.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *redriveObserver) outcomes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s []string
	for _, e := range o.events {
		s = append(s, e.Outcome.String())
	}
	return s
}

// TestPipelineDeadLetter: the client runs out of retries, the call is
// captured as a letter in postgres.DeadLetters (httpletter.Capture) with
// the key its attempts carried, the link comes back, and a Redriver sends
// the letter again through the same client. Cases:
//
//   - the link down before the request: every attempt cut; the client
//     gives up with an *httpretry.Error; the redrive runs the handler;
//   - the link going down as the handler answers: the handler ran, its
//     answer and the retries lost; the redrive gets the replay;
//   - the link cut as the handler answers and back at once: the retries
//     arrive while the handler still runs and get 409 in_progress, after
//     each of which the client waits as told, until its attempts run out:
//     the call ends on the last 409, which Capture keeps; the redrive gets
//     the replay;
//   - the link down before the request, and the first redrive's reply
//     lost after the handler ran: that redrive fails and the letter waits;
//     the next gets the replay.
//
// In every case the handler runs once in all, the redrive's answer is the
// one the handler gave (a replay when it had run before), and the letter
// ends redriven: deleted, reported done once, and a later pass finds
// nothing.
func TestPipelineDeadLetter(t *testing.T) {
	_, pool := start(t)
	letters := postgres.NewDeadLetters(pool)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// faults sets the faults up before the call.
		faults   func(t *testing.T, srv *payments, proxy *faultproxy.Proxy)
		status   int   // the call's last answer (0: it ends on an error)
		before   []int // the server's answers before the redrive
		lostOnce bool  // the first redrive's reply is lost
	}{
		{name: "down before the request", before: nil,
			faults: func(_ *testing.T, _ *payments, proxy *faultproxy.Proxy) { proxy.Down() }},
		{name: "down as the handler answers", before: []int{201},
			faults: func(_ *testing.T, srv *payments, proxy *faultproxy.Proxy) {
				srv.onRun = func(int) { proxy.Down() } // the work is done; its answer cannot leave
			}},
		{name: "cut as the handler answers, the retries meet 409", status: 409, before: []int{201, 409, 409},
			faults: func(t *testing.T, srv *payments, proxy *faultproxy.Proxy) {
				srv.onRun = func(int) {
					proxy.Cut()
					// Answer once both retries have been answered 409.
					if !srv.wait(func() bool { return srv.served >= 2 }) {
						t.Error("the client's retries did not arrive")
					}
				}
			}},
		{name: "the first redrive's reply lost", before: nil, lostOnce: true,
			faults: func(_ *testing.T, srv *payments, proxy *faultproxy.Proxy) {
				proxy.Down()
				srv.onArrive = func(n int) {
					if n == 1 { // the first redrive
						proxy.DropNextReply()
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := newPayments(t, postgres.NewIdempotencyStore(pool))
			proxy := faultproxy.New(t, addr)
			client, rec := pipelineClient(t, nil)
			tc.faults(t, srv, proxy)

			req := newPayment(t, "http://"+proxy.Addr+"/payments", paymentBody, nil)
			resp, err := do(client, req)
			call := rec.outcomes()[0]
			attempts := 3
			if tc.status == 0 {
				var herr *httpretry.Error
				if resp != nil || !errors.As(err, &herr) || herr.Attempts != 3 || herr.Reason != retry.ReasonExhausted {
					t.Fatalf("the client's call: %v %v, want an *httpretry.Error after 3 attempts, exhausted", resp, err)
				}
				call.key = herr.Key // the key its attempts carried
			} else {
				attempts = len(tc.before)
				if err != nil || resp.StatusCode != tc.status {
					t.Fatalf("the client's call: %v, want its last answer %d", call, tc.status)
				}
			}
			if len(call.key) != 36 {
				t.Fatalf("the call's key %q, want a created UUID", call.key)
			}
			key := call.key
			srv.quiet(t) // the first run's record is complete before the redrive
			queue := "pipeline-" + strings.ReplaceAll(tc.name, " ", "-")
			l, kept, err := httpletter.Capture(ctx, letters, queue, req, resp, err, time.Now())
			if err != nil || !kept {
				t.Fatalf("Capture: kept %v, %v", kept, err)
			}
			stored, err := letters.Get(ctx, l.ID)
			if err != nil || stored.Key != key || stored.Attempts != attempts || bytes.Contains(stored.Payload, []byte("alice-1")) {
				t.Fatalf("the stored letter: %s%v; want key %s, %d attempts, no token", show(stored), err, key, attempts)
			}
			arrivals, runs := srv.snapshot()
			if !slices.Equal(statuses(arrivals), tc.before) || totalRuns(runs) != min(len(tc.before), 1) {
				t.Fatalf("before the redrive: the server answered %v and the handler ran %v; want %v and %d runs", statuses(arrivals), runs, tc.before, min(len(tc.before), 1))
			}

			proxy.Up()
			obs := &redriveObserver{}
			fresh := func(r *http.Request) error { // alice's credentials of the moment
				r.Header.Set("Authorization", "Bearer alice-2")
				return nil
			}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: letters, Queue: queue,
				Handler: httpletter.Handler(client, fresh), Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			wantEvents := []string{event.Success.String()}
			if tc.lostOnce {
				if rep, err := r.RedriveAt(ctx, now); err != nil || rep != (deadletter.Report{Claimed: 1, Failed: 1}) {
					t.Fatalf("the redrive whose reply is lost: %+v, %v; want it failed", rep, err)
				}
				if stored, err := letters.Get(ctx, l.ID); err != nil || stored.Redrives != 1 || stored.Parked || !stored.Due.After(now) {
					t.Fatalf("the letter after a redrive whose reply was lost: %s%v; want one failed redrive, due later", show(stored), err)
				}
				srv.quiet(t)
				now = now.Add(10 * time.Minute) // past the backoff after one failed redrive (at most 5 min)
				wantEvents = append([]string{event.Failure.String()}, wantEvents...)
			}
			rep, err := r.RedriveAt(ctx, now)
			if err != nil || rep != (deadletter.Report{Claimed: 1, Done: 1}) {
				t.Fatalf("redrive: %+v, %v; want the letter claimed and done", rep, err)
			}
			srv.quiet(t)
			arrivals, runs = srv.snapshot()
			redrive := rec.outcomes()[len(rec.outcomes())-1]
			if last := arrivals[len(arrivals)-1]; last.key != key {
				t.Fatalf("the redrive arrived as %+v, want key %s", last, key)
			}
			if totalRuns(runs) != 1 || len(runs[key]) != 1 {
				t.Fatalf("the handler ran %v, want once in all, under key %s", runs, key)
			}
			ranBefore := len(tc.before) > 0 || tc.lostOnce
			want := map[bool]string{true: "true", false: ""}[ranBefore]
			if redrive.status != http.StatusCreated || redrive.body != runs[key][0] || redrive.replayed != want {
				t.Fatalf("the redrive got %v, want 201 %s with Idempotent-Replayed %q", redrive, runs[key][0], want)
			}
			if _, err := letters.Get(ctx, l.ID); !errors.Is(err, deadletter.ErrNotFound) {
				t.Fatalf("the letter after its redrive: %v, want it deleted (ErrNotFound)", err)
			}
			if got := obs.outcomes(); !slices.Equal(got, wantEvents) {
				t.Fatalf("redrive events: %v, want %v", got, wantEvents)
			}
			if rep, err := r.RedriveAt(ctx, now.Add(time.Hour)); err != nil || rep != (deadletter.Report{}) {
				t.Fatalf("a later pass: %+v, %v; want nothing claimed", rep, err)
			}
			if _, runs := srv.snapshot(); totalRuns(runs) != 1 {
				t.Fatalf("after a later pass the handler ran %v, want once", runs)
			}
		})
	}
}

// switchboard is the client's dialer in TestPipelineServerKilled: every
// connection goes to the server process of the moment; while there is none
// (killed, not yet started again), a dial waits for the next one.
type switchboard struct {
	mu     sync.Mutex
	target string
	up     chan struct{} // closed when a target is set
}

func newSwitchboard() *switchboard { return &switchboard{up: make(chan struct{})} }

func (s *switchboard) set(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target = strings.TrimPrefix(url, "http://")
	close(s.up)
}

func (s *switchboard) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target, s.up = "", make(chan struct{})
}

func (s *switchboard) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	for {
		s.mu.Lock()
		target, up := s.target, s.up
		s.mu.Unlock()
		if target != "" {
			var d net.Dialer
			return d.DialContext(ctx, network, target)
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TestPipelineServerKilled: the server process (internal/idemproc: the
// middleware over PostgreSQL in a child process) is killed (SIGKILL)
// between two of the client's attempts and started again.
//
//   - killed after it recorded the response, before the response left:
//     the client's next attempt, to the new process, gets the replay; the
//     handler ran once.
//   - killed after it claimed the key, before the handler ran: the next
//     attempts get 409 in_progress (the dead process's lease holds the
//     key) until they run out; the call is captured as a letter;
//     a redrive within the lease fails on 409 and the letter waits; a
//     redrive after the lease (the new process's clock set past it, the
//     redriver's now later) runs the handler, once in all.
func TestPipelineServerKilled(t *testing.T) {
	srv, pool := start(t)
	letters := postgres.NewDeadLetters(pool)
	ctx := context.Background()
	const lease = 5 * time.Second
	t.Run("after the response was recorded", func(t *testing.T) {
		runsFile := filepath.Join(t.TempDir(), "runs")
		sb := newSwitchboard()
		client, rec := pipelineClient(t, sb.dial)
		first := idemproc.Start(t, idemproc.Options{Addr: srv.DSN, Lease: lease, Pause: idemproc.StepCompleted, Runs: runsFile})
		sb.set(first.URL)

		req := newPayment(t, "http://payments.internal/charges", paymentBody, nil)
		done := make(chan error, 1)
		go func() {
			_, err := do(client, req)
			done <- err
		}()
		first.WaitLine(t, "paused "+idemproc.StepCompleted)
		sb.down()
		first.Kill() // the first attempt ends on a closed connection; the next waits to dial
		second := idemproc.Start(t, idemproc.Options{Addr: srv.DSN, Lease: lease, Runs: runsFile})
		sb.set(second.URL)
		if err := <-done; err != nil {
			t.Fatalf("the client's call: %v, want an answer", err)
		}
		got := rec.outcomes()[0]
		runs := idemproc.Runs(t, runsFile)
		if len(runs) != 1 || !strings.HasSuffix(runs[0], fmt.Sprintf("_%d", first.Pid)) {
			t.Fatalf("the handler ran %v, want once, in the killed process %d", runs, first.Pid)
		}
		if got.status != http.StatusCreated || got.replayed != "true" || !strings.Contains(got.body, fmt.Sprintf(`"pid":%d}`, first.Pid)) {
			t.Fatalf("the client got %v, want the replay of the killed process's (%d) 201", got, first.Pid)
		}
	})
	t.Run("after the key was claimed", func(t *testing.T) {
		runsFile := filepath.Join(t.TempDir(), "runs")
		sb := newSwitchboard()
		client, rec := pipelineClient(t, sb.dial)
		first := idemproc.Start(t, idemproc.Options{Addr: srv.DSN, Lease: lease, Pause: idemproc.StepClaimed, Runs: runsFile})
		sb.set(first.URL)

		type result struct {
			resp *http.Response
			err  error
		}
		req := newPayment(t, "http://payments.internal/charges", paymentBody, nil)
		done := make(chan result, 1)
		go func() {
			resp, err := do(client, req)
			done <- result{resp, err}
		}()
		first.WaitLine(t, "paused "+idemproc.StepClaimed)
		sb.down()
		first.Kill()
		within := idemproc.Start(t, idemproc.Options{Addr: srv.DSN, Lease: lease, Runs: runsFile})
		sb.set(within.URL)
		res := <-done
		if res.err != nil || res.resp.StatusCode != http.StatusConflict {
			t.Fatalf("the client's call: %v %v, want its last answer, 409 in_progress", res.resp, res.err)
		}
		call := rec.outcomes()[0]
		if !strings.Contains(call.body, idempotency.ReasonInProgress) || len(call.key) != 36 {
			t.Fatalf("the client got %v with key %q, want 409 in_progress under a created key", call, call.key)
		}
		l, kept, err := httpletter.Capture(ctx, letters, "pipeline-killed", req, res.resp, nil, time.Now())
		if err != nil || !kept || l.Key != call.key || l.Attempts != 3 {
			t.Fatalf("Capture: %s kept %v, %v; want the call kept with key %s and 3 attempts (the 409s retried as their Retry-After says)", show(l), kept, err, call.key)
		}
		r, err := deadletter.NewRedriver(deadletter.Config{Store: letters, Queue: "pipeline-killed", Handler: httpletter.Handler(client, nil)})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if rep, err := r.RedriveAt(ctx, now); err != nil || rep != (deadletter.Report{Claimed: 1, Failed: 1}) {
			t.Fatalf("redrive within the lease: %+v, %v; want it failed (409), the letter kept", rep, err)
		}
		if stored, err := letters.Get(ctx, l.ID); err != nil || stored.Redrives != 1 || stored.Parked || !stored.Due.After(now) {
			t.Fatalf("the letter after a redrive within the lease: %s%v; want one failed redrive, due later", show(stored), err)
		}
		if n := len(idemproc.Runs(t, runsFile)); n != 0 {
			t.Fatalf("the handler ran %d times within the lease, want none", n)
		}

		// Later: the dead process's lease has passed (the new process's
		// clock and the redriver's now are set past it instead of waiting).
		sb.down()
		const later = 10 * time.Minute // past the letter's backoff (at most 5 min after one failed redrive) and the lease
		after := idemproc.Start(t, idemproc.Options{Addr: srv.DSN, Lease: lease, ClockOffset: later, Runs: runsFile})
		sb.set(after.URL)
		if rep, err := r.RedriveAt(ctx, now.Add(later)); err != nil || rep != (deadletter.Report{Claimed: 1, Done: 1}) {
			t.Fatalf("redrive after the lease: %+v, %v; want it done", rep, err)
		}
		redrive := rec.outcomes()[len(rec.outcomes())-1]
		runs := idemproc.Runs(t, runsFile)
		if len(runs) != 1 || !strings.HasSuffix(runs[0], fmt.Sprintf("_%d", after.Pid)) {
			t.Fatalf("the handler ran %v, want once, in process %d", runs, after.Pid)
		}
		if redrive.status != http.StatusCreated || redrive.replayed != "" || redrive.key != l.Key {
			t.Fatalf("the redrive after the lease got %v with key %q, want 201 from a run under key %s", redrive, redrive.key, l.Key)
		}
		if _, err := letters.Get(ctx, l.ID); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("the letter after its redrive: %v, want it deleted", err)
		}
		if rep, err := r.RedriveAt(ctx, now.Add(later+time.Hour)); err != nil || rep != (deadletter.Report{}) {
			t.Fatalf("a later pass: %+v, %v; want nothing claimed", rep, err)
		}
	})
}
