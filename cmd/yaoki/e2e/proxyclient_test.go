package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that stalls is given up after --client-timeout, over real TCP
// between real processes: one that stops taking a long answer (the
// upstream's writes then fail, its attempt cancelled: the proxy no longer
// holds it), and one that stops sending its body (the proxy closes the
// connection; the upstream never hears of it).
func TestProxyClientTimeoutStalledClients(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, "--upstream", up.url, "--client-timeout", "1s")
	addr := strings.TrimPrefix(p.url, "http://")

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	asked := time.Now()
	io.WriteString(c, "GET /big?mb=1024 HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want the head of the answer", resp, err)
	}
	// The client takes nothing more: the socket buffers fill, and then
	// the proxy's write waits.
	got := up.waitFor(t, 1, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == "/big" })
	if len(got) != 1 {
		t.Fatal("the upstream went on sending to a client that took nothing for 10 s (--client-timeout 1s)")
	}
	if el := time.Since(asked); el < 800*time.Millisecond {
		t.Errorf("the client was given up %v after its request, before its 1 s could have passed", el)
	}
	if got[0].Body >= 1024<<20 {
		t.Errorf("the upstream sent the whole answer (%d bytes)", got[0].Body)
	}

	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sent := time.Now()
	io.WriteString(b, "PUT /echo HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 1000\r\n\r\n0123456789")
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(b) // until the proxy closes the connection
	if err != nil {
		t.Fatalf("the proxy kept the connection of a body stalled for 10 s (--client-timeout 1s): %v", err)
	}
	if el := time.Since(sent); el < 800*time.Millisecond {
		t.Errorf("the connection was closed %v after the body stalled, before its 1 s could have passed", el)
	}
	if strings.HasPrefix(string(rest), "HTTP/1.1 2") {
		t.Errorf("the client got %q, want no success", rest)
	}
	if n := len(up.requests(t, "/echo")); n != 0 {
		t.Errorf("the upstream got %d requests for a body cut short, want none", n)
	}
}

// An upstream that stalls in the middle of an answer is given up after
// --upstream-read-timeout, over real TCP between real processes: the
// client's stream ends cut (no last chunk), the upstream's connection is
// closed (its handler sees its request end), and the proxy's stderr says
// why. A stream whose events come more often than the timeout is relayed
// whole.
func TestProxyUpstreamReadTimeoutStalledUpstream(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, "--upstream", up.url, "--upstream-read-timeout", "1s", "--admin-addr", "127.0.0.1:0")
	addr := strings.TrimPrefix(p.url, "http://")

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound on the failure, not a wait
	asked := time.Now()
	io.WriteString(c, "GET /stream?n=3&every=30s HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want the head of the stream", resp, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("the stream ended with %v, want it cut (unexpected EOF: no last chunk)", err)
	}
	if string(body) != "data: event 1\n\n" {
		t.Errorf("the client got %q before the cut, want the first event", body)
	}
	if el := time.Since(asked); el < 800*time.Millisecond || el > 10*time.Second {
		t.Errorf("the stream was cut %v after the request, want about 1 s (--upstream-read-timeout 1s; the next event was 30 s away)", el)
	}
	if got := up.waitFor(t, 1, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == "/stream" }); len(got) != 1 {
		t.Error("the upstream's stream went on after the cut, want its connection closed")
	}
	p.waitLine(t, "the upstream sent no byte of the answer's body for 1s")
	// And /metrics counts it, as a give-up of the proxy's.
	cut := 0.0
	for k, v := range only(scrape(t, p.metricsURL(t)), "yaoki_give_ups_total") {
		if strings.Contains(k, "yaoki_component=proxy") && strings.Contains(k, "yaoki_reason=upstream_read_timeout") {
			cut += v
		}
	}
	if cut != 1 {
		t.Errorf("yaoki_give_ups_total{yaoki_component=proxy,yaoki_reason=upstream_read_timeout} = %v, want 1", cut)
	}

	// Events 100 ms apart, well under the 1 s timeout: the whole stream.
	resp, body2 := do(t, http.DefaultClient, "GET", p.url+"/stream?n=5&every=100ms", nil)
	if resp.StatusCode != 200 || strings.Count(body2, "data: event") != 5 {
		t.Errorf("a stream with events every 100 ms: got %d, %q; want the 5 events", resp.StatusCode, body2)
	}
}

// An upstream that takes the request and never answers is given up after
// --upstream-read-timeout too, over real TCP between real processes: each
// attempt times out (its connection closed: the upstream's handler sees
// its request end), the GET is retried, and the client gets a 504
// problem once the attempts are spent.
func TestProxyUpstreamReadTimeoutSilentUpstream(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, "--upstream", up.url, "--upstream-read-timeout", "1s", "--max-attempts", "2")
	asked := time.Now()
	resp, body := do(t, http.DefaultClient, "GET", p.url+"/slow?d=60s", nil)
	el := time.Since(asked)
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"reason":"attempts_exhausted"`) || !strings.Contains(body, "no byte of the answer's header for 1s") {
		t.Errorf("got %d %s %q, want 504 problem+json attempts_exhausted naming the header timeout", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if el < 1600*time.Millisecond || el > 10*time.Second {
		t.Errorf("the answer came %v after the request, want about 2 s (2 attempts, --upstream-read-timeout 1s)", el)
	}
	if got := up.waitFor(t, 2, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == "/slow" }); len(got) != 2 {
		t.Errorf("the upstream saw %d of its 2 requests end, want both connections closed", len(got))
	}
}
