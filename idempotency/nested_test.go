package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackNested: one middleware around the whole server (keys
// optional) and the same middleware's Require around one route, as
// "Middleware.Require makes it mandatory for one route" invites. The inner
// layer meets the key its outer layer holds: it must run the route's
// handler, not answer 409 in_progress, which the outer layer would keep
// as the request's response and replay to every retry for the record's
// whole retention, the handler never running.
func TestLoopbackNested(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", m.Require(h))
	srv, send := loopback(t, m.Handler(mux))

	first, fb := send(request(t, srv, "POST", "/charges", "k", `{"amount":1}`))
	if first.StatusCode != http.StatusCreated || h.runs.Load() != 1 {
		t.Fatalf("first: %d %s, handler runs %d; want 201 and 1 run", first.StatusCode, fb, h.runs.Load())
	}
	again, ab := send(request(t, srv, "POST", "/charges", "k", `{"amount":1}`))
	if again.StatusCode != http.StatusCreated || !replayed(again) || string(ab) != string(fb) || h.runs.Load() != 1 {
		t.Errorf("retry: %d %s, replayed %v, handler runs %d; want the replay of %s", again.StatusCode, ab, replayed(again), h.runs.Load(), fb)
	}
	if other, ob := send(request(t, srv, "POST", "/charges", "k", `{"amount":2}`)); other.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("another request with the key: %d %s; want 422", other.StatusCode, ob)
	}
	if none, nb := send(request(t, srv, "POST", "/charges", "", `{"amount":1}`)); none.StatusCode != http.StatusBadRequest || h.runs.Load() != 1 {
		t.Errorf("no key: %d %s, handler runs %d; want 400 key_missing from the inner layer", none.StatusCode, nb, h.runs.Load())
	}
}
