package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFrontHandedConnClosesWriteFirst(t *testing.T) {
	// The fault: a client's POST is answered before its body is read (a
	// ".." path, refused with 400), and the client is still sending the
	// body. net/http's server then closes the connection gently: it ends
	// its side first (a FIN: the client reads the answer's end as an EOF)
	// and waits a while before the full close, which resets the
	// connection for the bytes it did not read (golang.org/issue/3595).
	// A connection handed over by the front end must let it: the client
	// must read the answer and then a clean end, as through net/http
	// alone, not a reset that can take the answer with it.
	url, _ := recordingUpstream(t)
	fp := newFrontProxy(t, url, Route{})
	netAddr := netHTTPProxy(t, url)
	for _, c := range []struct{ name, addr string }{{"net/http alone", netAddr}, {"front end", fp.addr}} {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		go func() {
			io.WriteString(conn, "POST /a/../b HTTP/1.1\r\nHost: front\r\nContent-Length: 1048576\r\n\r\n"+strings.Repeat("x", 300<<10))
		}()
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != 400 {
			t.Fatalf("%s: %d, %v; want 400 and its body", c.name, resp.StatusCode, err)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the answer the client read %v, want a clean end (EOF) before the close", c.name, err)
		}
	}
	if n := fp.handed.Load(); n != 1 {
		t.Errorf("%d connections handed over, want 1", n)
	}
}
