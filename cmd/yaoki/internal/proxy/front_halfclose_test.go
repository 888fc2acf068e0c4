package proxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

func TestFrontHalfCloseAsNetHTTP(t *testing.T) {
	// A client that sends its request and then ends its side of the
	// connection (a shutdown of writing: nc -N, some scripts) while the
	// upstream has not answered: both paths take it for a client gone
	// and cancel the attempt, and the client, which still reads, gets the
	// same answer from both (net/http's: a bare 499).
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		// Never answer: hear the attempt cancelled (its connection
		// closed), or give up after a bound only a failure reaches.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, br)
	})
	fp := newFrontProxy(t, url, Route{})
	netAddr := netHTTPProxy(t, url)
	var got [2]string
	for i, addr := range []string{fp.addr, netAddr} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: front\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		resp, body, _, err := readFinal(bufio.NewReader(c), "GET")
		c.Close()
		if err != nil {
			got[i] = "error: " + err.Error()
		} else {
			got[i] = resp.Status + " " + body
		}
	}
	if got[0] != got[1] {
		t.Errorf("front end %q, net/http %q", got[0], got[1])
	}
}
