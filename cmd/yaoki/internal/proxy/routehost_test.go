package proxy

import (
	"net/http/httptest"
	"strings"
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

func TestProxyRoutePathEscaped(t *testing.T) {
	// A path prefix written percent-encoded in the file, as it goes on the
	// wire, takes the requests under it: requests are matched by their
	// decoded path, and the prefix was compared as written, so the route
	// never took any request. A prefix whose escapes are not valid is an
	// error that says so.
	cfg, err := ParseConfig("p.yaml", []byte("routes:\n  - path: /caf%C3%A9/my%20docs/\n    upstream: http://127.0.0.1:9001\n  - upstream: http://127.0.0.1:9002\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs := &proxyRoutes{}
	for _, rc := range cfg.Routes {
		rs.list = append(rs.list, &proxyRoute{cfg: rc})
	}
	for target, want := range map[string]int{"/caf%C3%A9/my%20docs/x": 0, "/café/my%20docs/x": 0, "/caf%C3%A9/my%20docs": 1, "/cafe/my%20docs/x": 1} {
		r := httptest.NewRequest("GET", target, nil)
		if got := rs.match(r); got != rs.list[want] {
			t.Errorf("GET %s: matched %s, want routes[%d]", target, got.cfg.Name, want)
		}
	}
	_, err = ParseConfig("p.yaml", []byte("routes:\n  - path: /a%zz/\n    upstream: http://127.0.0.1:9001\n"))
	if err == nil || !strings.Contains(err.Error(), `p.yaml:2:11: routes[0].path: "/a%zz/": invalid percent-encoding`) {
		t.Errorf("a prefix with a bad escape: %v, want an error that says so", err)
	}
}
