package idempotency_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retrytest"
)

func TestBadKeys(t *testing.T) {
	var rec retrytest.Recorder
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Observer: &rec})
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"empty", []string{""}, "empty"},
		{"empty quoted", []string{`""`}, "empty"},
		{"too long", []string{strings.Repeat("x", 256)}, "256 bytes"},
		{"not ASCII", []string{"clé"}, "not printable ASCII"},
		{"control character", []string{"a\x01b"}, "not printable ASCII"},
		{"unterminated quote", []string{`"abc`}, "unterminated"},
		{"parameters", []string{`"abc";v=1`}, "parameters"},
		{"two fields", []string{"a", "b"}, "2 fields"},
		{"two fields joined by a proxy", []string{"a, b"}, "two keys joined"},
		{"two quoted fields joined", []string{`"a", "b"`}, "after the closing quote"},
	} {
		r := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
		r.Header["Idempotency-Key"] = tc.values
		w := httptest.NewRecorder()
		m.Handler(h).ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Fatalf("%s: %d, want 400", tc.name, w.Code)
		}
		if p := problem(t, w); p.Reason != idempotency.ReasonKeyMalformed || !strings.Contains(p.Detail, tc.want) || !strings.Contains(p.Detail, "printable ASCII") {
			t.Fatalf("%s: problem %+v, want reason key_malformed and a detail saying %q and what is accepted", tc.name, p, tc.want)
		}
	}
	if h.runs.Load() != 0 {
		t.Fatalf("handler ran %d times for malformed keys", h.runs.Load())
	}
	if ev := rec.Events(event.Conflict); len(ev) != 10 || ev[0].Status != 400 || ev[0].Reason != "key_malformed" {
		t.Fatalf("conflict events %+v", ev)
	}
}

func TestRequiredKey(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{})
	// Optional: a request without a key is executed every time.
	for i := 0; i < 2; i++ {
		if w := post(m.Handler(h), "POST", "/x", "", "{}"); w.Code != 201 {
			t.Fatalf("no key, optional: %d", w.Code)
		}
	}
	if h.runs.Load() != 2 {
		t.Fatalf("runs %d, want 2", h.runs.Load())
	}
	w := post(m.Require(h), "POST", "/pay", "", "{}")
	if w.Code != http.StatusBadRequest {
		t.Fatalf("no key, required: %d, want 400", w.Code)
	}
	if p := problem(t, w); p.Reason != idempotency.ReasonKeyMissing || !strings.Contains(p.Detail, "requires an Idempotency-Key") {
		t.Fatalf("problem %+v", p)
	}
	// Methods the middleware does not cover pass through, key or not.
	if w := post(m.Require(h), "GET", "/pay", "", ""); w.Code != 201 {
		t.Fatalf("GET without key: %d", w.Code)
	}
	if w := post(m.Require(h), "PUT", "/pay", "not a \x01 key", ""); w.Code != 201 {
		t.Fatalf("PUT with a malformed key: %d", w.Code)
	}
	m2 := newMiddleware(t, idempotency.Config{Require: true, Methods: []string{"PUT"}})
	if w := post(m2.Handler(h), "PUT", "/x", "", ""); w.Code != 400 {
		t.Fatalf("Config.Require with PUT: %d, want 400", w.Code)
	}
	if w := post(m2.Handler(h), "POST", "/x", "", ""); w.Code != 201 {
		t.Fatalf("POST not covered: %d, want 201", w.Code)
	}
}

func TestLargeResponse(t *testing.T) {
	big := strings.Repeat("x", 2048)
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, big[:1024])
		w.Write([]byte(big[1024:]))
	})
	m := newMiddleware(t, idempotency.Config{MaxResponseBytes: 1024})
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || w.Body.String() != big {
		t.Fatalf("first: %d, %d bytes; want 201 and the whole body", w.Code, w.Body.Len())
	}
	w := post(m.Handler(h), "POST", "/x", "k", "{}")
	if w.Code != http.StatusGone || runs.Load() != 1 {
		t.Fatalf("retry after a too large response: %d, runs %d; want 410 without running", w.Code, runs.Load())
	}
	if p := problem(t, w); p.Reason != idempotency.ReasonResponseTooLarge || p.OriginalStatus != 201 || !strings.Contains(p.Detail, "2048 bytes") {
		t.Fatalf("problem %+v", p)
	}
	// ReleaseTooLarge: the retry runs the handler again.
	m = newMiddleware(t, idempotency.Config{MaxResponseBytes: 1024, ReleaseTooLarge: true})
	post(m.Handler(h), "POST", "/x", "k", "{}")
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || runs.Load() != 3 {
		t.Fatalf("ReleaseTooLarge: %d, runs %d; want 201 and 3 runs", w.Code, runs.Load())
	}
	// Exactly at the limit is kept.
	m = newMiddleware(t, idempotency.Config{MaxResponseBytes: 2048})
	post(m.Handler(h), "POST", "/x", "k", "{}")
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || w.Body.String() != big || runs.Load() != 4 {
		t.Fatalf("at the limit: %d, runs %d", w.Code, runs.Load())
	}
}

func TestLargeRequest(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{MaxRequestBytes: 10})
	if w := post(m.Handler(h), "POST", "/x", "k", "0123456789"); w.Code != 201 {
		t.Fatalf("10 bytes: %d", w.Code)
	}
	w := post(m.Handler(h), "POST", "/x", "k2", "0123456789a")
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("11 bytes: %d, want 413", w.Code)
	}
	if p := problem(t, w); p.Reason != idempotency.ReasonBodyTooLarge || !strings.Contains(p.Detail, "10 bytes") {
		t.Fatalf("problem %+v", p)
	}
	// Unknown length (chunked): refused once the limit is passed.
	r := httptest.NewRequest("POST", "/x", io.MultiReader(strings.NewReader("01234"), strings.NewReader("567890")))
	r.ContentLength = -1
	r.Header.Set("Idempotency-Key", "k3")
	w = httptest.NewRecorder()
	m.Handler(h).ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || h.runs.Load() != 1 {
		t.Fatalf("chunked 11 bytes: %d, runs %d; want 413, 1 run", w.Code, h.runs.Load())
	}
	// The key of a refused request stays free.
	if w := post(m.Handler(h), "POST", "/x", "k2", "small"); w.Code != 201 {
		t.Fatalf("key of a refused request: %d", w.Code)
	}
}

func TestUnreadableBody(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	r := httptest.NewRequest("POST", "/x", io.MultiReader(strings.NewReader("ab"), errReader{}))
	r.Header.Set("Idempotency-Key", "k")
	w := httptest.NewRecorder()
	m.Handler(&charges{}).ServeHTTP(w, r)
	if w.Code != 400 || problem(t, w).Reason != idempotency.ReasonBodyUnreadable {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []idempotency.Config{
		{TTL: -1}, {Lease: -1}, {Lease: time.Millisecond}, {MaxRequestBytes: -1}, {MaxResponseBytes: -1}, {StoreTimeout: -1},
		{Methods: []string{""}}, {Methods: []string{"PO ST"}}, {FingerprintHeaders: []string{""}},
		// A field name that no request can carry would take no part,
		// silently: a key reused with another value would be replayed.
		{FingerprintHeaders: []string{"Content Type"}}, {FingerprintHeaders: []string{"Content-Type:"}},
	} {
		if _, err := idempotency.New(c); !errors.Is(err, idempotency.ErrInvalidConfig) || !strings.Contains(err.Error(), "out of range") && !strings.Contains(err.Error(), "Methods") && !strings.Contains(err.Error(), "FingerprintHeaders") {
			t.Errorf("New(%+v) = %v, want an error naming the field", c, err)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	store, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{MaxRecords: 1})
	// The only slot is held by a request in progress: the store is full.
	if _, claimed, err := store.Begin(context.Background(), idempotency.ID{Key: "other"}, idempotency.Fingerprint{}, "t", time.Now(), time.Hour); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Store: store})
	w := post(m.Handler(h), "POST", "/x", "k", "{}")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || h.runs.Load() != 0 {
		t.Fatalf("full store: %d Retry-After %q runs %d; want 503, Retry-After 1, handler not run", w.Code, w.Header().Get("Retry-After"), h.runs.Load())
	}
	if p := problem(t, w); p.Reason != idempotency.ReasonStoreUnavailable || !strings.Contains(p.Detail, "not executed") {
		t.Fatalf("problem %+v", p)
	}
}

// TestScopeNotText: a scope that no store can keep (PostgreSQL's text
// refuses invalid UTF-8 and NUL), or that would forge lines in the
// stores' error logs (a line break in a principal a client chose), is the
// request's fault, and retrying cannot help: 400, not the store's 503;
// the store is not asked.
func TestScopeNotText(t *testing.T) {
	for _, scope := range []string{"caf\xe9", "a\x00b", "alice\nlevel=ERROR msg=forged", "a\rb", "a\u0085b"} {
		h := &charges{}
		m := newMiddleware(t, idempotency.Config{Scope: func(*http.Request) string { return scope }})
		w := post(m.Handler(h), "POST", "/x", "k", "{}")
		if w.Code != http.StatusBadRequest || h.runs.Load() != 0 {
			t.Fatalf("scope %q: %d, runs %d; want 400 and the handler not run", scope, w.Code, h.runs.Load())
		}
		if p := problem(t, w); p.Reason != idempotency.ReasonScopeMalformed || !strings.Contains(p.Detail, "UTF-8") {
			t.Fatalf("scope %q: problem %+v, want reason scope_malformed saying what is accepted", scope, p)
		}
		if n := m.Store().(*idempotency.MemoryStore).Len(); n != 0 {
			t.Fatalf("scope %q: %d records in the store, want none", scope, n)
		}
	}
}

// TestConfigMethodCase: HTTP methods are case-sensitive and net/http keeps
// them as sent, so Methods {"post"} would cover no POST, and every keyed
// POST would run its handler again, silently. New refuses a standard
// method in another case and names the one meant.
func TestConfigMethodCase(t *testing.T) {
	for _, m := range []string{"post", "Patch", "put"} {
		_, err := idempotency.New(idempotency.Config{Methods: []string{"GET", m}})
		if !errors.Is(err, idempotency.ErrInvalidConfig) || !strings.Contains(err.Error(), "Methods[1]") || !strings.Contains(err.Error(), strings.ToUpper(m)) {
			t.Errorf("Methods {GET, %q}: %v; want ErrInvalidConfig naming Methods[1] and %s", m, err, strings.ToUpper(m))
		}
	}
	if _, err := idempotency.New(idempotency.Config{Methods: []string{"POST", "PURGE", "x-custom"}}); err != nil {
		t.Errorf("standard and custom methods: %v", err)
	}
}
