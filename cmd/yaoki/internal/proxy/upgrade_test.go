package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
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
	req, _ := http.NewRequest("GET", front.URL+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(body) != "busy" || resp.Header.Get("Retry-After") != "2" {
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
	req, _ := http.NewRequest("GET", front.URL+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %s %s, want a 502 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, want := range []string{`"reason":"upstream_error"`, "proxy: GET " + url + "/ws: upgrade to websocket, sent once (an upgrade is never retried): EOF"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the problem %s does not say %q", body, want)
		}
	}
}
