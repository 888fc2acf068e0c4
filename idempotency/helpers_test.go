package idempotency_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// clock is a stepped clock for Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Step(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// charges is a payment handler that counts its runs.
type charges struct {
	runs   atomic.Int64
	status int // 0: 201
}

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Charge", "ch_"+string(rune('0'+n)))
	status := c.status
	if status == 0 {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
	io.WriteString(w, `{"charge":`+string(rune('0'+n))+`,"request":`+string(body)+`}`)
}

func newMiddleware(t *testing.T, c idempotency.Config) *idempotency.Middleware {
	t.Helper()
	if c.ErrorLog == nil {
		c.ErrorLog = discardLog()
	}
	m, err := idempotency.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func post(h http.Handler, method, target, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func problem(t *testing.T, w *httptest.ResponseRecorder) idempotency.Problem {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != idempotency.ProblemContentType {
		t.Fatalf("Content-Type %q, want %q (body %s)", ct, idempotency.ProblemContentType, w.Body)
	}
	var p idempotency.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %s: %v", w.Body, err)
	}
	if p.Status != w.Code || p.Type != "about:blank" || p.Title != http.StatusText(w.Code) || p.Detail == "" {
		t.Fatalf("problem %+v does not match status %d", p, w.Code)
	}
	return p
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// fingerprintOf finds the fingerprint the middleware computes for a request,
// from the record it leaves in a store.
func fingerprintOf(t *testing.T, r *http.Request, body string) idempotency.Fingerprint {
	t.Helper()
	store, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	m := newMiddleware(t, idempotency.Config{Store: store})
	r2 := httptest.NewRequest(r.Method, r.URL.String(), strings.NewReader(body))
	r2.Header.Set("Idempotency-Key", "probe")
	m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(httptest.NewRecorder(), r2)
	rec, ok, _ := store.Get(context.Background(), idempotency.ID{Key: "probe"}, time.Now())
	if !ok {
		t.Fatal("no record")
	}
	return rec.Fingerprint
}
