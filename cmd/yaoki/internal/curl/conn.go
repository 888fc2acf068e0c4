package curl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// ipVersion is -4 and -6: the last one given decides, as in curl.
type ipVersion struct {
	network *string // "tcp4", "tcp6", or "" for either
	set     string  // what this flag sets
}

func (v ipVersion) String() string { return "false" }

func (v ipVersion) Set(s string) error {
	if s != "true" {
		return fmt.Errorf("%q: -4 and -6 take no value", s)
	}
	*v.network = v.set
	return nil
}

func (v ipVersion) Type() string { return "bool" }

// IsBoolFlag lets -4 and -6 go without a value.
func (v ipVersion) IsBoolFlag() bool { return true }

// parseResolve reads --resolve's entries, HOST:PORT:ADDR[,ADDR...] (an
// IPv6 ADDR in brackets), into the addresses to dial for each
// "host:port"; an entry it cannot read exits 49, as curl exits.
func (o *httpOptions) parseResolve() (map[string][]string, error) {
	if len(o.resolve) == 0 {
		return nil, nil
	}
	m := map[string][]string{}
	for _, e := range o.resolve {
		host, rest, ok1 := strings.Cut(e, ":")
		port, addrs, ok2 := strings.Cut(rest, ":")
		n, perr := strconv.Atoi(port)
		if !ok1 || !ok2 || host == "" || perr != nil || n < 1 || n > 65535 || addrs == "" {
			return nil, o.failWith(curlBadResolve, fmt.Sprintf("couldn't parse --resolve entry %q: want HOST:PORT:ADDR[,ADDR...], e.g. example.com:443:127.0.0.1", e))
		}
		key := strings.ToLower(net.JoinHostPort(host, port))
		for _, a := range strings.Split(addrs, ",") {
			ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"))
			if ip == nil {
				return nil, o.failWith(curlBadResolve, fmt.Sprintf("couldn't parse --resolve entry %q: %q is not an IP address", e, a))
			}
			m[key] = append(m[key], net.JoinHostPort(ip.String(), port))
		}
	}
	return m, nil
}

// parseProxy reads -x's proxy URL (http:// when it names no scheme, as
// curl reads it); one it cannot read is a bad usage.
func (o *httpOptions) parseProxy() error {
	if o.proxy == "" {
		return nil
	}
	raw := o.proxy
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return cli.Usagef("-x %q: want a proxy such as http://proxy.example:3128 or 127.0.0.1:3128", o.proxy)
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return cli.Usagef("-x %q: proxy scheme %q is not supported: want http, https or socks5", o.proxy, u.Scheme)
	}
	o.proxyURL = u
	return nil
}

// proxyFor is the proxy of req: -x's, unless --noproxy names req's host
// (a name, a domain it ends in, or "*" for every host).
func (o *httpOptions) proxyFor(req *http.Request) (*url.URL, error) {
	host := strings.ToLower(req.URL.Hostname())
	for _, n := range strings.Split(o.noProxy, ",") {
		n = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(n), "."))
		if n == "*" || n != "" && (host == n || strings.HasSuffix(host, "."+n)) {
			return nil, nil
		}
	}
	return o.proxyURL, nil
}

// rootCAs returns the certificates --cacert trusts, or nil for the
// system's; a file that holds none exits 77, as curl exits.
func (o *httpOptions) rootCAs() (*x509.CertPool, error) {
	if o.caCert == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(o.caCert)
	if err != nil {
		return nil, o.failWith(curlCACert, fmt.Sprintf("error setting certificate file: %s: %v", o.caCert, err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, o.failWith(curlCACert, fmt.Sprintf("error setting certificate file: %s: no PEM certificate in it", o.caCert))
	}
	return pool, nil
}

// createDirs makes the folders of -o's file, as --create-dirs asks (mode
// 0750, as curl makes them); a folder it cannot make exits 23.
func (o *httpOptions) createDirs() error {
	if !o.mkdirs || o.output == "" || o.output == "-" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(o.output), 0o750); err != nil {
		return o.failWith(curlWriteError, fmt.Sprintf("--create-dirs: cannot make the folder of %s: %v", o.output, err))
	}
	return nil
}

// baseTransport is the transport each attempt goes through: net/http's
// defaults without compression (curl asks for none; --compressed asks
// itself), with -k, --cacert's roots, --connect-timeout, -4 or -6, and
// --http1.1 applied. Its connections record what they read when connTrace
// asks (recordConn).
func (o *httpOptions) baseTransport(roots *x509.CertPool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	if o.insecure || roots != nil {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: o.insecure, RootCAs: roots}
	}
	t.TLSClientConfig = o.tlsConfig(t.TLSClientConfig)
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	switch {
	case o.noKeepalive:
		dialer.KeepAlive = -1
	case o.keepaliveTime > 0:
		dialer.KeepAlive = time.Duration(o.keepaliveTime) * time.Second
	}
	if d := o.connectTimeout.D; d > 0 {
		dialer.Timeout = d
		t.TLSHandshakeTimeout = d
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if o.unixSocket != "" {
			return dialer.DialContext(ctx, "unix", o.unixSocket)
		}
		if o.network != "" {
			network = o.network
		}
		addr = o.connectAddr(addr)
		to, ok := o.resolved[strings.ToLower(addr)]
		if !ok {
			to = []string{addr}
		}
		var err error
		for _, a := range to {
			var c net.Conn
			if c, err = dialer.DialContext(ctx, network, a); err == nil {
				return c, nil
			}
		}
		return nil, err
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &recordConn{Conn: c}, nil
	}
	// HTTPS is set up here rather than by net/http, so that an HTTP/1.1
	// connection's plain bytes can be recorded too (an HTTP/2 one is
	// handed over as the *tls.Conn net/http wants for HTTP/2).
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return tlsDial(ctx, t, dial, network, addr)
	}
	if o.proxy != "" {
		t.Proxy = o.proxyFor
	}
	if o.unixSocket != "" {
		t.Proxy = nil // as curl: a Unix socket is reached directly
	}
	if o.http11 {
		t.ForceAttemptHTTP2 = false
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return t
}

// tlsDial makes a TLS connection to addr as net/http would (t's
// TLSClientConfig, as net/http set up its protocols, the server name from
// addr, t's TLSHandshakeTimeout, the handshake's httptrace hooks), over a
// connection dial makes. Over HTTP/2 it returns the *tls.Conn, which
// net/http needs to speak HTTP/2; over HTTP/1.1, a recordConn around it.
func tlsDial(ctx context.Context, t *http.Transport, dial func(context.Context, string, string) (net.Conn, error), network, addr string) (net.Conn, error) {
	raw, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			raw.Close()
			return nil, err
		}
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	hctx := ctx
	if d := t.TLSHandshakeTimeout; d > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.TLSHandshakeStart != nil {
		trace.TLSHandshakeStart()
	}
	err = tc.HandshakeContext(hctx)
	if trace != nil && trace.TLSHandshakeDone != nil {
		trace.TLSHandshakeDone(tc.ConnectionState(), err)
	}
	if err != nil {
		raw.Close()
		if hctx.Err() != nil && ctx.Err() == nil {
			return nil, errTLSHandshakeTimeout
		}
		return nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		return tc, nil
	}
	return &recordConn{Conn: tc}, nil
}

// errTLSHandshakeTimeout is tlsDial's error when TLSHandshakeTimeout
// (--connect-timeout) passed, as net/http's own: a timeout (exit 28).
var errTLSHandshakeTimeout = tlsTimeoutError{}

type tlsTimeoutError struct{}

func (tlsTimeoutError) Error() string   { return "net/http: TLS handshake timeout" }
func (tlsTimeoutError) Timeout() bool   { return true }
func (tlsTimeoutError) Temporary() bool { return true }
