package main

import (
	"bufio"
	"io"
	"net"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
)

func TestProxyGC(t *testing.T) {
	// Without GOGC in the environment the proxy collects at
	// proxyGCPercent; with it, the environment's setting stands.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	setProxyGC()
	if got := debug.SetGCPercent(100); got != proxyGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, proxyGCPercent)
	}
	t.Setenv("GOGC", "100")
	setProxyGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want 100 (the environment's)", got)
	}
}

func TestProxyContentTypeRelayed(t *testing.T) {
	// An upstream answer without Content-Type reaches the client without
	// one (net/http's server would add one guessed from the body, as
	// "text/html; charset=utf-8" here); one with Content-Type keeps it.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			typ := ""
			if req.URL.Path == "/json" {
				typ = "Content-Type: application/json\r\n"
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\n"+typ+"Content-Length: 15\r\n\r\n<html>hi</html>")
		}
	})
	front := proxyFront(t, url)
	for path, want := range map[string][]string{"/none": nil, "/json": {"application/json"}} {
		resp, err := front.Client().Get(front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header["Content-Type"]; !slices.Equal(got, want) || string(body) != "<html>hi</html>" {
			t.Errorf("GET %s: Content-Type %q, body %q; want %q and the upstream's body", path, got, body, want)
		}
	}
}

// proxyFront serves the proxy of one --upstream route to upstream on a
// loopback net/http server, as yaoki proxy does; both close when the test
// ends.
func proxyFront(t *testing.T, upstream string) *httptest.Server {
	t.Helper()
	up, err := neturl.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	base := newUpstreamTransport()
	t.Cleanup(base.CloseIdleConnections) // after the routes close (cleanups run last first)
	front := httptest.NewServer(routeProxy(t, base, nil, up))
	t.Cleanup(func() {
		front.Client().CloseIdleConnections()
		front.Close()
	})
	return front
}

func TestProxyUpstreamPath(t *testing.T) {
	// The request's path is added to the upstream's, escapes kept, and
	// its query passed on.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.RequestURI))+"\r\n\r\n"+req.RequestURI)
		}
	})
	front := proxyFront(t, url+"/v2")
	for _, c := range []struct{ path, want string }{
		{"/x?a=1&b=%20", "/v2/x?a=1&b=%20"},
		{"/", "/v2/"},
		{"/a%2Fb/c", "/v2/a%2Fb/c"},
	} {
		resp, err := front.Client().Get(front.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != c.want {
			t.Errorf("GET %s: the upstream saw %s, want %s", c.path, got, c.want)
		}
	}
}
