package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestProxyRequestTrailersSentOn(t *testing.T) {
	// The fault: a client sends its body chunked with a trailer (a
	// checksum computed as the body streams). httputil.ReverseProxy
	// copies the request's Trailer map before the body is read, when it
	// holds the names the client announced without their values, and the
	// upstream got the trailer empty ("X-Sum:"). Now the trailer goes on
	// with its value: for a body kept for the retries (each attempt, the
	// 503 retried), and for one streamed once (a POST without key). Only
	// the fields the client announced (Trailer) go on, and no hop-by-hop
	// one (Keep-Alive), as in a header.
	for _, c := range []struct {
		method  string
		answers []int
	}{
		{"PUT", []int{503, 200}},
		{"POST", []int{200}},
	} {
		seen := make(chan string, len(c.answers))
		n := 0
		url, _ := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
			for {
				req, ok := readRequest(t, br)
				if !ok {
					return
				}
				body, _ := io.ReadAll(req.Body)
				seen <- string(body) + " X-Sum=" + req.Trailer.Get("X-Sum") + " X-Undeclared=" + req.Trailer.Get("X-Undeclared") +
					" Keep-Alive=" + fmt.Sprint(hasKey(req.Trailer, "Keep-Alive"))
				code := c.answers[min(n, len(c.answers)-1)]
				n++
				io.WriteString(conn, "HTTP/1.1 "+strconv.Itoa(code)+" x\r\nContent-Length: 0\r\n\r\n")
			}
		})
		front := proxyFront(t, url)
		conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		io.WriteString(conn, c.method+" /x HTTP/1.1\r\nHost: front\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum, Keep-Alive\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: abc\r\nKeep-Alive: timeout=1\r\nX-Undeclared: 1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: got %v, %v; want 200", c.method, resp, err)
		}
		for i := range c.answers {
			if got := <-seen; got != "hello X-Sum=abc X-Undeclared= Keep-Alive=false" {
				t.Errorf("%s: attempt %d: the upstream got %q, want the body and its trailer X-Sum: abc, without the trailer fields not announced or hop-by-hop", c.method, i+1, got)
			}
		}
	}
}

func hasKey(h http.Header, k string) bool {
	_, ok := h[k]
	return ok
}

func TestProxyResponseTrailersWithoutHopByHop(t *testing.T) {
	// The fault: an upstream's answer whose trailer carries hop-by-hop
	// fields (Connection, Keep-Alive, announced or not) and framing ones
	// (Content-Length). They were relayed to the client as they came, the
	// Trailer field announcing Keep-Alive too, where the same fields in a
	// header stay with the upstream (RFC 9110 §7.6.1; §6.5.1: no framing
	// field in a trailer). Now the client gets the other fields only,
	// announced (X-T) or not (X-U).
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T, Keep-Alive\r\n\r\n5\r\nhello\r\n0\r\n"+
				"X-T: 1\r\nKeep-Alive: timeout=9\r\nConnection: X-Private\r\nX-Private: p\r\nContent-Length: 99\r\nX-U: 2\r\n\r\n")
		}
	})
	front := proxyFront(t, url)
	resp, err := front.Client().Get(front.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "hello" {
		t.Fatalf("got %q, %v; want hello", body, err)
	}
	for _, k := range []string{"Keep-Alive", "Connection", "X-Private", "Content-Length"} {
		if v, ok := resp.Trailer[k]; ok {
			t.Errorf("the client got the trailer field %s: %q, want it dropped", k, v)
		}
	}
	if resp.Trailer.Get("X-T") != "1" || resp.Trailer.Get("X-U") != "2" {
		t.Errorf("trailer %v, want X-T: 1 and X-U: 2", resp.Trailer)
	}
}
