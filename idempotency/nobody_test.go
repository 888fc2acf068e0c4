package idempotency_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackNoBodyStatusReplayed: a handler that answers 204 or 304, or
// a HEAD request, and writes a body anyway (a shared helper that always
// writes one): net/http refuses the write (ErrBodyNotAllowed) or drops it,
// and the client gets the status without a body. The record kept those
// bytes as if they had been sent, so a body over MaxResponseBytes turned
// the retry's answer into 410 response_too_large instead of the replay of
// the 204 the first request got. The record now holds no body for them.
func TestLoopbackNoBodyStatusReplayed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		status int
	}{
		{"204", "POST", http.StatusNoContent},
		{"304", "POST", http.StatusNotModified},
		{"HEAD 200", "HEAD", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := newMiddleware(t, idempotency.Config{Methods: []string{"POST", "HEAD"}, MaxResponseBytes: 10})
			srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("ETag", `"v1"`)
				w.WriteHeader(tc.status)
				io.WriteString(w, strings.Repeat("a body that goes nowhere ", 4))
			})))
			first, fb := send(request(t, srv, tc.method, "/c", "k", ""))
			again, ab := send(request(t, srv, tc.method, "/c", "k", ""))
			if first.StatusCode != tc.status || len(fb) != 0 {
				t.Fatalf("first: %d %q, want %d without a body", first.StatusCode, fb, tc.status)
			}
			if again.StatusCode != tc.status || !replayed(again) || len(ab) != 0 || again.Header.Get("ETag") != `"v1"` || runs.Load() != 1 {
				t.Errorf("retry: %d replayed %v %q ETag %q, runs %d; want the replay of %d without a body, one run",
					again.StatusCode, replayed(again), ab, again.Header.Get("ETag"), runs.Load(), tc.status)
			}
			rec, _, _ := m.Store().Get(t.Context(), idempotency.ID{Key: "k"}, time.Now())
			if len(rec.Response.Body) != 0 || rec.Response.Size != 0 || rec.Response.Omitted {
				t.Errorf("record: body %q, size %d, omitted %v; want no body (none was sent)", rec.Response.Body, rec.Response.Size, rec.Response.Omitted)
			}
		})
	}
}

// TestLoopbackNoBodyStatusLengthHTTP2: the replay of a 204 or a 304 over
// HTTP/2 carried "Content-Length: 0", which the first answer had not
// (RFC 9110 §8.6: never in a 204; in a 304 only the length a 200 would
// have): the replay set the stored body's length on every status, and
// net/http's HTTP/2 server, unlike its HTTP/1 one, sends it as it is. Now
// a replay of those statuses sets none.
func TestLoopbackNoBodyStatusLengthHTTP2(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	srv := httptest.NewUnstartedServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(status)
	})))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	client := srv.Client()
	t.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
	})
	for _, status := range []int{http.StatusNoContent, http.StatusNotModified} {
		var got [2]*http.Response
		for i := range got {
			r, _ := http.NewRequest("POST", srv.URL+"/"+strconv.Itoa(status), strings.NewReader("{}"))
			r.Header.Set("Idempotency-Key", "k"+strconv.Itoa(status))
			resp, err := client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got[i] = resp
		}
		first, again := got[0], got[1]
		if first.ProtoMajor != 2 || again.StatusCode != status || !replayed(again) {
			t.Fatalf("%d: %s, replay %d %v; want HTTP/2 and the replay", status, first.Proto, again.StatusCode, replayed(again))
		}
		if g, w := again.Header.Values("Content-Length"), first.Header.Values("Content-Length"); len(g) != len(w) {
			t.Errorf("%d: replay Content-Length %q, first %q", status, g, w)
		}
	}
}

// TestLoopbackHeadLength: a handler shared by GET and HEAD writes its body
// for a HEAD request too: net/http drops it and, when it fits its buffer
// (2048 bytes) and the handler set no Content-Length, announces its
// length, as for the GET. The replay announced none. Now the record keeps
// the length net/http announced, and none when it announced none (a body
// over the buffer, or flushed).
func TestLoopbackHeadLength(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{Methods: []string{"HEAD", "POST"}})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("x", n))
		if r.URL.Query().Has("flush") {
			w.(http.Flusher).Flush()
		}
	})))
	for _, target := range []string{"/?n=0", "/?n=230", "/?n=2048", "/?n=2049", "/?n=100&flush"} {
		first, _ := send(request(t, srv, "HEAD", target, "k"+target, ""))
		again, _ := send(request(t, srv, "HEAD", target, "k"+target, ""))
		if !replayed(again) || again.StatusCode != first.StatusCode {
			t.Fatalf("%s: replay %v %d, first %d", target, replayed(again), again.StatusCode, first.StatusCode)
		}
		if g, w := again.Header.Values("Content-Length"), first.Header.Values("Content-Length"); strings.Join(g, ",") != strings.Join(w, ",") || again.ContentLength != first.ContentLength {
			t.Errorf("%s: replay Content-Length %q (%d), first %q (%d)", target, g, again.ContentLength, w, first.ContentLength)
		}
	}
}
