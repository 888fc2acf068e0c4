package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
)

// Config is what yaoki proxy serves: its routes, in the order they are
// tried. A Config is not changed once it is served.
type Config struct {
	Routes []*Route
	Source string // the config file, or "--upstream"
}

// Route is one route: which requests it takes (a path prefix, a host, or
// both) and how it sends them on. The zero values of its optional fields
// are the defaults: every path, every host, the default policy, no
// Idempotency-Key added, the transport's largest buffered body, no
// hedging.
type Route struct {
	Name     string // "routes[N]" in a file, "--upstream" otherwise
	At       string // "FILE:LINE" of the route, for messages
	Path     string // a path prefix; "" or "/" takes every path
	Host     string // a host name in lower case without port; "" takes every host
	Upstream *url.URL

	Policy       retry.Policy      // used when Doc is nil
	Doc          *policy.Document  // nil when the route has no policy document
	PolicySource string            // "defaults", "flags", "inline" or the document's file
	KeyMode      httpretry.KeyMode // httpretry.Transport.IdempotencyKey
	MaxBody      int64             // httpretry.Transport.MaxBufferedBody: 0 default, -1 never

	Hedge *hedge.Config // httpretry.Transport.Hedge: nil, no hedging

	// UpstreamReadTimeout is how long a read of an answer waits for the
	// upstream's next bytes: before the header, the attempt times out;
	// in the body, the answer is cut (readTimeout).
	// Zero: DefaultUpstreamReadTimeout; negative: no bound.
	UpstreamReadTimeout time.Duration
}

// readTimeout is the route's upstream read timeout; 0: none.
func (r *Route) readTimeout() time.Duration {
	switch {
	case r.UpstreamReadTimeout == 0:
		return DefaultUpstreamReadTimeout
	case r.UpstreamReadTimeout < 0:
		return 0
	}
	return r.UpstreamReadTimeout
}

// ParseReadTimeout reads an upstream read timeout (upstream_read_timeout,
// --upstream-read-timeout): a duration or plain seconds; 0 is no bound,
// which Route.UpstreamReadTimeout writes as -1.
func ParseReadTimeout(s string) (time.Duration, error) {
	d, err := flags.ParseSeconds(s)
	if err != nil {
		return 0, fmt.Errorf("%v (0: no bound)", err)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// routeFields are the keys a route may have.
var routeFields = []string{"path", "host", "upstream", "policy", "idempotency_key", "max_buffered_body", "hedge", "upstream_read_timeout"}

// proxyConfigError is one thing wrong with a proxy config file, where it is and
// what is accepted.
type proxyConfigError struct {
	file      string
	line, col int
	path, msg string
}

func (e *proxyConfigError) Error() string {
	// The same "FILE:LINE:COL: PATH: MSG" form as a policy document's
	// errors, which a route's policy may be.
	pe := policy.Error{File: e.file, Line: e.line, Column: e.col, Path: e.path, Msg: e.msg}
	return "proxy: " + strings.TrimPrefix(pe.Error(), "policy: ")
}

// configReader collects the errors of one file.
type configReader struct {
	file string
	dir  string // the file's directory: policy files are relative to it
	errs []error
}

func (c *configReader) fail(n *yaml.Node, path, format string, args ...any) {
	e := &proxyConfigError{file: c.file, path: path, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.line, e.col = n.Line, n.Column
	}
	c.errs = append(c.errs, e)
}

// LoadConfig reads the config file at path; see ParseConfig.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: cannot read the config file: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig reads a proxy config (file names it in messages, and policy
// files are relative to its directory): a YAML mapping whose one key,
// routes, lists the routes. It checks every field and returns every error
// it finds, each with its file, line and column, joined with errors.Join.
func ParseConfig(file string, data []byte) (*Config, error) {
	c := &configReader{file: file, dir: filepath.Dir(file)}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, &proxyConfigError{file: file, msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, &proxyConfigError{file: file, msg: "invalid YAML after the first document: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	default:
		// The routes of a second document would be dropped without a
		// word.
		return nil, &proxyConfigError{file: file, line: next.Line, col: next.Column, msg: "a second YAML document (after ---): a config file holds one document, with all its routes"}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &proxyConfigError{file: file, msg: "the file is empty: want a mapping with routes, e.g.\nroutes:\n  - path: /\n    upstream: http://127.0.0.1:9000"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		c.fail(doc, "", "the file is %s: want a mapping with one key, routes", yamlKindName(doc))
		return nil, errors.Join(c.errs...)
	}
	cfg := &Config{Source: file}
	var routes *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "routes":
			routes = v
		default:
			c.fail(k, k.Value, "unknown key: want routes")
		}
	}
	switch {
	case routes == nil:
		c.fail(doc, "routes", "missing: want a list of routes, each with an upstream")
	case routes.Kind != yaml.SequenceNode:
		c.fail(routes, "routes", "%s: want a list of routes, each with an upstream", yamlKindName(routes))
	case len(routes.Content) == 0:
		c.fail(routes, "routes", "empty: want at least one route")
	default:
		for i, n := range routes.Content {
			if r := c.route(n, fmt.Sprintf("routes[%d]", i)); r != nil {
				cfg.Routes = append(cfg.Routes, r)
			}
		}
	}
	if len(c.errs) == 0 {
		c.shadowed(cfg.Routes, routes)
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return cfg, nil
}

// route reads one route; nil when it has errors (recorded in c).
func (c *configReader) route(n *yaml.Node, name string) *Route {
	n = yamlResolve(n)
	if n.Kind != yaml.MappingNode {
		c.fail(n, name, "%s: want a mapping with upstream and path or host", yamlKindName(n))
		return nil
	}
	before := len(c.errs)
	r := &Route{Name: name, At: fmt.Sprintf("%s:%d", c.file, n.Line), PolicySource: "defaults"}
	var upstream, pol, key *yaml.Node
	c.fields(n, name, func(k, v *yaml.Node, path string) {
		switch k.Value {
		case "path":
			if s, ok := c.scalar(v, path, "a path prefix such as /payments/"); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# \t") {
					c.fail(v, path, "%q: want a path prefix starting with / (no query, fragment or spaces), e.g. /payments/", s)
				}
				// Requests are matched by their decoded path: a prefix
				// written as it goes on the wire (%20) is decoded alike.
				p, err := url.PathUnescape(s)
				if err != nil {
					c.fail(v, path, "%q: invalid percent-encoding: want %%XX with two hex digits, e.g. /my%%20docs/", s)
				}
				r.Path = p
			}
		case "host":
			if s, ok := c.scalar(v, path, "a host name such as api.local"); ok {
				h := strings.ToLower(s)
				if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
					h = h[1 : len(h)-1] // an IPv6 address as a URL writes it
				}
				if net.ParseIP(h) == nil {
					h = strings.TrimSuffix(h, ".") // a fully qualified name: as requestHost reads a Host
				}
				if net.ParseIP(h) == nil && (strings.ContainsAny(h, "/:?#@ \t[]") || !validHostName(h)) {
					c.fail(v, path, "%q: want a host name or IP address without port or scheme, e.g. api.local or ::1", s)
				}
				r.Host = h
			}
		case "upstream":
			upstream = v
			r.Upstream = parseScalar(c, v, path, "an http or https URL", ParseUpstream)
		case "policy":
			pol = v
		case "idempotency_key":
			key = v
			if s, ok := c.scalar(v, path, "auto or off"); ok {
				switch s {
				case "auto":
					r.KeyMode = httpretry.KeyAuto
				case "off":
				default:
					c.fail(v, path, "%q: want auto (a key for each POST and PATCH that has none) or off", s)
				}
			}
		case "max_buffered_body":
			r.MaxBody = parseScalar(c, v, path, "a size in bytes", ParseByteSize)
		case "hedge":
			r.Hedge = c.hedge(v, path)
		case "upstream_read_timeout":
			r.UpstreamReadTimeout = parseScalar(c, v, path, "a duration such as 60s or 10m, or 0", ParseReadTimeout)
		default:
			c.fail(k, path, "unknown key: want one of %s", strings.Join(routeFields, ", "))
		}
	})
	if upstream == nil {
		c.fail(n, name+".upstream", "missing: every route needs an upstream URL, e.g. upstream: http://127.0.0.1:9000")
	}
	if pol != nil {
		c.policy(r, pol, name+".policy")
	}
	if key == nil && r.Doc != nil && r.Doc.IdempotencyKey == "auto" {
		r.KeyMode = httpretry.KeyAuto
	}
	if len(c.errs) > before {
		return nil
	}
	return r
}

// policy reads a route's policy: a file name (relative to the config
// file), or a document written in place, in the Step Functions form.
func (c *configReader) policy(r *Route, n *yaml.Node, path string) {
	var doc *policy.Document
	var err error
	switch n.Kind {
	case yaml.ScalarNode:
		file := n.Value
		if file == "" {
			c.fail(n, path, "empty: want a policy document (Retry, TimeoutSeconds, ...) or the name of a policy file")
			return
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(c.dir, file)
		}
		doc, err = policyfile.Load(file)
		r.PolicySource = file
	case yaml.MappingNode, yaml.SequenceNode:
		var js []byte
		js, err = policyfile.NodeToJSON(n)
		if err == nil {
			doc, err = policy.ParseFile(c.file, js)
		}
		r.PolicySource = "inline"
	default:
		c.fail(n, path, "%s: want a policy document (Retry, TimeoutSeconds, ...) or the name of a policy file", yamlKindName(n))
		return
	}
	if err == nil {
		err = doc.ApplyEnv(os.LookupEnv)
	}
	if err != nil {
		c.policyErrors(n, path, err)
		return
	}
	r.Doc = doc
}

// policyErrors records the errors of a route's policy document, each with
// its place in the file and its path from the config's root.
func (c *configReader) policyErrors(n *yaml.Node, path string, err error) {
	for _, e := range joinedErrors(err) {
		var pe *policy.Error
		if errors.As(e, &pe) && (pe.File == c.file || pe.Line > 0) {
			p := path
			if pe.Path != "" {
				p += "." + pe.Path
			}
			c.errs = append(c.errs, &proxyConfigError{file: pe.File, line: pe.Line, col: pe.Column, path: p, msg: pe.Msg})
			continue
		}
		c.fail(n, path, "%s", strings.TrimPrefix(e.Error(), "proxy: "))
	}
}

// shadowed reports a route that an earlier one takes every request of:
// routes are tried in order, so it would never be used.
func (c *configReader) shadowed(routes []*Route, list *yaml.Node) {
	for j, b := range routes {
		for i, a := range routes[:j] {
			if (a.Host == "" || a.Host == b.Host) && pathCovers(a.Path, b.Path) {
				c.fail(list.Content[j], b.Name, "never used: %s (line %d) comes first and takes every request this route would take; put the more specific route first",
					a.Name, list.Content[i].Line)
				break
			}
		}
	}
}

// joinedErrors returns the errors that err joins (errors.Join, as
// ParseConfig returns them), or err alone.
func joinedErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fields calls field for each key of the mapping n with its value (aliases
// followed) and its path from the config's root; a key given twice is an
// error, and field is not called for it.
func (c *configReader) fields(n *yaml.Node, path string, field func(k, v *yaml.Node, path string)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlResolve(n.Content[i+1])
		p := path + "." + k.Value
		if seen[k.Value] {
			c.fail(k, p, "given twice")
			continue
		}
		seen[k.Value] = true
		field(k, v, p)
	}
}

// scalar returns n's value when it is a scalar.
func (c *configReader) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		c.fail(n, path, "%s: want %s", yamlKindName(n), want)
		return "", false
	}
	return n.Value, true
}

// parseScalar reads the scalar n with parse, recording in c a node that is
// not a scalar or that parse refuses; the zero T then.
func parseScalar[T any](c *configReader, n *yaml.Node, path, want string, parse func(string) (T, error)) T {
	var v T
	if s, ok := c.scalar(n, path, want); ok {
		var err error
		if v, err = parse(s); err != nil {
			c.fail(n, path, "%v", err)
		}
	}
	return v
}

// resolve follows aliases.
func yamlResolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}

func yamlKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "empty"
}

// ParseUpstream checks an upstream URL: http or https, a host, no query,
// fragment or user info.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "": // a port alone ("http://:80") names no host
		return nil, fmt.Errorf("%q is not an http or https URL: want e.g. http://127.0.0.1:9000 or https://api.partner.example/v1", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("%q: want a URL without query, fragment or user info (the request's path and query are added to it)", s)
	}
	return u, nil
}

// ParseByteSize reads max_buffered_body: bytes, with an optional KiB or MiB
// suffix; -1 never buffers.
func ParseByteSize(s string) (int64, error) {
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}} {
		if v, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(v), u.m
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a size: want bytes (65536), KiB or MiB (64KiB, 1MiB), or -1 to never buffer", s)
	case n == -1 && mult == 1:
		return -1, nil
	case n < 1 || n > math.MaxInt32/mult:
		return 0, fmt.Errorf("%q out of range: want 1 byte to 2 GiB, or -1 to never buffer", s)
	}
	return n * mult, nil
}

// validHostName reports whether h is made of DNS labels.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			ch := l[i]
			if !('a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' || ch == '-' || ch == '_') {
				return false
			}
		}
	}
	return true
}

// pathCovers reports whether every path that prefix b takes is taken by
// prefix a too.
func pathCovers(a, b string) bool {
	if a == "" || a == "/" {
		return true
	}
	if b == "" || b == "/" {
		return false
	}
	return pathMatches(a, b)
}

// pathMatches reports whether the route prefix takes the request path p:
// p is the prefix, or continues it after a slash ("/api" takes /api and
// /api/x, not /apix; "/api/" takes /api/x).
func pathMatches(prefix, p string) bool {
	if prefix == "" || prefix == "/" {
		return true
	}
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	return len(p) == len(prefix) || prefix[len(prefix)-1] == '/' || p[len(prefix)] == '/'
}
