package flaky

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// The events name the address flaky listens on, not the Host a client
// wrote: a client sending a new Host with each request made a new series
// of the metrics each time.
func TestReportNamesListenAddress(t *testing.T) {
	rec := &retrytest.Recorder{}
	listen := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	for _, host := range []string{"a.example", "b.example", "c.example"} {
		r := httptest.NewRequest("POST", "http://"+host+"/x", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(listen)))
		reportAnswer(&telemetry.Running{Observer: rec}, r, flakyAnswer{st: step{status: 200, retryAfter: -1}, replayed: true, key: "k"})
	}
	evs := rec.Events()
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6 (an attempt's end and a replay per request)", len(evs))
	}
	for _, e := range evs {
		if e.Host != "127.0.0.1:8080" {
			t.Errorf("event %v: Host %q, want the listen address 127.0.0.1:8080", e.Kind, e.Host)
		}
	}
}
