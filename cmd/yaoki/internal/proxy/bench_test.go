package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
		measureCPU(b, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					serveGET(b, h)
				}
			})
		})
	}
	b.Run("plain", func(b *testing.B) {
		rp := httputil.NewSingleHostReverseProxy(u)
		t := newUpstreamTransport().fallback // http.Transport, set up as yaoki proxy's
		defer t.CloseIdleConnections()
		rp.Transport, rp.BufferPool = t, &bufferPool{}
		run(b, rp)
	})
	b.Run("yaoki-stdlib-transport", func(b *testing.B) {
		t := newUpstreamTransport().fallback
		defer t.CloseIdleConnections()
		run(b, routeProxy(b, t, nil, u))
	})
	yaoki := func(b *testing.B, obs *yotel.Observer) {
		t := newUpstreamTransport()
		defer t.CloseIdleConnections()
		run(b, routeProxy(b, t, obs, u))
	}
	b.Run("yaoki", func(b *testing.B) { yaoki(b, nil) })
	b.Run("yaoki+metrics", func(b *testing.B) { yaoki(b, benchMetrics(b)) })
}

// stubUpstream answers every request with 200 "ok" without a network: the
// benchmarks that use it measure the proxies' own work.
type stubUpstream struct{}

func (stubUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"3"}}, ContentLength: 3,
		Body: io.NopCloser(strings.NewReader("ok\n")), Request: req}, nil
}

// BenchmarkProxyHandler is BenchmarkProxyServe without the network: the
// upstream is a RoundTripper that answers at once, so the difference
// between the two is yaoki proxy's own cost per request, without the
// loopback round trip's noise.
func BenchmarkProxyHandler(b *testing.B) {
	u, _ := url.Parse("http://upstream.test")
	run := func(b *testing.B, h http.Handler) {
		measureCPU(b, func() {
			for b.Loop() {
				serveGET(b, h)
			}
		})
	}
	b.Run("plain", func(b *testing.B) {
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.Transport, rp.BufferPool = stubUpstream{}, &bufferPool{}
		run(b, rp)
	})
	b.Run("yaoki", func(b *testing.B) {
		run(b, routeProxy(b, stubUpstream{}, nil, u))
	})
	b.Run("yaoki+metrics", func(b *testing.B) {
		run(b, routeProxy(b, stubUpstream{}, benchMetrics(b), u))
	})
}

// benchMetrics is what --admin-addr adds to a route: every attempt
// recorded by the OpenTelemetry observer, on the SDK (a manual reader;
// collection is not part of the cost).
func benchMetrics(b *testing.B) *yotel.Observer {
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { provider.Shutdown(context.Background()) })
	m, err := yotel.New(provider)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkProxyServePOST is BenchmarkProxyServe for a POST with an
// Idempotency-Key and a 1 KiB body, which the proxy buffers for its
// retries: through yaoki proxy over an http.Transport, and over its own
// pool, which sends such a body on the caller's goroutine.
func BenchmarkProxyServePOST(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n != 1024 {
			w.WriteHeader(http.StatusBadRequest)
		}
		io.WriteString(w, "ok\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	body := strings.Repeat("x", 1024)
	for _, c := range []struct {
		name string
		base func() http.RoundTripper
	}{
		{"yaoki-stdlib-transport", func() http.RoundTripper { return newUpstreamTransport().fallback }},
		{"yaoki", func() http.RoundTripper { return newUpstreamTransport() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			t := c.base()
			defer t.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			h := routeProxy(b, t, nil, u)
			measureCPU(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						w := httptest.NewRecorder()
						req := httptest.NewRequest("POST", "http://proxy/charges", strings.NewReader(body))
						req.Header.Set("Idempotency-Key", "k1")
						h.ServeHTTP(w, req)
						if w.Code != 200 {
							b.Errorf("status %d", w.Code)
						}
					}
				})
			})
		})
	}
}

// measureCPU runs loop, which makes b.N calls, and reports their
// allocations and the process's CPU time per call (cpu-ns/op).
func measureCPU(b *testing.B, loop func()) {
	b.ReportAllocs()
	cpu := cpuTime()
	loop()
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// serveGET sends a GET through h and marks b failed unless h answers
// 200 (Errorf, not Fatalf: it runs on RunParallel's goroutines too).
func serveGET(b *testing.B, h http.Handler) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://proxy/x", nil))
	if w.Code != 200 {
		b.Errorf("status %d", w.Code)
	}
}

// routeProxy returns the proxy of one --upstream route to u over base,
// its routes closed when the test or benchmark ends.
func routeProxy(tb testing.TB, base http.RoundTripper, obs *yotel.Observer, u *url.URL) *Server {
	tb.Helper()
	s := &Server{base: base, buffers: &bufferPool{}, ClientTimeout: DefaultClientTimeout}
	if obs != nil {
		s.Observer, s.Metrics = obs, obs
	}
	rs, err := s.build(&Config{Routes: []*Route{{Name: "--upstream", Upstream: u}}})
	if err != nil {
		tb.Fatal(err)
	}
	s.routes.Store(rs)
	tb.Cleanup(rs.close)
	return s
}

// cpuTime is the CPU time the process has used (user and system): on a
// machine shared with other work, the time per operation includes the
// waits for a core, and the CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpstreamQuiet is the look at an idle connection that the
// proxy's pool takes again (one recv with MSG_PEEK), paid once per request
// on a reused connection.
func BenchmarkUpstreamQuiet(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c) // until the benchmark closes its end
			c.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := newUpstreamConn(nil, ln.Addr().String(), nc)
	b.ReportAllocs()
	for b.Loop() {
		if !c.quiet() {
			b.Fatal("an idle connection with nothing on it is not quiet")
		}
	}
	nc.Close()
	<-served
}

// BenchmarkFrontServe sends GETs over loopback through the proxy's front
// end (Listener) to an upstream that answers each at once, on 8
// connections in parallel, with and without the metrics observer. The
// clients and the upstream are raw connections, so that nearly all of the
// CPU time it reports is the proxy's.
func BenchmarkFrontServe(b *testing.B) {
	up := rawBenchUpstream(b)
	u, _ := url.Parse("http://" + up)
	for _, c := range []struct {
		name    string
		metrics bool
	}{{"front", false}, {"front-metrics", true}} {
		b.Run(c.name, func(b *testing.B) {
			base := newUpstreamTransport()
			defer base.CloseIdleConnections()
			var obs *yotel.Observer
			if c.metrics {
				obs = benchMetrics(b)
			}
			s := routeProxy(b, base, obs, u)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			fl := s.Listener(ln)
			defer fl.Close()
			b.SetParallelism(4)
			measureCPU(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					nc, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Error(err)
						return
					}
					defer nc.Close()
					br := bufio.NewReader(nc)
					for pb.Next() {
						if _, err := io.WriteString(nc, "GET /x HTTP/1.1\r\nHost: proxy\r\nUser-Agent: bench\r\nConnection: keep-alive\r\n\r\n"); err != nil {
							b.Error(err)
							return
						}
						if err := readBenchAnswer(br); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// rawBenchUpstream serves "ok\n" to every request on its connections,
// reading heads without parsing them; it returns its address.
func rawBenchUpstream(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Wed, 02 Dec 2026 12:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readBenchAnswer reads an answer with a Content-Length from br.
func readBenchAnswer(br *bufio.Reader) error {
	n := -1
	first := true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if first {
			if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
				return fmt.Errorf("answer %q", line)
			}
			first = false
			continue
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 {
		return errors.New("no Content-Length")
	}
	_, err := br.Discard(n)
	return err
}
