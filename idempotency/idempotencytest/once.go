package idempotencytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
)

// ExactlyOnce shows that store lets the middleware execute a request once
// under concurrency: n clients send the same POST (one key, one payload) at
// the same instant to a real HTTP server on loopback that runs the
// middleware over store, each through its own httpretry client that retries
// 409 (the answer while the first request runs) as soon as the server's
// "Retry-After: 0" allows. The handler holds the first request until it has
// seen other requests refused with 409 (or 10 s have passed), so that the
// requests truly overlap.
//
// It checks that the handler ran exactly once, that every client ended
// with the same status and body, and that the replay header is on every
// response but one.
func ExactlyOnce(t *testing.T, store idempotency.Store, n int) {
	t.Helper()
	var runs, conflicts atomic.Int64
	overlap := make(chan struct{})
	var overlapOnce sync.Once
	wantOverlap := int64(min(n/10, 50))
	observer := event.Func(func(_ context.Context, e event.Event) {
		if e.Kind == event.Conflict && e.Reason == idempotency.ReasonInProgress && conflicts.Add(1) >= wantOverlap {
			overlapOnce.Do(func() { close(overlap) })
		}
	})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		body, _ := io.ReadAll(r.Body)
		select {
		case <-overlap:
		case <-time.After(10 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%s","request":%s}`, rand.Text(), body)
	})
	m, err := idempotency.New(idempotency.Config{
		Store:      store,
		RetryAfter: -1, // "Retry-After: 0": retry at once, the test waits for nothing
		Observer:   observer,
		ErrorLog:   log.New(testWriter{t}, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(handler))
	defer srv.Close()
	key := "once-" + rand.Text()
	payload := []byte(`{"amount":1000,"currency":"eur"}`)
	results := idemproc.SendAtOnce(n, func(int) string { return srv.URL + "/charges" }, key, payload,
		func(h http.Header) { h.Set("Content-Type", "application/json") })

	if got := runs.Load(); got != 1 {
		t.Errorf("the handler ran %d times for %d concurrent requests with one key, want exactly 1", got, n)
	}
	first := results[0]
	plain := 0
	for i, r := range results {
		switch {
		case r.Err != nil:
			t.Fatalf("client %d: %v", i, r.Err)
		case r.Status != http.StatusCreated || r.Body != first.Body:
			t.Fatalf("client %d ended with %d %s, client 0 with %d %s: want the same status and body for all", i, r.Status, r.Body, first.Status, first.Body)
		case r.Replayed == "":
			plain++
		case r.Replayed != "true":
			t.Fatalf("client %d: %s: %q", i, header.IdempotentReplayed, r.Replayed)
		}
	}
	if plain != 1 {
		t.Errorf("%d responses without %s: true, want exactly 1 (the first execution)", plain, header.IdempotentReplayed)
	}
	t.Logf("%d clients, 1 execution, %d replays, %d answers 409 while the first ran", n, n-plain, conflicts.Load())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
