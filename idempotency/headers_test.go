package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// outer stands for middleware outside the idempotency layer: it sets, for
// each request, a request id, a CORS header and a session cookie on the
// response header before the inner handlers run.
func outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		h.Set("Vary", "Origin")
		h.Add("Set-Cookie", "outer="+r.Header.Get("X-Request-Id"))
		next.ServeHTTP(w, r)
	})
}

// TestReplayHeaders: the record keeps only the header fields the handler
// set, never Set-Cookie; a replay carries the handler's fields and the
// current request's own outer fields, not the first request's.
func TestReplayHeaders(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	runs := 0
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/charges/ch_1")
		w.Header().Add("Set-Cookie", "session=alice-secret")
		w.Header().Add("Vary", "Accept") // the handler adds to an outer field
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ch_1"}`))
	})
	h := outer(m.Handler(inner))
	send := func(reqID, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/charges", strings.NewReader("{}"))
		r.Header.Set("Idempotency-Key", "k")
		r.Header.Set("X-Request-Id", reqID)
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	first := send("req-1", "https://a.example")
	if first.Code != 201 || len(first.Header().Values("Set-Cookie")) != 2 {
		t.Fatalf("first: %d %v; want 201 with both cookies (the first response is the handler's own)", first.Code, first.Header())
	}
	second := send("req-2", "https://b.example")
	got := second.Header()
	if runs != 1 || second.Code != 201 || got.Get("Idempotent-Replayed") != "true" || second.Body.String() != `{"id":"ch_1"}` {
		t.Fatalf("second: %d %v %s, runs %d; want the replay", second.Code, got, second.Body, runs)
	}
	for _, c := range got.Values("Set-Cookie") {
		if strings.Contains(c, "alice-secret") || strings.Contains(c, "req-1") {
			t.Errorf("the replay carries the first request's cookie %q", c)
		}
	}
	if c := got.Values("Set-Cookie"); len(c) != 1 || c[0] != "outer=req-2" {
		t.Errorf("replay Set-Cookie %q, want only this request's own outer cookie", c)
	}
	if got.Get("X-Request-Id") != "req-2" || got.Get("Access-Control-Allow-Origin") != "https://b.example" {
		t.Errorf("replay X-Request-Id %q, Access-Control-Allow-Origin %q; want this request's (req-2, https://b.example)",
			got.Get("X-Request-Id"), got.Get("Access-Control-Allow-Origin"))
	}
	if got.Get("Content-Type") != "application/json" || got.Get("Location") != "/charges/ch_1" {
		t.Errorf("replay lost the handler's fields: %v", got)
	}
	if v := got.Values("Vary"); len(v) != 2 || v[0] != "Origin" || v[1] != "Accept" {
		t.Errorf("replay Vary %q, want the field as the handler left it (Origin, Accept)", v)
	}
}
