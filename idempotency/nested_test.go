package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// TestNestedOtherKey: a handler that holds its key sends a request of its
// own, with another key, through the same middleware, on its context (a
// fee charged beside the payment): that request is the middleware's to
// record, not passed through as the outer request's.
func TestNestedOtherKey(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	fees := &charges{}
	mux := http.NewServeMux()
	mux.Handle("POST /fees", m.Require(fees))
	mux.Handle("POST /charges", m.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := httptest.NewRequestWithContext(r.Context(), "POST", "/fees", strings.NewReader(`{"fee":1}`))
		sub.Header.Set("Idempotency-Key", "fee-"+r.Header.Get("Idempotency-Key"))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, sub)
		w.WriteHeader(rec.Code)
	})))
	for range 2 {
		if w := post(mux, "POST", "/charges", "k", "{}"); w.Code != http.StatusCreated {
			t.Fatalf("charge: %d %s", w.Code, w.Body)
		}
	}
	rec, ok, err := m.Store().Get(context.Background(), idempotency.ID{Key: "fee-k"}, time.Now())
	if err != nil || !ok || rec.State != idempotency.Completed || fees.runs.Load() != 1 {
		t.Errorf("the fee's record: %v %v %+v, fee runs %d; want its own completed record and 1 run", ok, err, rec.State, fees.runs.Load())
	}
}
