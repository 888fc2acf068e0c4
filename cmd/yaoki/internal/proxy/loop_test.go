package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestProxyLoopRefused(t *testing.T) {
	// The fault: a route whose upstream is the proxy itself (--upstream
	// given the proxy's own --listen address). Each request came back in
	// as a new one, through a new connection, until the process ran out
	// of file descriptors and stopped serving every client. The Via
	// entries it adds at each pass tell the loop: after maxYaokiHops
	// passes the request is refused with 508 loop_detected, and that
	// answer unwinds the chain to the client.
	var passes atomic.Int32
	front := httptest.NewUnstartedServer(nil)
	self, err := neturl.Parse("http://" + front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections)
	s := routeProxy(t, base, nil, self)
	front.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		passes.Add(1)
		s.ServeHTTP(w, r)
	})
	front.Start()
	t.Cleanup(func() {
		front.Client().CloseIdleConnections()
		front.Close()
	})
	resp, err := front.Client().Get(front.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(string(body), `"reason":"loop_detected"`) {
		t.Errorf("got %d %s, want 508 problem+json loop_detected", resp.StatusCode, body)
	}
	if n := passes.Load(); n != maxYaokiHops+1 {
		t.Errorf("the request passed through the proxy %d times, want %d", n, maxYaokiHops+1)
	}
}

func TestYaokiHops(t *testing.T) {
	for _, c := range []struct {
		via  []string
		want int
	}{
		{nil, 0},
		{[]string{"1.1 yaoki"}, 1},
		{[]string{"1.1 yaoki, 1.1 yaoki", "2 yaoki"}, 3},
		{[]string{"1.0 fred, 1.1 p.example.net (Apache/1.1)", "HTTP/1.1 yaoki (sidecar)"}, 1},
		{[]string{"1.1 yaokix, 1.1 notyaoki,1.1 yaoki,,", "yaoki", ""}, 1},
	} {
		if got := yaokiHops(c.via); got != c.want {
			t.Errorf("yaokiHops(%q) = %d, want %d", c.via, got, c.want)
		}
	}
}
