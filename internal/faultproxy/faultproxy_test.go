package faultproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/yaoki-go/yaoki/internal/faultproxy"
)

// echo starts a line echo server on loopback and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line on c and reads it back.
func roundTrip(c net.Conn) error {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

// Cut closes the connections open at that instant and nothing else: a
// connection made right after it passes, where after Down it is refused.
func TestCutLetsNewConnectionsThrough(t *testing.T) {
	p := faultproxy.New(t, echo(t))
	old, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := roundTrip(old); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	p.Cut()
	if err := roundTrip(old); err == nil {
		t.Error("a connection open at the cut still works")
	}
	fresh, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := roundTrip(fresh); err != nil {
		t.Errorf("a connection made after the cut: %v; want it through", err)
	}
	p.Down()
	refused, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if err := roundTrip(refused); err == nil {
		t.Error("a connection made while down went through")
	}
}
