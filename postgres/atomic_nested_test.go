package postgres_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestAtomicNested: one Atomic around the whole server (keys optional) and
// the same Atomic's Require around one route. The inner layer meets the
// key its outer layer holds: it must run the route's handler in the outer
// layer's transaction, not answer 409 in_progress (the outer transaction
// holds the key's lock), which the outer layer would commit as the
// request's record and replay to every retry, the charge never made.
func TestAtomicNested(t *testing.T) {
	_, pool := start(t)
	if _, err := pool.Exec(context.Background(), chargesTable); err != nil {
		t.Fatal(err)
	}
	a := newAtomic(t, pool, idempotency.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", a.Require(http.HandlerFunc(charge)))
	srv := httptest.NewServer(a.Handler(mux))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()

	first := post(t, srv.URL+"/charges", "nested-1", `{"amount":1}`)
	if first.status != http.StatusCreated || charges(t, pool, "nested-1") != 1 {
		t.Fatalf("first: %v, %d charges; want 201 and 1 charge", first, charges(t, pool, "nested-1"))
	}
	again := post(t, srv.URL+"/charges", "nested-1", `{"amount":1}`)
	if again.status != http.StatusCreated || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %v replayed %q; want the replay of %v", again, again.header.Get("Idempotent-Replayed"), first)
	}
	if none := post(t, srv.URL+"/charges", "", `{"amount":1}`); none.status != http.StatusBadRequest || none.reason() != idempotency.ReasonKeyMissing {
		t.Errorf("no key: %v; want 400 key_missing from the inner layer", none)
	}
	if n := charges(t, pool, "nested-1"); n != 1 {
		t.Errorf("%d charges under the key, want 1", n)
	}
}
