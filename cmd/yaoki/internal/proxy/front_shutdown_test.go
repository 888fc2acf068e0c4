package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestFrontShutdownFinishesInFlight(t *testing.T) {
	// Shutdown with a front-end request in flight: the connections that
	// wait for a request (one that served one, one that sent nothing yet)
	// are closed at once; the request in flight finishes, and its answer
	// says Connection: close, as net/http's server says it while it shuts
	// down, so that its client does not send another on a connection that
	// is closing; then Shutdown returns without error.
	got := make(chan struct{}, 1)
	release := make(chan struct{})
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(t, br)
			if !ok {
				return
			}
			if req.URL.Path == "/slow" {
				got <- struct{}{}
				select {
				case <-release:
				case <-afterBound():
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	fp := newFrontProxy(t, url, Route{})
	busy, busyR := fp.dial(t)
	idle, idleR := fp.dial(t)
	fresh, freshR := fp.dial(t)
	io.WriteString(idle, "GET /fast HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(idleR, "GET"); err != nil || body != "ok" {
		t.Fatalf("GET /fast: %v %q, %v", resp, body, err)
	}
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: front\r\n\r\n")
	<-got
	eventually(t, "the front end does not serve the three connections", func() bool { return fp.conns() == 3 })
	done := make(chan error, 1)
	go func() { done <- fp.s.Shutdown(fp.srv.Config, 10*time.Second) }()
	for name, br := range map[string]*bufio.Reader{"idle after a request": idleR, "idle before any": freshR} {
		if _, err := br.ReadByte(); err == nil {
			t.Errorf("%s: the front end sent a byte on a connection it was to close", name)
		}
	}
	_ = fresh
	close(release)
	resp, body, _, err := readFinal(busyR, "GET")
	if err != nil || resp.StatusCode != 200 || body != "done" {
		t.Fatalf("the request in flight got %v %q, %v; want 200 done", resp, body, err)
	}
	if !resp.Close {
		t.Errorf("the answer of the request in flight at shutdown has no Connection: close (header %v)", resp.Header)
	}
	if _, err := busyR.ReadByte(); err == nil {
		t.Errorf("the connection of the request in flight stayed open after its answer")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown: %v, want nil: every call finished", err)
		}
	case <-afterBound():
		t.Fatal("Shutdown did not return after the call in flight finished")
	}
}

func TestFrontShutdownGracePasses(t *testing.T) {
	// Shutdown with a front-end request whose upstream hangs past the
	// grace: the call is cut (its client's connection closed without an
	// answer, its upstream's connection closed) and Shutdown says so.
	got := make(chan struct{}, 1)
	upClosed := make(chan struct{}, 1)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(t, br); !ok {
			return
		}
		got <- struct{}{}
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on the failure, not a wait
		io.Copy(io.Discard, br)
		upClosed <- struct{}{}
	})
	fp := newFrontProxy(t, url, Route{})
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /hang HTTP/1.1\r\nHost: front\r\n\r\n")
	<-got
	err := fp.s.Shutdown(fp.srv.Config, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "1 call in flight: cut") {
		t.Errorf("Shutdown: %v, want it to say the call in flight was cut", err)
	}
	if b, err := br.ReadByte(); err == nil {
		t.Errorf("the client of the call cut read %q, want its connection closed", b)
	}
	select {
	case <-upClosed:
	case <-afterBound():
		t.Error("the upstream's connection of the call cut stayed open")
	}
}
