// Command floorproxy is the floor of bench/proxy/run.sh: the least work a
// Go program does to pass an HTTP/1.1 request through to an upstream and
// its answer back, so that the table shows how near nginx any Go proxy can
// come on the machine that runs it. It is not a proxy to use: it copies
// the request's header as it came, without the changes RFC 9110 asks of a
// proxy (hop-by-hop fields, Via, Forwarded), and takes only what the
// benchmark sends: requests without a body, answered with a
// Content-Length. A request with a body gets 501, an upstream it cannot
// reach 502, and an answer without Content-Length a closed connection.
// What it keeps of a real proxy's work: a goroutine per client
// connection, buffered reads and writes, the header read line by line,
// and a pool of keep-alive connections to the upstream.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	upstream := flag.String("upstream", "", "the upstream URL (http://host:port)")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		fmt.Fprintf(os.Stderr, "floorproxy: --upstream %q: want http://host:port\n", *upstream)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/\n", ln.Addr())
	p := &pool{addr: u.Host}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go p.serve(c)
	}
}

// pool keeps the idle connections to the upstream.
type pool struct {
	addr string
	mu   sync.Mutex
	idle []*conn
}

type conn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func (p *pool) get() (*conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, nil
}

func (p *pool) put(c *conn) {
	p.mu.Lock()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

var errFraming = errors.New("a body floorproxy does not relay")

// copyHead copies a message's start line and header from br to w, and
// returns its Content-Length (-1 without one). A Transfer-Encoding is
// errFraming.
func copyHead(br *bufio.Reader, w io.Writer) (int64, error) {
	length := int64(-1)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if _, err := w.Write(line); err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			return length, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		switch {
		case !ok:
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64); err != nil || length < 0 {
				return 0, errFraming
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, errFraming
		}
	}
}

// serve relays the requests of one client connection.
func (p *pool) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	bw := bufio.NewWriter(nc)
	var head bytes.Buffer
	for {
		head.Reset()
		n, err := copyHead(br, &head)
		if err != nil || n > 0 {
			if errors.Is(err, errFraming) || n > 0 {
				io.WriteString(nc, "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}
			return
		}
		up, err := p.get()
		if err != nil {
			io.WriteString(nc, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		if !p.exchange(up, head.Bytes(), bw) {
			up.nc.Close()
			return
		}
		p.put(up)
		if bw.Flush() != nil {
			return
		}
	}
}

// exchange sends a request's head to up and copies the answer to bw; it
// reports whether both connections may be used again; on false, bw may hold part of an answer, which
// is dropped with the connection.
func (p *pool) exchange(up *conn, head []byte, bw *bufio.Writer) bool {
	if _, err := up.bw.Write(head); err != nil || up.bw.Flush() != nil {
		return false
	}
	n, err := copyHead(up.br, bw)
	if err != nil || n < 0 {
		return false
	}
	_, err = io.CopyN(bw, up.br, n)
	return err == nil
}
