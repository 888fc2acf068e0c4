package proxy

import (
	"net/http/httptest"
	"testing"
)

func TestProxyRouteHostForms(t *testing.T) {
	// A route's host takes the request's Host in each form it may come
	// in: any case, with a port, as a fully qualified name (a trailing
	// dot, as a client resolving "api.local." sends it), and an IPv6
	// address, which the file may give with or without brackets (it was
	// refused as "not a host name or IP address").
	for _, c := range []struct {
		route     string
		hosts     []string
		elsewhere []string
	}{
		{"api.local", []string{"api.local", "API.Local:8080", "api.local.", "api.local.:443"}, []string{"api.local..", "xapi.local", "api.local.x"}},
		{"API.local.", []string{"api.local", "api.local.:443"}, []string{"api.localx"}},
		{"::1", []string{"[::1]:8080", "[::1]"}, []string{"[::2]:8080", "127.0.0.1"}},
		{"[::1]", []string{"[::1]:8080"}, []string{"[::2]"}},
		{"[2001:DB8::1]", []string{"[2001:db8::1]:80"}, nil},
		{"127.0.0.1", []string{"127.0.0.1:8080"}, []string{"127.0.0.2"}},
	} {
		cfg, err := ParseConfig("p.yaml", []byte("routes:\n  - host: \""+c.route+"\"\n    upstream: http://127.0.0.1:9001\n  - upstream: http://127.0.0.1:9002\n"))
		if err != nil {
			t.Errorf("host %q: %v", c.route, err)
			continue
		}
		rs := &proxyRoutes{}
		for _, rc := range cfg.Routes {
			rs.list = append(rs.list, &proxyRoute{cfg: rc})
		}
		for _, h := range c.hosts {
			r := httptest.NewRequest("GET", "http://x/", nil)
			r.Host = h
			if got := rs.match(r); got != rs.list[0] {
				t.Errorf("route host %q, request Host %q: matched %s, want routes[0]", c.route, h, got.cfg.Name)
			}
		}
		for _, h := range c.elsewhere {
			r := httptest.NewRequest("GET", "http://x/", nil)
			r.Host = h
			if got := rs.match(r); got != rs.list[1] {
				t.Errorf("route host %q, request Host %q: matched %s, want routes[1]", c.route, h, got.cfg.Name)
			}
		}
	}
}
