package idempotencytest

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
)

// replayOverHTTP checks, through the middleware over store behind a real
// HTTP server on loopback, that a retry gets what the first request got:
// the status, every field the handler set (several values in their order,
// a name not in canonical form, none sniffed where the first answer had no
// Content-Type), the body byte for byte (every byte value), the trailers;
// never the Set-Cookie; and a body compressed for the first request
// decoded for a retry that does not accept gzip. The record goes through
// the store's encoding, so a store that loses a field, a value, their
// order or a byte shows here.
func replayOverHTTP(t *testing.T, store idempotency.Store) {
	binary := make([]byte, 0, 3*256)
	for range 3 {
		for b := range 256 {
			binary = append(binary, byte(b))
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(binary)
	zw.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Add("Link", "</b>; rel=b")
		w.Header().Add("Link", "</a>; rel=a")
		w.Header()["x-lower"] = []string{"2", "1"}
		w.Header().Set("X-Empty", "")
		w.Header().Set("Set-Cookie", "session=first")
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(http.StatusCreated)
		w.Write(binary)
		w.Header().Set("X-Sum", "768")
	})
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // before any byte: net/http sends no Content-Type
		io.WriteString(w, "<html><p>streamed</p></html>")
	})
	mux.HandleFunc("POST /gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Vary", "Accept-Encoding")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Write(binary)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	})
	m, err := idempotency.New(idempotency.Config{Store: store, ErrorLog: log.New(testWriter{t}, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(mux))
	tr := &http.Transport{DisableCompression: true}
	defer func() {
		tr.CloseIdleConnections()
		srv.Close()
	}()
	type answer struct {
		resp *http.Response
		body []byte
	}
	send := func(path, key, acceptEncoding string) answer {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"n":1}`))
		r.Header.Set(header.IdempotencyKey, key)
		if acceptEncoding != "" {
			r.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := tr.RoundTrip(r)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST %s: read the body: %v", path, err)
		}
		return answer{resp, body}
	}
	// same reports how the retry's answer differs from the first one's.
	same := func(path string, first, again answer) {
		t.Helper()
		if again.resp.Header.Get(header.IdempotentReplayed) != "true" {
			t.Errorf("%s: the retry got %d without %s: true, want the replay", path, again.resp.StatusCode, header.IdempotentReplayed)
		}
		if again.resp.StatusCode != first.resp.StatusCode || !bytes.Equal(again.body, first.body) {
			t.Errorf("%s: the retry got %d and %d bytes, the first %d and %d bytes; want the same status and body",
				path, again.resp.StatusCode, len(again.body), first.resp.StatusCode, len(first.body))
		}
		for _, h := range []http.Header{first.resp.Header, again.resp.Header} {
			for k := range h {
				if k == "Date" || k == header.IdempotentReplayed || k == "Content-Length" || k == "Set-Cookie" {
					continue
				}
				if !slices.Equal(first.resp.Header[k], again.resp.Header[k]) {
					t.Errorf("%s: field %s: the retry got %q, the first %q", path, k, again.resp.Header[k], first.resp.Header[k])
				}
			}
		}
		if g, w := again.resp.Trailer, first.resp.Trailer; len(g) != len(w) || g.Get("X-Sum") != w.Get("X-Sum") {
			t.Errorf("%s: trailers: the retry got %v, the first %v", path, g, w)
		}
		if c := again.resp.Header.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("%s: the retry got Set-Cookie %q: a cookie is never replayed", path, c)
		}
	}
	run := rand.Text()
	for _, path := range []string{"/binary", "/stream"} {
		first := send(path, path+run, "")
		same(path, first, send(path, path+run, ""))
	}
	// The first request accepts gzip, the retry does not: it gets what a
	// request without gzip gets from the handler.
	first := send("/gzip", "gzip"+run, "gzip")
	if first.resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(first.body, gz.Bytes()) {
		t.Fatalf("/gzip: the first request got %q and %d bytes, want gzip and %d", first.resp.Header.Get("Content-Encoding"), len(first.body), gz.Len())
	}
	again := send("/gzip", "gzip"+run, "")
	if !bytes.Equal(again.body, binary) || again.resp.Header.Get("Content-Encoding") != "" || again.resp.Header.Get(header.IdempotentReplayed) != "true" {
		t.Errorf("/gzip: the retry without gzip got %q and %d bytes (replayed %q), want the %d bytes decoded",
			again.resp.Header.Get("Content-Encoding"), len(again.body), again.resp.Header.Get(header.IdempotentReplayed), len(binary))
	}
}
