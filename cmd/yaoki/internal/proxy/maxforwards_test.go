package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestProxyMaxForwards(t *testing.T) {
	// RFC 9110 §7.6.2: a proxy that gets a TRACE or OPTIONS request with
	// Max-Forwards decrements it before forwarding, and one that gets 0
	// does not forward the request but answers it as its final
	// recipient. The proxy sent every such request on unchanged, so a
	// client tracing the chain hop by hop (Max-Forwards 0, 1, 2, ...)
	// never found where the proxy stands.
	seen := make(chan string, 8)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			seen <- req.Method + " " + req.Header.Get("Max-Forwards")
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nupstream")
		}
	})
	front := proxyFront(t, url)
	for _, c := range []struct {
		method, maxForwards string
		status              int
		upstreamSaw         string // "": no request
	}{
		{"OPTIONS", "0", 200, ""},
		{"OPTIONS", "1", 200, "OPTIONS 0"},
		{"OPTIONS", "10", 200, "OPTIONS 9"},
		{"TRACE", "0", 501, ""},
		{"TRACE", "2", 200, "TRACE 1"},
		{"GET", "0", 200, "GET 0"}, // other methods: the field means nothing
		{"OPTIONS", "x", 200, "OPTIONS x"},
	} {
		req, _ := http.NewRequest(c.method, front.URL+"/x", nil)
		req.Header.Set("Max-Forwards", c.maxForwards)
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var saw string
		select {
		case saw = <-seen:
		default:
		}
		if resp.StatusCode != c.status || saw != c.upstreamSaw {
			t.Errorf("%s with Max-Forwards %s: got %d %q, the upstream saw %q; want %d, the upstream seeing %q",
				c.method, c.maxForwards, resp.StatusCode, body, saw, c.status, c.upstreamSaw)
		}
		if c.upstreamSaw == "" && string(body) == "upstream" {
			t.Errorf("%s with Max-Forwards 0: the upstream's answer came back", c.method)
		}
	}
}
