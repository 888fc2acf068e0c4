package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProxyCutVisibleToHTTP10(t *testing.T) {
	// The fault: the upstream's connection is reset in the middle of a
	// chunked answer (a crash, a proxy in between restarting), relayed to
	// an HTTP/1.0 client (nginx's default proxy_http_version, ab, a
	// health checker). HTTP/1.0 has no chunks: an answer of unknown length
	// ends where its connection ends, so when the proxy closed the
	// connection on the cut, the client read the part it got and a clean
	// end, an answer that looked whole. The proxy now resets the
	// connection: the client's read fails. An HTTP/1.1 client sees the cut
	// by its missing last chunk (or its short Content-Length), and keeps
	// what it got before it.
	relayed := make(chan struct{}, 1)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		// The reset comes once the client has the chunk: the proxy's
		// read of the next is waiting then.
		select {
		case <-relayed:
		case <-time.After(10 * time.Second): // a bound on the failure, not a wait
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	front := proxyFront(t, url)
	for _, c := range []struct {
		proto   string
		wantErr func(error) bool
		want    string
	}{
		{"HTTP/1.0", func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }, "connection reset"},
		{"HTTP/1.1", func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, "unexpected EOF (no last chunk)"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		io.WriteString(conn, "GET /x "+c.proto+"\r\nHost: front\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.proto, err)
		}
		part := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "hello" {
			t.Fatalf("%s: the client got %q, %v; want the first chunk's hello", c.proto, part, err)
		}
		relayed <- struct{}{}
		_, err = io.ReadAll(resp.Body)
		if !c.wantErr(err) {
			t.Errorf("%s: the cut answer ended with %v, want %s", c.proto, err, c.want)
		}
		conn.Close()
	}
}
