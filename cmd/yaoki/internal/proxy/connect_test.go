package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

func TestProxyConnectRefused(t *testing.T) {
	// The fault: a client set up to use the proxy as a forward proxy
	// (HTTPS_PROXY pointing at the sidecar) sends CONNECT host:443. The
	// proxy sent it on as "CONNECT /" to the upstream, a request no
	// server can read as a tunnel, and relayed whatever came back, a 200
	// included, after which the client speaks TLS to a server that does
	// not. It is answered 501, saying how the proxy is used, and the
	// upstream sees nothing.
	url, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	front := proxyFront(t, url+"/v2")
	resp, body := rawExchange(t, front.URL, "CONNECT api.partner.example:443 HTTP/1.1\r\nHost: api.partner.example:443\r\n\r\n")
	if resp.StatusCode != 501 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"reason":"connect_not_supported"`) || !strings.Contains(body, "reverse proxy") {
		t.Errorf("got %d %s %s, want 501 problem+json connect_not_supported saying it is a reverse proxy", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the upstream got %d connections, want none", n)
	}
}
