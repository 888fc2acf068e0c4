package idempotencytest

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
)

// Scoped shows that with store, a second principal that sends the first
// one's key (and the same request) never sees the first one's response: its
// request runs the handler for itself, and each principal's retries replay
// its own response. It runs a real HTTP server on loopback whose scope is
// the X-Principal header (a stand-in for authentication).
func Scoped(t *testing.T, store idempotency.Store) {
	t.Helper()
	var runs atomic.Int64
	m, err := idempotency.New(idempotency.Config{
		Store: store,
		Scope: func(r *http.Request) string { return r.Header.Get("X-Principal") },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"secret":"%s of %s"}`, rand.Text(), r.Header.Get("X-Principal"))
	})))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	key := "shared-" + rand.Text()
	send := func(principal string) (string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"item":1}`))
		req.Header.Set(header.IdempotencyKey, key)
		req.Header.Set("X-Principal", principal)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: %d %s", principal, resp.StatusCode, b)
		}
		return string(b), resp.Header.Get(header.IdempotentReplayed)
	}
	alice, _ := send("alice")
	mallory, replayed := send("mallory")
	if mallory == alice || replayed != "" || strings.Contains(mallory, "of alice") {
		t.Fatalf("a second principal with the first one's key got %s (replayed %q); alice got %s", mallory, replayed, alice)
	}
	if again, replayed := send("alice"); again != alice || replayed != "true" {
		t.Fatalf("alice's retry: %s (replayed %q), want %s replayed", again, replayed, alice)
	}
	if again, replayed := send("mallory"); again != mallory || replayed != "true" {
		t.Fatalf("mallory's retry: %s (replayed %q), want %s replayed", again, replayed, mallory)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2 (once per principal)", n)
	}
}
