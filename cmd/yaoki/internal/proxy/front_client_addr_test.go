package proxy

import (
	"net"
	"testing"
)

// addrConn is a connection whose client is at addr.
type addrConn struct {
	net.Conn
	addr net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.addr }

func TestFrontClientAddressAsReverseProxy(t *testing.T) {
	// X-Forwarded-For takes the client's address as httputil.ReverseProxy
	// does (net.SplitHostPort of RemoteAddr): an IPv6 link-local
	// address keeps its zone.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	f := &front{s: &Server{}}
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 4321}, "fe80::1%eth0"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 4321}, "2001:db8::1"},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4321}, "10.0.0.7"},
		{&net.UnixAddr{Name: "@", Net: "unix"}, ""},
	} {
		if got := string(newFrontConn(f, addrConn{Conn: a, addr: c.addr}).client); got != c.want {
			t.Errorf("client at %v: X-Forwarded-For takes %q, want %q", c.addr, got, c.want)
		}
	}
}
