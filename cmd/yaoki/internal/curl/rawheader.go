package curl

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// maxRawHeader bounds the bytes an attempt records of its answer: past
// it, -i, -D and %{size_header} fall back to the headers net/http parsed.
const maxRawHeader = 256 << 10

// recordConn is a connection that records the bytes read from it while
// armed, so that -i, -I, -D and %{size_header} give an HTTP/1.x answer's
// header sections as the server wrote them, as curl does: in its order,
// with its case, spacing and line ends, with the Transfer-Encoding and
// Trailer headers net/http takes out of the header and the 1xx answers
// before the final one. net/http keeps none of these.
//
// connTrace arms it when an attempt gets the connection (before the
// request is written: an HTTP/1.x connection carries one exchange at a
// time, and net/http drops an idle connection on which bytes came
// unasked) and takes the bytes when the attempt has its answer's header.
// A connection whose bytes are not HTTP (TLS that net/http runs over it,
// through a proxy) is recorded in vain: rawHeaders finds no status line.
// Its methods are safe for concurrent use: net/http reads from its own
// goroutine.
type recordConn struct {
	net.Conn

	mu  sync.Mutex
	on  bool
	buf []byte
}

func (c *recordConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.on {
			if len(c.buf)+n > maxRawHeader {
				c.on, c.buf = false, nil
			} else {
				c.buf = append(c.buf, p[:n]...)
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

// arm starts recording anew.
func (c *recordConn) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.buf = true, nil
}

// take stops recording and returns what was read since arm.
func (c *recordConn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf
	c.on, c.buf = false, nil
	return b
}

// rawHeaders returns the start of b, the bytes read for an answer whose
// status is status, that holds its header sections as they came: each
// 1xx answer's (but 101, a final one) and the final answer's, each up to
// and including the empty line that ends it ("\r\n" or "\n", as net/http
// reads them). It returns nil when b does not start so (bytes that are
// not HTTP/1.x, a recording cut short) or its final status is not status.
func rawHeaders(b []byte, status int) []byte {
	pos := 0
	line := func() ([]byte, bool) {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			return nil, false
		}
		l := b[pos : pos+i]
		pos += i + 1
		return l, true
	}
	for {
		first, ok := line()
		if !ok || !bytes.HasPrefix(first, []byte("HTTP/1.")) {
			return nil
		}
		_, rest, _ := bytes.Cut(first, []byte(" "))
		code, err := strconv.Atoi(string(bytes.TrimRight(rest[:min(3, len(rest))], "\r")))
		if err != nil {
			return nil
		}
		for {
			l, ok := line()
			if !ok {
				return nil
			}
			if len(l) == 0 || len(l) == 1 && l[0] == '\r' {
				break
			}
		}
		switch {
		case code == status:
			return b[:pos]
		case code < 100 || code > 199 || code == 101:
			return nil
		}
	}
}

// headerBlock is every answer's status line and headers, the redirects
// followed first, as curl writes them: as the server wrote them when the
// attempt recorded them (raw, HTTP/1.x over a connection yaoki dialed),
// else over HTTP/2 as curl writes those (HTTP/2 and the status, header
// names in lower case as they came), else from what net/http parsed.
func headerBlock(resp *http.Response, raw func(*http.Response) []byte) []byte {
	var hops []*http.Response
	for r := resp; r != nil; r = r.Request.Response {
		hops = append(hops, r)
	}
	var b bytes.Buffer
	for i := len(hops) - 1; i >= 0; i-- {
		r := hops[i]
		if w := raw(r); w != nil {
			b.Write(w)
			continue
		}
		if r.ProtoMajor == 2 {
			writeHTTP2Header(&b, r)
			continue
		}
		fmt.Fprintf(&b, "%s %s\r\n", r.Proto, r.Status)
		_ = r.Header.Write(&b)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// writeHTTP2Header writes an HTTP/2 answer's status line and headers as
// curl 7.88 writes them: "HTTP/2 200 " and the names in lower case, as
// HTTP/2 sends them (sorted: net/http keeps no order).
func writeHTTP2Header(b *bytes.Buffer, r *http.Response) {
	fmt.Fprintf(b, "HTTP/%d %d \r\n", r.ProtoMajor, r.StatusCode)
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range r.Header[k] {
			fmt.Fprintf(b, "%s: %s\r\n", strings.ToLower(k), v)
		}
	}
	b.WriteString("\r\n")
}
