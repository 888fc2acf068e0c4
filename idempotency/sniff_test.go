package idempotency_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackReplaySniffedContentType: a handler that sets no
// Content-Type leaves it to net/http, which sniffs the bytes it sends
// first. When the handler flushes before its first 512 bytes, those are
// fewer than the replay's whole body: nothing at all (no Content-Type was
// sent), or a few bytes that sniff otherwise. The replay sniffed its
// whole body instead and gave the retry another Content-Type than the
// first answer's (text/html for none, or for text/plain). Now the record
// keeps the type net/http chose, or none.
func TestLoopbackReplaySniffedContentType(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string // a Flush after each but the last
	}{
		{"flushed before the body", []string{"", "<html><body>hi</body></html>"}},
		{"flushed after a few bytes", []string{"   ", "<html><body>hi</body></html>"}},
		{"not flushed", []string{"<html><body>hi</body></html>"}},
		{"flushed after 512 bytes", []string{strings.Repeat(" ", 600), "<html></html>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := newMiddleware(t, idempotency.Config{})
			srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				for i, p := range tc.parts {
					io.WriteString(w, p)
					if i < len(tc.parts)-1 {
						w.(http.Flusher).Flush()
					}
				}
			})))
			first, fb := send(request(t, srv, "POST", "/c", "k", "{}"))
			again, ab := send(request(t, srv, "POST", "/c", "k", "{}"))
			if !replayed(again) || runs.Load() != 1 || string(ab) != string(fb) {
				t.Fatalf("replay %v, runs %d, body %q, first %q", replayed(again), runs.Load(), ab, fb)
			}
			if g, w := again.Header.Values("Content-Type"), first.Header.Values("Content-Type"); strings.Join(g, "|") != strings.Join(w, "|") {
				t.Errorf("Content-Type: replay %q, first %q", g, w)
			}
		})
	}
}
