package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestFrontClientTimeouts(t *testing.T) {
	// The fault: clients that open connections and send nothing, or stop
	// in the middle of a head (a slowloris), each holding a connection
	// and a goroutine. The front end bounds them as net/http's server
	// does (command.go's ReadHeaderTimeout and IdleTimeout): a new
	// connection gets the header timeout for its first request, from its
	// start; a connection that served a request gets the idle timeout for
	// the first byte of the next, then the header timeout for the rest.
	// Here the header timeout is 50 ms, the idle one an hour, so that a
	// connection closed is closed by the bound the case is about.
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	fp := newFrontProxyOf(t, &Server{}, url, Route{}, frontTimeouts{idle: time.Hour, header: 50 * time.Millisecond})
	closed := func(c net.Conn) bool {
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	silent, _ := fp.dial(t)
	if !closed(silent) {
		t.Error("a new connection that sent nothing was kept past the header timeout")
	}
	partial, _ := fp.dial(t)
	io.WriteString(partial, "GET / HTTP/1.1\r\nHo")
	if !closed(partial) {
		t.Error("a new connection with part of a head was kept past the header timeout")
	}
	idle, br := fp.dial(t)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(br, "GET"); err != nil || body != "ok" {
		t.Fatalf("GET: %v %q, %v", resp, body, err)
	}
	idle.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // four header timeouts: an idle connection outlives them
	if closed(idle) {
		t.Error("a connection that served a request was closed before the idle timeout")
	}
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(idle, "GET / HTTP/1.1\r\nHo")
	if !closed(idle) {
		t.Error("a connection with part of its second head was kept past the header timeout")
	}
}
