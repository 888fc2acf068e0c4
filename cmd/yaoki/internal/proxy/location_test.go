package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"testing"
)

func TestProxyLocationFollowed(t *testing.T) {
	// The fault: an upstream whose URL has a base path (/v2) answers a
	// POST with 303 and Location: /v2/payments/123, in its own path space,
	// as APIs do after creating a resource. The client resolved it
	// against the proxy and asked for /v2/payments/123, which the proxy
	// sent to /v2/v2/payments/123; written absolute, it sent the client
	// past the proxy, to the upstream itself. Either way the client
	// follows it through the proxy to the resource.
	for _, form := range []string{"path", "absolute"} {
		t.Run(form, func(t *testing.T) {
			var self string
			saw := make(chan string, 4)
			url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, ok := readRequest(t, br)
					if !ok {
						return
					}
					io.Copy(io.Discard, req.Body)
					saw <- req.Method + " " + req.RequestURI
					if req.Method == "POST" {
						loc := "/v2/payments/123?v=1"
						if form == "absolute" {
							loc = self + loc
						}
						fmt.Fprintf(c, "HTTP/1.1 303 See Other\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n", loc)
						continue
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n123")
				}
			})
			self = url
			front := proxyFront(t, url+"/v2")
			resp, err := front.Client().Post(front.URL+"/payments", "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if first, then := <-saw, <-saw; first != "POST /v2/payments" || then != "GET /v2/payments/123?v=1" ||
				resp.StatusCode != 200 || string(body) != "123" || resp.Request.URL.Host != mustURL(t, front.URL).Host {
				t.Errorf("the upstream saw %q then %q; the client got %d %q from %s; want POST /v2/payments, GET /v2/payments/123?v=1, 200 123 through the proxy",
					first, then, resp.StatusCode, body, resp.Request.URL)
			}
		})
	}
}

func TestClientLocation(t *testing.T) {
	for _, c := range []struct {
		upstream, loc, want string
	}{
		{"http://up:9000/v2", "/v2/p/1?x=1#f", "/p/1?x=1#f"},
		{"http://up:9000/v2/", "/v2/p", "/p"},
		{"http://up:9000/v2", "http://UP:9000/v2/p", "/p"},
		{"http://up:9000/v2", "http://up:9000/v2", "http://up:9000/v2"}, // no client path leads there
		{"http://up:9000/v2", "/v2?x", "/v2?x"},
		{"http://up:9000/v2", "/v20/p", "/v20/p"},
		{"http://up:9000/v2", "/other", "/other"},
		{"http://up:9000/v2", "https://up:9000/v2/p", "https://up:9000/v2/p"},
		{"http://up:9000/v2", "http://up:9001/v2/p", "http://up:9001/v2/p"},
		{"http://up:9000/v2", "http://elsewhere/v2/p", "http://elsewhere/v2/p"},
		{"http://up:9000/v2", "p/1", "p/1"},
		{"http://up:9000/v2", "//up:9000/v2/p", "//up:9000/v2/p"},
		{"https://up/v2", "https://up:443/v2/p", "/p"},
		{"https://up:443", "https://up/p?q", "/p?q"},
		{"http://up", "/p", "/p"},
		{"http://up/a%2Fb", "/a%2Fb/p", "/p"},
	} {
		u, err := neturl.Parse(c.upstream)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientLocation(u, c.loc); got != c.want {
			t.Errorf("upstream %s, Location %s: got %s, want %s", c.upstream, c.loc, got, c.want)
		}
	}
}
