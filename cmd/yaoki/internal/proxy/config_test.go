package proxy

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
)

func TestProxyConfigRoutes(t *testing.T) {
	cfg, err := ParseConfig("p.yaml", []byte(`
routes:
  - host: API.local
    upstream: http://127.0.0.1:9001
    upstream_read_timeout: 0
  - path: /payments/
    upstream: https://api.partner.example/v1
    idempotency_key: auto
    max_buffered_body: 64KiB
    policy:
      Retry:
        - ErrorEquals: [HTTP.429, HTTP.503]
          IntervalSeconds: 1
          MaxAttempts: 4
      IdempotencyKey: "off"
    hedge: {delay: 50ms, max_hedges: 3, budget: off, brownout: 0.8}
    upstream_read_timeout: 10m
  - path: /
    upstream: http://127.0.0.1:9002
    hedge: adaptive
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Routes) != 3 {
		t.Fatalf("%d routes, want 3", len(cfg.Routes))
	}
	r0, r1, r2 := cfg.Routes[0], cfg.Routes[1], cfg.Routes[2]
	if r0.Host != "api.local" || r0.Path != "" || r0.Doc != nil || r0.At != "p.yaml:3" {
		t.Errorf("route 0: host %q path %q doc %v at %s; want api.local, every path, the defaults, p.yaml:3", r0.Host, r0.Path, r0.Doc, r0.At)
	}
	if r1.KeyMode != httpretry.KeyAuto || r1.MaxBody != 64<<10 || r1.Doc == nil || r1.Doc.Attempts() != 5 || r1.Upstream.String() != "https://api.partner.example/v1" {
		t.Errorf("route 1: key %v, max body %d, attempts %d, upstream %v", r1.KeyMode, r1.MaxBody, r1.Doc.Attempts(), r1.Upstream)
	}
	if r2.Path != "/" {
		t.Errorf("route 2: path %q", r2.Path)
	}
	for i, c := range []struct {
		r    *Route
		want time.Duration
	}{{r0, 0}, {r1, 10 * time.Minute}, {r2, DefaultUpstreamReadTimeout}} {
		if got := c.r.readTimeout(); got != c.want {
			t.Errorf("route %d: upstream read timeout %v, want %v", i, got, c.want)
		}
	}
	if r0.Hedge != nil {
		t.Errorf("route 0: hedge %+v, want none (no hedge key)", *r0.Hedge)
	}
	if h := r1.Hedge; h == nil || *h != (hedge.Config{Delay: 50 * time.Millisecond, MaxHedges: 3, Budget: hedge.Off, Brownout: 0.8}) {
		t.Errorf("route 1: hedge %v, want a 50ms delay, 3 copies, no budget, brownout 0.8", h)
	}
	if h := r2.Hedge; h == nil || *h != (hedge.Config{}) {
		t.Errorf("route 2: hedge %v, want the adaptive defaults (a zero hedge.Config)", h)
	}
	// Routes are tried in order: host first, then the prefixes.
	rs := &proxyRoutes{}
	for _, rc := range cfg.Routes {
		rs.list = append(rs.list, &proxyRoute{cfg: rc})
	}
	for _, c := range []struct {
		host, path string
		want       int
	}{
		{"api.local:8080", "/payments/x", 0},
		{"other", "/payments/x", 1},
		{"other", "/payments", 2}, // "/payments/" takes what is under it
		{"other", "/", 2},
	} {
		r := httptest.NewRequest("GET", "http://"+c.host+c.path, nil)
		got := rs.match(r)
		if got != rs.list[c.want] {
			t.Errorf("host %s path %s: matched %s, want routes[%d]", c.host, c.path, got.cfg.Name, c.want)
		}
	}
}

// Every error of a file, each at its place, with what is accepted.
func TestProxyConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"proxy: f.yaml: the file is empty"}},
		{"not a mapping", "- a\n", []string{"f.yaml:1:1: the file is a list: want a mapping with one key, routes"}},
		{"no routes", "listen: x\n", []string{"f.yaml:1:1: listen: unknown key: want routes", "routes: missing"}},
		{"bad fields", `routes:
  - path: payments
    upstream: ftp://x
    idempotency_key: yes
    max_buffered_body: 1GB
    retries: 3
`, []string{
			`f.yaml:2:11: routes[0].path: "payments": want a path prefix starting with /`,
			`f.yaml:3:15: routes[0].upstream: "ftp://x" is not an http or https URL`,
			`f.yaml:4:22: routes[0].idempotency_key: "yes": want auto`,
			`f.yaml:5:24: routes[0].max_buffered_body: "1GB" is not a size`,
			`f.yaml:6:5: routes[0].retries: unknown key: want one of path, host, upstream, policy`,
		}},
		{"no upstream", "routes:\n  - path: /\n", []string{"f.yaml:2:5: routes[0].upstream: missing"}},
		{"read timeout", "routes:\n  - upstream: http://a\n    upstream_read_timeout: -5s\n  - upstream: http://b\n    host: b\n    upstream_read_timeout: soon\n", []string{
			`f.yaml:3:28: routes[0].upstream_read_timeout: "-5s" is negative: want a duration ≥ 0 (0: no bound)`,
			`f.yaml:6:28: routes[1].upstream_read_timeout: "soon" is not a duration: want e.g. 250ms, 1.5s, 2m or plain seconds (0: no bound)`,
		}},
		{"hedge fields", `routes:
  - upstream: http://a
    hedge:
      delay: -5ms
      max_hedges: 11
      budget: 20
      brownout: no
      quantile: 0.4
      window: 2h
      min_per_second: 0
      after: 50ms
`, []string{
			`f.yaml:4:14: routes[0].hedge.delay: "-5ms": want a duration > 0`,
			`f.yaml:5:19: routes[0].hedge.max_hedges: "11": want 1 to 10 copies`,
			`f.yaml:6:15: routes[0].hedge.budget: "20": want a share of the calls above 0 and up to 10`,
			`f.yaml:7:17: routes[0].hedge.brownout: "no": want a share of slow first attempts`,
			`f.yaml:8:17: routes[0].hedge.quantile: "0.4": want a number from 0.5`,
			`f.yaml:9:15: routes[0].hedge.window: "2h": want a duration from 10ms to 1h`,
			`f.yaml:10:23: routes[0].hedge.min_per_second: "0": want hedges per second above 0`,
			`f.yaml:11:7: routes[0].hedge.after: unknown key: want one of delay, quantile, max_hedges`,
		}},
		{"hedge kind", "routes:\n  - upstream: http://a\n    hedge: 50ms\n", []string{`f.yaml:3:12: routes[0].hedge: "50ms": want adaptive, or a mapping such as {delay: 50ms, max_hedges: 2}`}},
		{"hedge list", "routes:\n  - upstream: http://a\n    hedge: [1]\n", []string{`f.yaml:3:12: routes[0].hedge: a list: want adaptive`}},
		{"policy positions", `routes:
  - upstream: http://a
    policy:
      Retry:
        - ErrorEquals: [HTTP.5XX]
          BackoffRate: 0.5
        - ErrorEquals: [Net.Refused]
          JitterStrategy: SOME
`, []string{"f.yaml:6:24: routes[0].policy.Retry[0].BackoffRate:", "f.yaml:8:27: routes[0].policy.Retry[1].JitterStrategy:"}},
		{"shadowed", `routes:
  - path: /api
    upstream: http://a
  - path: /api/v2
    upstream: http://b
`, []string{"f.yaml:4:5: routes[1]: never used: routes[0] (line 2) comes first"}},
		{"bad yaml", "routes: [\n", []string{"proxy: f.yaml: invalid YAML"}},
		{"two documents", "routes:\n  - upstream: http://a\n---\nroutes:\n  - path: /b\n    upstream: http://b\n", []string{"f.yaml:3:1: a second YAML document (after ---): a config file holds one document"}},
		{"bad second document", "routes:\n  - upstream: http://a\n---\nroutes: [\n", []string{"f.yaml: invalid YAML after the first document"}},
	} {
		_, err := ParseConfig("f.yaml", []byte(c.text))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.name, w, err)
			}
		}
	}
}

// A policy given as a file name is read relative to the config file.
func TestProxyConfigPolicyFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "partner.json"), []byte(`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}], "IdempotencyKey": "auto"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(path, []byte("routes:\n  - upstream: http://a\n    policy: partner.json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Routes[0]
	if r.Doc == nil || r.Doc.Attempts() != 2 || r.KeyMode != httpretry.KeyAuto || r.PolicySource != filepath.Join(dir, "partner.json") {
		t.Fatalf("route: doc %v, key %v, source %s; want the file's 2 attempts and its IdempotencyKey auto", r.Doc, r.KeyMode, r.PolicySource)
	}
	if err := os.WriteFile(path, []byte("routes:\n  - upstream: http://a\n    policy: missing.json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "proxy.yaml:3:13: routes[0].policy: cannot read the policy file") {
		t.Fatalf("a missing policy file: %v", err)
	}
}

// FuzzProxyConfig: any input gives a config or errors that start with the
// package's name; never a panic.
func FuzzProxyConfig(f *testing.F) {
	for _, s := range []string{
		"routes:\n  - path: /\n    upstream: http://a\n",
		"routes:\n  - upstream: http://a\n    policy: {Retry: [{ErrorEquals: [States.ALL]}]}\n",
		"routes: &a [*a]\n",
		"routes:\n  - {host: x, path: /a, upstream: 'https://b', max_buffered_body: -1, idempotency_key: auto}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("f.yaml", data)
		if err != nil {
			for _, e := range joinedErrors(err) {
				if !strings.HasPrefix(e.Error(), "proxy: ") {
					t.Fatalf("error %q does not start with proxy:", e)
				}
			}
			return
		}
		for _, r := range cfg.Routes {
			if r.Upstream == nil {
				t.Fatalf("route %s without upstream", r.Name)
			}
		}
	})
}
