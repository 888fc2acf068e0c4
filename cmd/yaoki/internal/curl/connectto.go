package curl

import (
	"net"
	"strconv"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// connectTo is one --connect-to HOST1:PORT1:HOST2:PORT2: a connection
// for HOST1:PORT1 (either empty: any) goes to HOST2:PORT2 (either empty:
// the one asked for).
type connectTo struct{ host, port, toHost, toPort string }

// splitHostPort splits "host:port" where host may be "[v6]"; the port
// may be empty, the host too.
func splitHostPort(s string) (host, port, rest string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", "", false
		}
		host, s = s[1:end], s[end+1:]
		if !strings.HasPrefix(s, ":") {
			return "", "", "", false
		}
		s = s[1:]
	} else {
		var found bool
		if host, s, found = strings.Cut(s, ":"); !found {
			return "", "", "", false
		}
	}
	port, rest, _ = strings.Cut(s, ":")
	return host, port, rest, true
}

// parseConnectTo reads --connect-to's entries, as curl 7.88 writes them;
// one it cannot read is bad usage (curl skips it).
func (o *httpOptions) parseConnectTo() error {
	for _, e := range o.connectToFlag {
		host, port, rest, ok1 := splitHostPort(e)
		toHost, toPort, extra, ok2 := splitHostPort(rest)
		okPort := func(p string) bool {
			n, err := strconv.Atoi(p)
			return p == "" || err == nil && n >= 1 && n <= 65535
		}
		if !ok1 || !ok2 || extra != "" || strings.Count(toPort, ":") > 0 || !okPort(port) || !okPort(toPort) {
			return cli.Usagef("--connect-to %q: want HOST1:PORT1:HOST2:PORT2 (each may be empty: any host or port, or the one asked for), e.g. example.com:443:127.0.0.1:8443", e)
		}
		o.connectTos = append(o.connectTos, connectTo{strings.ToLower(host), port, toHost, toPort})
	}
	return nil
}

// connectAddr returns where a connection for addr goes: the first
// --connect-to that matches it, else addr.
func (o *httpOptions) connectAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	for _, c := range o.connectTos {
		if (c.host == "" || strings.EqualFold(c.host, host)) && (c.port == "" || c.port == port) {
			if c.toHost != "" {
				host = c.toHost
			}
			if c.toPort != "" {
				port = c.toPort
			}
			return net.JoinHostPort(host, port)
		}
	}
	return addr
}
