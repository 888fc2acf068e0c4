package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
	"github.com/yaoki-go/yaoki/retrytest"
)

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
		r.Header.Set(idempotency.HeaderKey, key)
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

func TestFirstRunsThenReplays(t *testing.T) {
	var rec retrytest.Recorder
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Observer: &rec})
	srv := m.Handler(h)

	first := post(srv, "POST", "/charges?x=1", "k1", `{"amount":1000}`)
	if first.Code != 201 || first.Header().Get(idempotency.HeaderReplayed) != "" {
		t.Fatalf("first: %d replayed %q, want 201 without the replay header", first.Code, first.Header().Get(idempotency.HeaderReplayed))
	}
	for i := 0; i < 3; i++ {
		again := post(srv, "POST", "/charges?x=1", `"k1"`, `{"amount":1000}`) // the quoted form names the same key
		if again.Code != 201 || again.Body.String() != first.Body.String() ||
			again.Header().Get("X-Charge") != "ch_1" || again.Header().Get("Content-Type") != "application/json" ||
			again.Header().Get(idempotency.HeaderReplayed) != "true" {
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
		r.Header.Set(idempotency.HeaderKey, "k")
		if tc.ctype != "" {
			r.Header.Set("Content-Type", tc.ctype)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %s, want 422", tc.name, w.Code, w.Body)
		}
		if p := problem(t, w); p.Reason != idempotency.ReasonKeyReused || !strings.Contains(p.Detail, "different request") {
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
	if w := post(srv, "POST", "/x", "k", "body"); w.Code != http.StatusCreated || w.Header().Get(idempotency.HeaderReplayed) != "true" {
		t.Fatalf("after: %d, want the replayed 201", w.Code)
	}
	if runs.Load() != 1 {
		t.Fatalf("runs %d", runs.Load())
	}
}

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
	} {
		r := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
		r.Header[idempotency.HeaderKey] = tc.values
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
	if ev := rec.Events(event.Conflict); len(ev) != 8 || ev[0].Status != 400 || ev[0].Reason != "key_malformed" {
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
		if tc.stored && (runs != 1 || second.Header().Get(idempotency.HeaderReplayed) != "true" || second.Body.String() != first.Body.String()) {
			t.Errorf("status %d should be stored: runs %d, second %v %s", tc.status, runs, second.Header(), second.Body)
		}
		if !tc.stored && (runs != 2 || second.Header().Get(idempotency.HeaderReplayed) != "") {
			t.Errorf("status %d should not be stored: runs %d, second replayed %q", tc.status, runs, second.Header().Get(idempotency.HeaderReplayed))
		}
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
	r.Header.Set(idempotency.HeaderKey, "k3")
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
	r.Header.Set(idempotency.HeaderKey, "k")
	w := httptest.NewRecorder()
	m.Handler(&charges{}).ServeHTTP(w, r)
	if w.Code != 400 || problem(t, w).Reason != idempotency.ReasonBodyUnreadable {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestScopes(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Scope: func(r *http.Request) string { return r.Header.Get("X-User") }})
	send := func(user string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/charges", strings.NewReader(`{"amount":1}`))
		r.Header.Set(idempotency.HeaderKey, "shared-key")
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		m.Handler(h).ServeHTTP(w, r)
		return w
	}
	alice := send("alice")
	mallory := send("mallory")
	if mallory.Header().Get(idempotency.HeaderReplayed) != "" || mallory.Body.String() == alice.Body.String() || h.runs.Load() != 2 {
		t.Fatalf("a second principal with the first one's key saw %s (replayed %q), want its own response", mallory.Body, mallory.Header().Get(idempotency.HeaderReplayed))
	}
	if again := send("alice"); again.Body.String() != alice.Body.String() || again.Header().Get(idempotency.HeaderReplayed) != "true" {
		t.Fatalf("alice's retry: %s", again.Body)
	}
	if again := send("mallory"); again.Body.String() != mallory.Body.String() {
		t.Fatalf("mallory's retry: %s", again.Body)
	}
}

func TestPanicReleasesKey(t *testing.T) {
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	})
	m := newMiddleware(t, idempotency.Config{})
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the handler's panic to go on", v)
			}
		}()
		post(m.Handler(h), "POST", "/x", "k", "{}")
	}()
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || runs.Load() != 2 {
		t.Fatalf("retry after a panic: %d, runs %d; want the handler to run again", w.Code, runs.Load())
	}
}

// TestLeaseOfDeadHolder: a record held by a request whose process died (it
// will never complete nor release it) blocks its key until the lease has
// passed, then the next request runs.
func TestLeaseOfDeadHolder(t *testing.T) {
	clk := newClock()
	store, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{Store: store, Now: clk.Now, Lease: 10 * time.Second})
	// What the dead process left: the fingerprint of the same request.
	r := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
	fp := fingerprintOf(t, r, "{}")
	if _, claimed, err := store.Begin(context.Background(), idempotency.ID{Key: "k"}, fp, "dead", clk.Now(), 10*time.Second); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	clk.Step(10*time.Second - time.Millisecond)
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict {
		t.Fatalf("within the lease: %d, want 409", w.Code)
	}
	clk.Step(time.Millisecond)
	if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusCreated || h.runs.Load() != 1 {
		t.Fatalf("after the lease: %d, runs %d; want the handler to run", w.Code, h.runs.Load())
	}
}

// fingerprintOf finds the fingerprint the middleware computes for a request,
// from the record it leaves in a store.
func fingerprintOf(t *testing.T, r *http.Request, body string) idempotency.Fingerprint {
	t.Helper()
	store, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	m := newMiddleware(t, idempotency.Config{Store: store})
	r2 := httptest.NewRequest(r.Method, r.URL.String(), strings.NewReader(body))
	r2.Header.Set(idempotency.HeaderKey, "probe")
	m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(httptest.NewRecorder(), r2)
	rec, ok, _ := store.Get(context.Background(), idempotency.ID{Key: "probe"}, time.Now())
	if !ok {
		t.Fatal("no record")
	}
	return rec.Fingerprint
}

// TestLeaseRenewed: a handler that runs longer than the lease keeps its key,
// because the middleware renews the lease while it runs.
func TestLeaseRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Minute) // on the bubble's clock
			w.WriteHeader(http.StatusCreated)
		})
		m := newMiddleware(t, idempotency.Config{Lease: 3 * time.Second})
		done := make(chan int)
		go func() { done <- post(m.Handler(h), "POST", "/x", "k", "{}").Code }()
		for i := 0; i < 20; i++ {
			time.Sleep(2 * time.Second)
			if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict {
				t.Fatalf("at %v into a 1 min handler with a 3 s lease: %d, want 409", time.Duration(i+1)*2*time.Second, w.Code)
			}
		}
		if code := <-done; code != 201 {
			t.Fatal(code)
		}
		if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || w.Header().Get(idempotency.HeaderReplayed) != "true" {
			t.Fatalf("after: %d", w.Code)
		}
	})
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []idempotency.Config{
		{TTL: -1}, {Lease: -1}, {Lease: time.Millisecond}, {MaxRequestBytes: -1}, {MaxResponseBytes: -1}, {StoreTimeout: -1},
		{Methods: []string{""}}, {Methods: []string{"PO ST"}}, {FingerprintHeaders: []string{""}},
	} {
		if _, err := idempotency.New(c); !errors.Is(err, idempotency.ErrInvalidConfig) || !strings.Contains(err.Error(), "out of range") && !strings.Contains(err.Error(), "Methods") && !strings.Contains(err.Error(), "FingerprintHeaders") {
			t.Errorf("New(%+v) = %v, want an error naming the field", c, err)
		}
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
