package idempotency_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackReplayContentCoding: a handler that compresses its answer
// when the request accepts it (Accept-Encoding: gzip, as most servers
// do), and a retry from a client that does not (a curl without
// --compressed, a Go client with DisableCompression, a redrive through
// another client): the retry got the gzip bytes of the first answer,
// with Content-Encoding: gzip, which it had not asked for and cannot
// read. Now a replay whose content coding (gzip, x-gzip, deflate) the
// retry does not accept is decoded: the body the handler compressed,
// without Content-Encoding, its Content-Length that of the decoded body,
// a strong ETag made weak (it named the compressed bytes); a retry that
// accepts the coding gets the stored bytes as they are.
func TestLoopbackReplayContentCoding(t *testing.T) {
	plain := strings.Repeat("a compressible answer, ", 40)
	for _, coding := range []string{"gzip", "x-gzip", "deflate"} {
		var encoded bytes.Buffer
		var zw io.WriteCloser = gzip.NewWriter(&encoded)
		if coding == "deflate" {
			zw = zlib.NewWriter(&encoded)
		}
		io.WriteString(zw, plain)
		zw.Close()
		var runs atomic.Int64
		m := newMiddleware(t, idempotency.Config{})
		srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Vary", "Accept-Encoding")
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Encoding", coding)
			w.WriteHeader(http.StatusCreated)
			w.Write(encoded.Bytes())
		})))
		first := request(t, srv, "POST", "/c", "k", "{}")
		first.Header.Set("Accept-Encoding", coding)
		if resp, body := send(first); !bytes.Equal(body, encoded.Bytes()) || resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: first %d, %d bytes, want 201 and the %d encoded bytes", coding, resp.StatusCode, len(body), encoded.Len())
		}
		for _, tc := range []struct {
			accept  string // "-": no Accept-Encoding field
			decoded bool
		}{
			{"-", true},
			{"identity", true},
			{coding + ";q=0, identity", true},
			{coding + ";q=0, *", true},
			{"br, zstd", true},
			{strings.ToUpper(coding), false},
			{"br;q=1.0, " + coding + ";q=0.5", false},
			{"*", false},
			{"identity, *;q=0.1", false},
		} {
			r := request(t, srv, "POST", "/c", "k", "{}")
			if tc.accept != "-" {
				r.Header.Set("Accept-Encoding", tc.accept)
			}
			resp, body := send(r)
			want, wantCE, wantETag := encoded.Bytes(), coding, `"v1"`
			if tc.decoded {
				want, wantCE, wantETag = []byte(plain), "", `W/"v1"`
			}
			if !replayed(resp) || resp.StatusCode != http.StatusCreated || !bytes.Equal(body, want) ||
				resp.Header.Get("Content-Encoding") != wantCE || resp.ContentLength != int64(len(want)) ||
				resp.Header.Get("ETag") != wantETag || resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s stored, Accept-Encoding %q: replayed %v %d, %d bytes (%.20q), Content-Encoding %q, Content-Length %d, ETag %q, Vary %q; want %d bytes, Content-Encoding %q, ETag %q",
					coding, tc.accept, replayed(resp), resp.StatusCode, len(body), body, resp.Header.Get("Content-Encoding"), resp.ContentLength,
					resp.Header.Get("ETag"), resp.Header.Get("Vary"), len(want), wantCE, wantETag)
			}
		}
		if runs.Load() != 1 {
			t.Errorf("%s: runs %d, want 1", coding, runs.Load())
		}
	}
}

// TestLoopbackReplayDecodedTrailers: a digest the handler sent as a
// trailer describes the compressed bytes: a decoded replay leaves it out,
// a replay that keeps the coding keeps it.
func TestLoopbackReplayDecodedTrailers(t *testing.T) {
	var encoded bytes.Buffer
	zw := gzip.NewWriter(&encoded)
	io.WriteString(zw, "hello, trailers")
	zw.Close()
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Content-Digest, X-Rows")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(encoded.Bytes())
		w.Header().Set("Content-Digest", "sha-256=:AAAA:")
		w.Header().Set("X-Rows", "3")
	})))
	gz := request(t, srv, "POST", "/t", "k", "{}")
	gz.Header.Set("Accept-Encoding", "gzip")
	send(gz)
	plain, body := send(request(t, srv, "POST", "/t", "k", "{}"))
	if !replayed(plain) || string(body) != "hello, trailers" || plain.Trailer.Get("Content-Digest") != "" || plain.Trailer.Get("X-Rows") != "3" {
		t.Errorf("decoded replay: %v %q, trailers %v; want the decoded body, X-Rows and no Content-Digest", replayed(plain), body, plain.Trailer)
	}
	gz = request(t, srv, "POST", "/t", "k", "{}")
	gz.Header.Set("Accept-Encoding", "gzip")
	again, body := send(gz)
	if !replayed(again) || !bytes.Equal(body, encoded.Bytes()) || again.Trailer.Get("Content-Digest") != "sha-256=:AAAA:" {
		t.Errorf("gzip replay: %v, %d bytes, trailers %v; want the stored bytes and their digest", replayed(again), len(body), again.Trailer)
	}
}

// TestReplayDecodedLargestLimit: with MaxResponseBytes at its largest, the
// bound on the decoded body (32 times it) overflowed to a negative number
// and the replay sent the gzip bytes to a retry that does not accept gzip.
func TestReplayDecodedLargestLimit(t *testing.T) {
	var encoded bytes.Buffer
	zw := gzip.NewWriter(&encoded)
	io.WriteString(zw, "hello")
	zw.Close()
	m := newMiddleware(t, idempotency.Config{MaxResponseBytes: math.MaxInt})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(encoded.Bytes())
	}))
	post(h, "POST", "/x", "k", "{}")
	if w := post(h, "POST", "/x", "k", "{}"); w.Body.String() != "hello" || w.Header().Get("Content-Encoding") != "" {
		t.Errorf("retry without gzip: %q, Content-Encoding %q; want hello decoded", w.Body, w.Header().Get("Content-Encoding"))
	}
}
