package idempotencytest

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
)

// Benchmark measures the middleware's cost per request with store, on a
// handler that writes a small JSON response, without network: "bare" is the
// handler alone, "first" a request with a new key (begin, run, complete),
// "replay" a request whose key has a stored response (begin, replay). The
// difference between bare and the others is the middleware's overhead,
// store round trips included.
func Benchmark(b *testing.B, store idempotency.Store) {
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
	b.Run("bare", func(b *testing.B) { Serve(b, handler, nil) })
	b.Run("first", func(b *testing.B) { Serve(b, wrapped, NewKeys("first-")) })
	b.Run("replay", func(b *testing.B) {
		k := NewKeys("replay-")(0)
		Serve(b, wrapped, func(int) string { return k })
	})
}

// Serve runs b's loop over h: each iteration sends Benchmark's request
// (POST /v1/charges with a small JSON body, no network) with the key key(i)
// (none when key is nil) and fails b unless h answers 201. Allocations are
// reported. Benchmarks of other wrappers (postgres.Atomic) use it, so that
// their figures compare with Benchmark's.
func Serve(b *testing.B, h http.Handler, key func(i int) string) {
	body := []byte(`{"amount":1000,"currency":"eur","source":"tok_visa"}`)
	u, _ := url.Parse("/v1/charges")
	rd := bytes.NewReader(body)
	r := &http.Request{Method: "POST", URL: u, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(rd), ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rd.Reset(body)
		if key != nil {
			r.Header[header.IdempotencyKey] = []string{key(i)}
		}
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, r)
		if w.code != http.StatusCreated {
			b.Fatalf("status %d", w.code)
		}
	}
}

// NewKeys returns keys prefix-T-0, prefix-T-1, ... where T is the time of
// the call, so that each run of a benchmark (-count runs it again) sends a
// shared store keys it has not seen.
func NewKeys(prefix string) func(i int) string {
	p := prefix + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	return func(i int) string { return p + strconv.Itoa(i) }
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
