package httpletter_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/deadletter/httpletter"
)

// BenchmarkEncode and BenchmarkDecode measure a 1 KiB JSON POST with five
// headers: what capturing and redriving one request costs besides the
// store and the network.
func BenchmarkEncode(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "https://partner.example/v1/charges", strings.NewReader(strings.Repeat("x", 1024)))
	for _, h := range []string{"Content-Type", "Idempotency-Key", "X-Request-Id", "User-Agent", "Accept"} {
		req.Header.Set(h, "some value")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := httpletter.Encode(req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "https://partner.example/v1/charges", strings.NewReader(strings.Repeat("x", 1024)))
	for _, h := range []string{"Content-Type", "Idempotency-Key", "X-Request-Id", "User-Agent", "Accept"} {
		req.Header.Set(h, "some value")
	}
	p, _ := httpletter.Encode(req)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := httpletter.Decode(p); err != nil {
			b.Fatal(err)
		}
	}
}
