package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	yotel "github.com/yaoki-go/yaoki/otel"
)

// BenchmarkProxyServe is one GET through the proxy's handler to a loopback
// upstream that answers "ok", beside a plain httputil.ReverseProxy over the
// same kind of connection pool: the difference is what yaoki proxy adds
// (routing, httpretry, Via, Do-Not-Retry). The whole-process figures, with
// wrk against nginx too, are bench/proxy/run.sh's.
func BenchmarkProxyServe(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)

	run := func(b *testing.B, h http.Handler) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "http://proxy/x", nil))
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
	b.Run("plain", func(b *testing.B) {
		rp := httputil.NewSingleHostReverseProxy(u)
		t := newUpstreamTransport()
		defer t.CloseIdleConnections()
		rp.Transport, rp.BufferPool = t, &bufferPool{}
		run(b, rp)
	})
	yaoki := func(b *testing.B, obs *observing) {
		s := &proxyServer{base: newUpstreamTransport(), buffers: &bufferPool{}, obs: obs}
		defer s.base.CloseIdleConnections()
		rs, err := s.build(&proxyConfig{routes: []*routeConfig{{name: "--upstream", upstream: u}}})
		if err != nil {
			b.Fatal(err)
		}
		s.routes.Store(rs)
		defer rs.close()
		run(b, s)
	}
	b.Run("yaoki", func(b *testing.B) { yaoki(b, nil) })
	b.Run("yaoki+metrics", func(b *testing.B) {
		// What --admin-addr adds: every attempt recorded by the
		// OpenTelemetry observer, on the SDK.
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer provider.Shutdown(context.Background())
		m, err := yotel.New(provider)
		if err != nil {
			b.Fatal(err)
		}
		yaoki(b, &observing{observer: m, metrics: m})
	})
}
