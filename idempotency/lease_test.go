package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

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
			time.Sleep(2 * time.Second) // virtual time: this runs in a synctest bubble
			if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != http.StatusConflict {
				t.Fatalf("at %v into a 1 min handler with a 3 s lease: %d, want 409", time.Duration(i+1)*2*time.Second, w.Code)
			}
		}
		if code := <-done; code != 201 {
			t.Fatal(code)
		}
		if w := post(m.Handler(h), "POST", "/x", "k", "{}"); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after: %d", w.Code)
		}
	})
}
