package idempotency_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackTrailerDeclaredLate: a handler that declares a trailer in
// Trailer after it wrote its status: net/http reads the declaration when
// the header goes out, so the client got no trailer, and a body with its
// Content-Length. The record took the declaration as it was when the
// handler returned, and the replay sent a trailer the first answer never
// had, in a chunked body. Now the declarations that count are those made
// before the status, as net/http's; a field set under http.TrailerPrefix
// at any time is still a trailer.
func TestLoopbackTrailerDeclaredLate(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Trailer", "X-Early")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "body")
		w.Header().Add("Trailer", "X-Late")
		w.Header().Set("X-Early", "e")
		w.Header().Set("X-Late", "l")
		w.Header().Set(http.TrailerPrefix+"X-Prefixed", "p")
	})))
	first, fb := send(request(t, srv, "POST", "/t", "k", "{}"))
	again, ab := send(request(t, srv, "POST", "/t", "k", "{}"))
	if first.Trailer.Get("X-Late") != "" || first.Trailer.Get("X-Early") != "e" || first.Trailer.Get("X-Prefixed") != "p" {
		t.Fatalf("first trailers %v: want X-Early and X-Prefixed only (net/http's reading)", first.Trailer)
	}
	if !replayed(again) || runs.Load() != 1 || string(ab) != string(fb) {
		t.Fatalf("replay %v, runs %d, body %q (first %q)", replayed(again), runs.Load(), ab, fb)
	}
	if len(again.Trailer) != len(first.Trailer) || again.Trailer.Get("X-Late") != "" ||
		again.Trailer.Get("X-Early") != "e" || again.Trailer.Get("X-Prefixed") != "p" {
		t.Errorf("replay trailers %v, first %v; want the same", again.Trailer, first.Trailer)
	}
}
