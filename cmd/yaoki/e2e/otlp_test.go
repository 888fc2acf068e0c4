package e2e

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP metrics endpoint on a loopback port: it
// decodes every export request (protobuf, as the OTLP specification
// defines it) and keeps the sums it carries, by metric name.
type otlpReceiver struct {
	url     string
	mu      sync.Mutex
	sums    map[string]float64
	service []string
	headers []string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &otlpReceiver{url: "http://" + ln.Addr().String(), sums: map[string]float64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req colmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.headers = append(o.headers, r.Header.Get("X-Tenant"))
		for _, rm := range req.GetResourceMetrics() {
			for _, a := range rm.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					o.service = append(o.service, a.GetValue().GetStringValue())
				}
			}
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					for _, p := range m.GetSum().GetDataPoints() {
						o.sums[m.GetName()] += p.GetAsDouble() + float64(p.GetAsInt())
					}
				}
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return o
}

// With OpenTelemetry's standard variables, yaoki http exports its metrics
// over OTLP/HTTP at exit.
func TestMetricsOTLPAtExit(t *testing.T) {
	rcv := startOTLPReceiver(t)
	s := startScripted(t, false, status(503, "busy\n"), status(500, "oops\n"), ok("done\n"))
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_EXPORTER_OTLP_HEADERS=X-Tenant=blue"}
	r := run(t, env, append([]string{"http"}, append(fastRetries, s.url)...)...)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("exit %d, stdout %q:\n%s", r.code, r.stdout, r.stderr)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if got := rcv.sums["yaoki.attempts"]; got != 3 {
		t.Errorf("yaoki.attempts exported: %v, want 3 (sums %v)", got, rcv.sums)
	}
	if got := rcv.sums["yaoki.retries"]; got != 2 {
		t.Errorf("yaoki.retries exported: %v, want 2", got)
	}
	if strings.Join(rcv.service, ",") != "yaoki http" || strings.Join(rcv.headers, ",") != "blue" {
		t.Errorf("one export with service.name %q and header %q; want \"yaoki http\" and blue", rcv.service, rcv.headers)
	}
	r = run(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.url, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "exec", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") {
		t.Errorf("grpc protocol: exit %d, %q; want 2 and the variable named", r.code, r.stderr)
	}
}
