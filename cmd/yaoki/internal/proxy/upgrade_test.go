package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestProxyUpgradeRefusedNotMarkedTried(t *testing.T) {
	// The fault: the upstream refuses a WebSocket upgrade with 503 and
	// Retry-After (overloaded). An upgrade is sent once, never retried, so
	// the proxy did not retry it: its answer must reach the client without
	// Do-Not-Retry, which would tell the client (or a layer above) that
	// the proxy's retries had already run, and keep it from retrying
	// after the Retry-After it was given.
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 4\r\n\r\nbusy")
		}
	})
	front := proxyFront(t, url)
	resp, body := upgradeGet(t, front)
	if resp.StatusCode != 503 || body != "busy" || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("got %d %q Retry-After %q, want the upstream's 503 busy with Retry-After 2", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if v, ok := resp.Header["Do-Not-Retry"]; ok {
		t.Errorf("Do-Not-Retry: %q on the answer to an upgrade sent once; want none (the proxy did not retry it)", v)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the upstream got %d connections, want 1 (an upgrade is sent once)", n)
	}
}

func TestProxyUpgradeFailureSaysWhat(t *testing.T) {
	// The fault: the upstream closes the connection of a WebSocket
	// upgrade without answering. The proxy's 502 says what it tried and
	// that an upgrade is not retried, not only the transport's "EOF".
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(t, br) // then the connection closes
	})
	front := proxyFront(t, url)
	resp, body := upgradeGet(t, front)
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %s %s, want a 502 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, want := range []string{`"reason":"upstream_error"`, "proxy: GET " + url + "/ws: upgrade to websocket, sent once (an upgrade is never retried): EOF"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the problem %s does not say %q", body, want)
		}
	}
}

func TestProxyH2CUpgradeNotForwarded(t *testing.T) {
	// The fault: a client offers to upgrade to HTTP/2 over cleartext
	// (curl --http2 on an http URL sends Upgrade: h2c with every
	// request). The proxy took it for an upgrade such as WebSocket: sent
	// the request once, without retries or guards, and passed the offer
	// on, so that an upstream that takes it would have the client's
	// connection joined to its own, every later request on it past the
	// proxy. h2c is the connection's business (RFC 9113 §3.1): the offer
	// stops at the proxy, and the request is served as any other, its
	// 503 retried.
	var n atomic.Int32
	seen := make(chan http.Header, 4)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			seen <- req.Header
			if n.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	front := proxyFront(t, url)
	resp, body := rawExchange(t, front.URL, "GET /x HTTP/1.1\r\nHost: front\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
		"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %s %q after %d attempts, want the retry's 200 ok", resp.Status, body, n.Load())
	}
	for i := range 2 {
		h := <-seen
		for _, name := range []string{"Upgrade", "Connection", "Http2-Settings"} {
			if v, ok := h[name]; ok {
				t.Errorf("attempt %d: the upstream got %s: %q, want none", i+1, name, v)
			}
		}
		if got := h.Get("Attempt-Count"); got != strconv.Itoa(i+1) {
			t.Errorf("attempt %d: Attempt-Count %q", i+1, got)
		}
	}
}

// upgradeGet asks front for a WebSocket upgrade of /ws, and returns the
// answer and its body.
func upgradeGet(t *testing.T, front *httptest.Server) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", front.URL+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}
