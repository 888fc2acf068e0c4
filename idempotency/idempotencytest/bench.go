package idempotencytest

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
)

// Benchmark measures the middleware's cost per request with store, on a
// handler that writes a small JSON response, without network: "bare" is the
// handler alone, "first" a request with a new key (begin, run, complete),
// "replay" a request whose key has a stored response (begin, replay). The
// difference between bare and the others is the middleware's overhead,
// store round trips included.
func Benchmark(b *testing.B, store idempotency.Store) {
	body := []byte(`{"amount":1000,"currency":"eur","source":"tok_visa"}`)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ch_1","amount":1000,"status":"succeeded"}`))
	})
	m, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	wrapped := m.Handler(handler)
	run := func(b *testing.B, h http.Handler, key func(i int) string) {
		u, _ := url.Parse("/v1/charges")
		rd := bytes.NewReader(body)
		r := &http.Request{Method: "POST", URL: u, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(rd), ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		w := &discardWriter{h: make(http.Header)}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rd.Reset(body)
			if key != nil {
				r.Header[idempotency.HeaderKey] = []string{key(i)}
			}
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, r)
			if w.code != http.StatusCreated {
				b.Fatalf("status %d", w.code)
			}
		}
	}
	// Keys unique per run (b.Run's function runs again for -count), so that
	// shared stores see new keys.
	unique := func() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }
	b.Run("bare", func(b *testing.B) { run(b, handler, nil) })
	b.Run("first", func(b *testing.B) {
		p := "first-" + unique() + "-"
		run(b, wrapped, func(i int) string { return p + strconv.Itoa(i) })
	})
	b.Run("replay", func(b *testing.B) {
		k := "replay-" + unique()
		run(b, wrapped, func(int) string { return k })
	})
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
