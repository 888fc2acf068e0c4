package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/retrytest"
)

func TestFirstRunsThenReplays(t *testing.T) {
	var rec retrytest.Recorder
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Observer: &rec})
	srv := m.Handler(h)

	first := post(srv, "POST", "/charges?x=1", "k1", `{"amount":1000}`)
	if first.Code != 201 || first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d replayed %q, want 201 without the replay header", first.Code, first.Header().Get("Idempotent-Replayed"))
	}
	for i := 0; i < 3; i++ {
		again := post(srv, "POST", "/charges?x=1", `"k1"`, `{"amount":1000}`) // the quoted form names the same key
		if again.Code != 201 || again.Body.String() != first.Body.String() ||
			again.Header().Get("X-Charge") != "ch_1" || again.Header().Get("Content-Type") != "application/json" ||
			again.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d: %d %v %s; want the first response (201 %s) marked as a replay", i, again.Code, again.Header(), again.Body, first.Body)
		}
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
	if ev := rec.Events(event.Replay); len(ev) != 3 || ev[0].Key != "k1" || ev[0].Status != 201 || ev[0].Component != "idempotency" {
		t.Fatalf("replay events %+v, want 3 for key k1", ev)
	}
	// Another key runs the handler again.
	if w := post(srv, "POST", "/charges?x=1", "k2", `{"amount":1000}`); w.Code != 201 || h.runs.Load() != 2 {
		t.Fatalf("new key: %d, runs %d; want 201, 2 runs", w.Code, h.runs.Load())
	}
}

func TestReuseRefused(t *testing.T) {
	var rec retrytest.Recorder
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Observer: &rec, FingerprintHeaders: []string{"content-type"}})
	srv := m.Handler(h)
	if w := post(srv, "POST", "/charges", "k", `{"amount":1000}`); w.Code != 201 {
		t.Fatal(w.Code)
	}
	for _, tc := range []struct{ name, method, target, body, ctype string }{
		{"another body", "POST", "/charges", `{"amount":9999}`, ""},
		{"another path", "POST", "/refunds", `{"amount":1000}`, ""},
		{"another query", "POST", "/charges?dry=1", `{"amount":1000}`, ""},
		{"another method", "PATCH", "/charges", `{"amount":1000}`, ""},
		{"another fingerprinted header", "POST", "/charges", `{"amount":1000}`, "text/plain"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		r.Header.Set("Idempotency-Key", "k")
		if tc.ctype != "" {
			r.Header.Set("Content-Type", tc.ctype)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %s, want 422", tc.name, w.Code, w.Body)
		}
		// The detail names everything the fingerprint covers, the header
		// fields it was told to include among them.
		if p := problem(t, w); p.Reason != idempotency.ReasonKeyReused ||
			!strings.Contains(p.Detail, `key "k" was already used for a different request (its method, target, Content-Type header or body differ)`) {
			t.Fatalf("%s: problem %+v", tc.name, p)
		}
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
	if ev := rec.Events(event.Conflict); len(ev) != 5 || ev[0].Status != 422 || ev[0].Reason != "key_reused" || ev[0].Key != "k" {
		t.Fatalf("conflict events %+v", ev)
	}
}

func TestInProgressConflict(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		close(started)
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	m := newMiddleware(t, idempotency.Config{RetryAfter: 1500 * time.Millisecond})
	srv := m.Handler(h)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post(srv, "POST", "/x", "k", "body") }()
	<-started
	w := post(srv, "POST", "/x", "k", "body")
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("while running: %d Retry-After %q, want 409 with Retry-After 2 (1.5 s rounded up)", w.Code, w.Header().Get("Retry-After"))
	}
	if p := problem(t, w); p.Reason != idempotency.ReasonInProgress {
		t.Fatalf("problem %+v", p)
	}
	// A different request with the key is a reuse even while the first runs.
	if w := post(srv, "POST", "/x", "k", "other"); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("different request while running: %d, want 422", w.Code)
	}
	close(release)
	if w := <-done; w.Code != http.StatusCreated {
		t.Fatalf("first: %d", w.Code)
	}
	if w := post(srv, "POST", "/x", "k", "body"); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after: %d, want the replayed 201", w.Code)
	}
	if runs.Load() != 1 {
		t.Fatalf("runs %d", runs.Load())
	}
}

func TestWhatIsStored(t *testing.T) {
	for _, tc := range []struct {
		status int
		keep   func(int) bool
		stored bool
	}{
		{200, nil, true}, {201, nil, true}, {303, nil, true}, {400, nil, true}, {404, nil, true}, {422, nil, true},
		{408, nil, false}, {429, nil, false}, {500, nil, false}, {502, nil, false}, {503, nil, false},
		{500, func(int) bool { return true }, true},
		{201, func(s int) bool { return s == 200 }, false},
	} {
		h := &charges{status: tc.status}
		m := newMiddleware(t, idempotency.Config{Keep: tc.keep})
		first := post(m.Handler(h), "POST", "/x", "k", "{}")
		second := post(m.Handler(h), "POST", "/x", "k", "{}")
		runs := h.runs.Load()
		if first.Code != tc.status || second.Code != tc.status {
			t.Fatalf("status %d: got %d then %d", tc.status, first.Code, second.Code)
		}
		if tc.stored && (runs != 1 || second.Header().Get("Idempotent-Replayed") != "true" || second.Body.String() != first.Body.String()) {
			t.Errorf("status %d should be stored: runs %d, second %v %s", tc.status, runs, second.Header(), second.Body)
		}
		if !tc.stored && (runs != 2 || second.Header().Get("Idempotent-Replayed") != "") {
			t.Errorf("status %d should not be stored: runs %d, second replayed %q", tc.status, runs, second.Header().Get("Idempotent-Replayed"))
		}
	}
}

func TestScopes(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Scope: func(r *http.Request) string { return r.Header.Get("X-User") }})
	send := func(user string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":1}`))
		r.Header.Set("Idempotency-Key", "shared-key")
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		m.Handler(h).ServeHTTP(w, r)
		return w
	}
	alice := send("alice")
	mallory := send("mallory")
	if mallory.Header().Get("Idempotent-Replayed") != "" || mallory.Body.String() == alice.Body.String() || h.runs.Load() != 2 {
		t.Fatalf("a second principal with the first one's key saw %s (replayed %q), want its own response", mallory.Body, mallory.Header().Get("Idempotent-Replayed"))
	}
	if again := send("alice"); again.Body.String() != alice.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("alice's retry: %s", again.Body)
	}
	if again := send("mallory"); again.Body.String() != mallory.Body.String() {
		t.Fatalf("mallory's retry: %s", again.Body)
	}
}

func TestExactlyOnceMemory(t *testing.T) {
	s, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	idempotencytest.ExactlyOnce(t, s, 500)
}

func TestScopedMemory(t *testing.T) {
	s, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	idempotencytest.Scoped(t, s)
}

// TestRecordExpires: a key is replayed for TTL, then forgotten: the same
// key may then be used again, even for another request.
func TestRecordExpires(t *testing.T) {
	clk := newClock()
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Now: clk.Now, TTL: time.Hour})
	post(m.Handler(h), "POST", "/x", "k", "{}")
	clk.Step(time.Hour - time.Millisecond)
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Header().Get("Idempotent-Replayed") != "true" || h.runs.Load() != 1 {
		t.Fatalf("within the TTL: replayed %q, runs %d", w.Header().Get("Idempotent-Replayed"), h.runs.Load())
	}
	if w := post(m.Handler(h), "POST", "/x", "k", "other"); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("another request within the TTL: %d, want 422", w.Code)
	}
	clk.Step(time.Millisecond)
	if w := post(m.Handler(h), "POST", "/x", "k", "other"); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" || h.runs.Load() != 2 {
		t.Fatalf("after the TTL: %d replayed %q runs %d, want a new run", w.Code, w.Header().Get("Idempotent-Replayed"), h.runs.Load())
	}
}
