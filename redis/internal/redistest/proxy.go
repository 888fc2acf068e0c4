package redistest

import (
	"testing"

	"github.com/yaoki-go/yaoki/internal/faultproxy"
)

// Proxy is a TCP proxy on loopback in front of a real server, for tests of
// what a client does when the server cannot be reached, or when a command
// ran but its reply was lost (see faultproxy.Proxy).
type Proxy = faultproxy.Proxy

// Proxy returns a proxy to s, closed when tb ends. It starts passing
// everything through.
func (s *Server) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	return faultproxy.New(tb, s.Addr)
}
