package idempotency_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLoopbackPanic: a handler that panics (with any value, or with
// http.ErrAbortHandler) releases its key, net/http sees the panic (it logs
// it, or aborts quietly for ErrAbortHandler), and the retry runs.
func TestLoopbackPanic(t *testing.T) {
	for _, v := range []any{"boom", http.ErrAbortHandler} {
		var runs atomic.Int64
		m := newMiddleware(t, idempotency.Config{})
		srv := httptest.NewUnstartedServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				w.WriteHeader(201) // even after a part of the answer
				w.(http.Flusher).Flush()
				panic(v)
			}
			w.WriteHeader(201)
		})))
		var logs syncBuffer
		srv.Config.ErrorLog = log.New(&logs, "", 0)
		srv.Start()
		tr := &http.Transport{}
		client := &http.Client{Transport: tr}
		resp, err := client.Do(request(t, srv, "POST", "/p", "k", "{}"))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Errorf("%v: the first request ended without an error", v)
		}
		resp, err = client.Do(request(t, srv, "POST", "/p", "k", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		srv.Close()
		if resp.StatusCode != 201 || replayed(resp) || runs.Load() != 2 {
			t.Errorf("%v: retry %d replayed %v runs %d; want a second run", v, resp.StatusCode, replayed(resp), runs.Load())
		}
		if got := strings.Contains(logs.String(), "panic serving"); got != (v != http.ErrAbortHandler) {
			t.Errorf("%v: server log %q", v, logs.String())
		}
	}
}

// TestLoopbackWriteHeaderTwice and 1xx: the first final status is the
// response; an Early Hints 103 before it goes to the client and is not
// stored.
func TestLoopbackInformational(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{ErrorLog: discardLog()})
	srv := httptest.NewUnstartedServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusInternalServerError) // superfluous
		io.WriteString(w, "made")
	})))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var hints []int
	var mu sync.Mutex
	do := func() (*http.Response, string) {
		r := request(t, srv, "POST", "/i", "k", "{}")
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			mu.Lock()
			hints = append(hints, code)
			mu.Unlock()
			return nil
		}}))
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	first, fb := do()
	again, ab := do()
	if first.StatusCode != 201 || fb != "made" || again.StatusCode != 201 || ab != "made" || !replayed(again) || runs.Load() != 1 {
		t.Fatalf("first %d %q, again %d %q replayed %v, runs %d", first.StatusCode, fb, again.StatusCode, ab, replayed(again), runs.Load())
	}
	if len(hints) != 1 || hints[0] != 103 {
		t.Errorf("1xx seen %v, want one 103 (the first request's; a replay sends none)", hints)
	}
	if again.Header.Get("Link") != "</style.css>; rel=preload" {
		t.Errorf("replay Link %q", again.Header.Get("Link"))
	}
}

// TestLoopbackClientGone: the client disconnects while the handler runs. A
// handler that wrote nothing releases the key; one that answered stores it.
func TestLoopbackClientGone(t *testing.T) {
	for _, write := range []bool{false, true} {
		var runs atomic.Int64
		inHandler := make(chan struct{})
		done := make(chan struct{}, 2)
		m := newMiddleware(t, idempotency.Config{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { done <- struct{}{} }()
			if runs.Add(1) > 1 {
				w.WriteHeader(201)
				io.WriteString(w, "second")
				return
			}
			close(inHandler)
			<-r.Context().Done()
			if write {
				w.WriteHeader(201)
				io.WriteString(w, "first")
			}
		})
		// served says that the middleware is done with a request: the
		// key released or the response stored. The handler's done comes
		// before that, and a retry sent on it alone could find the key
		// still held (409, and no second run to wait for).
		served := make(chan struct{}, 2)
		srv, send := loopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() { served <- struct{}{} }()
			m.Handler(h).ServeHTTP(w, r)
		}))
		ctx, cancel := context.WithCancel(context.Background())
		r := request(t, srv, "POST", "/g", "k", "{}").WithContext(ctx)
		errc := make(chan error)
		go func() {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(r)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		<-inHandler
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("client: %v", err)
		}
		<-done
		<-served
		again, body := send(request(t, srv, "POST", "/g", "k", "{}"))
		if write {
			<-nothing(t, done)
			if !replayed(again) || string(body) != "first" || runs.Load() != 1 {
				t.Errorf("answered: retry %d %q replayed %v runs %d; want the replay", again.StatusCode, body, replayed(again), runs.Load())
			}
		} else {
			<-done
			if replayed(again) || string(body) != "second" || runs.Load() != 2 {
				t.Errorf("nothing written: retry %d %q replayed %v runs %d; want a second run", again.StatusCode, body, replayed(again), runs.Load())
			}
		}
	}
}

// nothing returns a closed channel after checking that done has nothing.
func nothing(t *testing.T, done chan struct{}) chan struct{} {
	select {
	case <-done:
		t.Error("the handler ran again")
	default:
	}
	c := make(chan struct{})
	close(c)
	return c
}

// TestLoopbackKeys: keys as a real client sends them.
func TestLoopbackKeys(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(h))
	for _, tc := range []struct {
		name   string
		set    func(http.Header)
		status int
	}{
		{"empty", func(h http.Header) { h["Idempotency-Key"] = []string{""} }, 400},
		{"long", func(h http.Header) { h.Set("Idempotency-Key", strings.Repeat("k", 256)) }, 400},
		{"longest", func(h http.Header) { h.Set("Idempotency-Key", strings.Repeat("k", 255)) }, 201},
		{"unicode", func(h http.Header) { h.Set("Idempotency-Key", "clé") }, 400},
		{"quoted", func(h http.Header) { h.Set("Idempotency-Key", `"q-1"`) }, 201},
		{"lowercase name", func(h http.Header) { h["idempotency-key"] = []string{"low"} }, 201},
		{"two fields", func(h http.Header) { h["Idempotency-Key"] = []string{"a", "b"} }, 400},
		{"X- only", func(h http.Header) { h.Set("X-Idempotency-Key", "x") }, 201},
	} {
		r := request(t, srv, "POST", "/k", "", "{}")
		tc.set(r.Header)
		resp, _ := send(r)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	// A control byte in the key: net/http's client refuses to send it, so
	// it goes raw.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "POST /k HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	conn.Close()
	if raw.StatusCode != 400 {
		t.Errorf("control byte: %d, want 400", raw.StatusCode)
	}
	// The quoted key and the bare key are one key; X-Idempotency-Key is
	// not a key: both requests without one ran.
	r := request(t, srv, "POST", "/k", "q-1", "{}")
	if resp, _ := send(r); !replayed(resp) {
		t.Errorf("bare q-1 after \"q-1\": not a replay")
	}
	r = request(t, srv, "POST", "/k", "", "{}")
	r.Header.Set("X-Idempotency-Key", "x")
	if resp, _ := send(r); replayed(resp) || h.runs.Load() != 5 {
		t.Errorf("X-Idempotency-Key alone: replayed %v runs %d", replayed(resp), h.runs.Load())
	}
	r = request(t, srv, "POST", "/k", "low", "{}")
	r.Header.Set("X-Idempotency-Key", "other")
	if resp, _ := send(r); !replayed(resp) {
		t.Errorf("Idempotency-Key low with another X-Idempotency-Key: not the replay of low")
	}
}

// TestLoopbackReplayHeaderNotShared: a layer outside the middleware that
// edits the response's header values in place (rewriting a Location) edits
// its own response, never the record: the next replay is the handler's.
func TestLoopbackReplayHeaderNotShared(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{})
	inner := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Location", "/charges/1")
		w.WriteHeader(201)
	}))
	rewrite := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(&prefixLocation{ResponseWriter: w, prefix: r.Header.Get("X-Prefix")}, r)
	})
	srv, send := loopback(t, rewrite)
	var locs []string
	for _, p := range []string{"https://a.example", "https://b.example", "https://c.example"} {
		r := request(t, srv, "POST", "/c", "k", "{}")
		r.Header.Set("X-Prefix", p)
		resp, _ := send(r)
		locs = append(locs, resp.Header.Get("Location"))
	}
	want := []string{"https://a.example/charges/1", "https://b.example/charges/1", "https://c.example/charges/1"}
	if strings.Join(locs, " ") != strings.Join(want, " ") || runs.Load() != 1 {
		t.Errorf("Locations %q, want %q (runs %d)", locs, want, runs.Load())
	}
}

// prefixLocation rewrites the Location field in place as the header is
// written.
type prefixLocation struct {
	http.ResponseWriter
	prefix string
}

func (p *prefixLocation) WriteHeader(code int) {
	if vs := p.Header()["Location"]; len(vs) > 0 {
		vs[0] = p.prefix + vs[0]
	}
	p.ResponseWriter.WriteHeader(code)
}

// TestLoopbackHijack: the connection of a keyed request cannot be hijacked
// (the middleware would not see the response written to it, and would
// store an empty 200 in its place); Hijack says so with an error matching
// ErrHijack and http.ErrNotSupported. Requests without a key pass through
// and may hijack.
func TestLoopbackHijack(t *testing.T) {
	var runs atomic.Int64
	errs := make(chan error, 2)
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		conn, bw, err := http.NewResponseController(w).Hijack()
		errs <- err
		if err != nil {
			io.WriteString(w, "answered without hijacking")
			return
		}
		defer conn.Close()
		bw.WriteString("HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\nConnection: close\r\n\r\nraw")
		bw.Flush()
	})))
	first, _ := send(request(t, srv, "POST", "/h", "k", "{}"))
	if err := <-errs; !errors.Is(err, idempotency.ErrHijack) || !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("Hijack of a keyed request: %v; want an error matching ErrHijack and http.ErrNotSupported (the first answer: %d)", err, first.StatusCode)
	}
	again, body := send(request(t, srv, "POST", "/h", "k", "{}"))
	if again.StatusCode != 200 || string(body) != "answered without hijacking" || !replayed(again) || runs.Load() != 1 {
		t.Errorf("retry %d %q replayed %v, runs %d; want the replay of the handler's answer", again.StatusCode, body, replayed(again), runs.Load())
	}
	plain, body := send(request(t, srv, "POST", "/h", "", "{}"))
	if err := <-errs; err != nil || plain.StatusCode != 202 || string(body) != "raw" {
		t.Errorf("without a key: Hijack %v, answer %d %q; want the hijacked connection's 202", err, plain.StatusCode, body)
	}
}

// TestLoopbackLogForgedPath: a request whose path holds an encoded line
// break (%0A), sent while the store is full (the only record held by a
// request in progress), makes the middleware log the failed Begin. The
// path is logged as sent, escaped: one line per failure, never a second
// line that the client wrote.
func TestLoopbackLogForgedPath(t *testing.T) {
	store, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{MaxRecords: 1})
	if _, claimed, err := store.Begin(context.Background(), idempotency.ID{Key: "other"}, idempotency.Fingerprint{}, "t", time.Now(), time.Hour); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	var logged syncBuffer
	m := newMiddleware(t, idempotency.Config{Store: store, ErrorLog: log.New(&logged, "", 0)})
	srv, send := loopback(t, m.Handler(&charges{}))
	resp, _ := send(request(t, srv, "POST", "/pay%0Aidempotency:%20forged%20line", "k", "{}"))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("full store: %d, want 503", resp.StatusCode)
	}
	lines := strings.Split(strings.TrimSuffix(logged.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "/pay%0Aidempotency:%20forged%20line") {
		t.Errorf("log %q; want one line with the path as sent (/pay%%0A...)", lines)
	}
}
