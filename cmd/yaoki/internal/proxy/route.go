package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/internal/problem"
	"github.com/yaoki-go/yaoki/layer"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
)

// proxyRoute is a route ready to serve: its retrying transport and the
// reverse proxy that sends through it.
type proxyRoute struct {
	cfg      *Route
	rt       *httpretry.Transport
	proxy    *httputil.ReverseProxy
	layered  http.Handler   // proxy under layer.Middleware, for clients that retry
	statuses [600]bool      // the statuses its transport retries
	maxHint  time.Duration  // the longest hint its policy waits for (MaxRetryAfter, and MaxElapsed if shorter)
	obs      event.Observer // hears the answers cut mid-body (relayedBody); nil: nobody
	front    *frontRoute    // what the front end needs to serve its requests; nil: it does not
}

// proxyRoutes is one loaded configuration: its routes in order, and what
// retiring it must undo.
type proxyRoutes struct {
	list   []*proxyRoute
	source string
	stop   context.CancelFunc // ends the fleet syncs of its guards
	retire []func()           // untracks its guards from the metrics
}

// match returns the first route that takes r, or nil.
func (rs *proxyRoutes) match(r *http.Request) *proxyRoute {
	host := ""
	for _, pr := range rs.list {
		if pr.cfg.Host != "" {
			if host == "" {
				host = requestHost(r)
			}
			if pr.cfg.Host != host {
				continue
			}
		}
		if pathMatches(pr.cfg.Path, r.URL.Path) {
			return pr
		}
	}
	return nil
}

// close retires a configuration that no new request will use.
func (rs *proxyRoutes) close() {
	if rs == nil {
		return
	}
	for _, f := range rs.retire {
		f()
	}
	if rs.stop != nil {
		rs.stop()
	}
}

// requestHost is r's Host without port, brackets or the trailing dot of
// a fully qualified name, in lower case.
func requestHost(r *http.Request) string {
	h := r.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
}

// newProxyRoute builds the transport and reverse proxy of rc over base;
// with --redis (s.Fleet), its guards are shared by the fleet, synced until
// ctx ends.
func newProxyRoute(rc *Route, base http.RoundTripper, s *Server, ctx context.Context) (*proxyRoute, error) {
	obs := s.Observer
	p := rc.Policy
	if rc.Doc != nil {
		p = rc.Doc.Policy(policy.Options{})
		if rc.Doc.Breaker != nil {
			br, err := routeBreaker(rc, obs)
			if err != nil {
				return nil, err
			}
			p.Env = p.Env.Clone()
			p.Env.Breaker = br
		}
	}
	attempts := base
	if u, ok := base.(*upstreamTransport); ok && rc.readTimeout() > 0 {
		attempts = &readTimeout{u: u, idle: rc.readTimeout()}
	}
	t := &httpretry.Transport{Base: attempts, Policy: p, IdempotencyKey: rc.KeyMode, MaxBufferedBody: rc.MaxBody, Hedge: rc.Hedge, Observer: obs}
	statuses := httpretry.DefaultStatuses()
	if rc.Doc != nil {
		statuses = policyfile.Statuses(rc.Doc)
		t.Statuses = statuses
	}
	if s.Fleet != nil {
		if err := s.Fleet.share(ctx, t, rc); err != nil {
			return nil, err
		}
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	pr := &proxyRoute{cfg: rc, rt: t, maxHint: cmp.Or(p.MaxRetryAfter, retry.DefaultMaxRetryAfter), obs: obs}
	if p.MaxElapsed > 0 {
		// A wait past the whole call's deadline is not waited for either.
		pr.maxHint = min(pr.maxHint, p.MaxElapsed)
	}
	for _, c := range statuses {
		pr.statuses[c] = true
	}
	up := rc.Upstream
	pr.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			setXForwarded(r)
			if b, ok := r.In.Body.(*clientBody); ok && len(r.Out.Trailer) > 0 {
				// httputil.ReverseProxy copied the client's trailer before
				// its body was read: the names announced, without their
				// values, which the body's end brings (clientBody.Read).
				// Hop-by-hop fields stay here, as in a header.
				for _, v := range r.In.Header["Connection"] {
					for name := range strings.SplitSeq(v, ",") {
						delete(r.Out.Trailer, http.CanonicalHeaderKey(textproto.TrimString(name)))
					}
				}
				for _, name := range hopByHop {
					delete(r.Out.Trailer, name)
				}
				b.trailerIn, b.trailerOut = r.In.Trailer, r.Out.Trailer
			}
			r.Out.Header["Via"] = addVia(r.In.Header["Via"], r.In.ProtoMajor, r.In.ProtoMinor)
			if n, ok := maxForwards(r.In); ok {
				r.Out.Header["Max-Forwards"] = []string{strconv.Itoa(n - 1)} // 0 was answered by ServeHTTP
			}
			if v := r.Out.Header["Upgrade"]; len(v) == 1 && strings.EqualFold(textproto.TrimString(v[0]), "h2c") {
				// HTTP/2 over cleartext is the connection's business (RFC
				// 9113 §3.1): the offer stops here, and the request is
				// served as any other, retried.
				delete(r.Out.Header, "Upgrade")
				delete(r.Out.Header, "Connection")
			}
			if _, up := r.Out.Header["Upgrade"]; !up && !layer.FromRetryingCaller(r.In) {
				// The number httpretry gives a first attempt, set in the
				// request the proxy owns: the first attempt is then sent
				// without a copy of the request and its header. A client
				// that retries keeps its own number: the proxy's one
				// attempt sends it on (httpretry.Transport.AttemptHeader).
				r.Out.Header[header.AttemptCount] = firstAttempt
			}
		},
		Transport:      &upgradeOrRetry{retrying: t, base: base},
		ModifyResponse: pr.relay,
		ErrorHandler:   pr.fail,
		BufferPool:     s.buffers,
	}
	if s.stderr != nil {
		// What it logs (an answer cut mid-body: the upstream's connection
		// failed, or sent nothing for the read timeout) goes where the
		// proxy's own messages go.
		pr.proxy.ErrorLog = log.New(s.stderr, "yaoki proxy: ", 0)
	}
	pr.layered = layer.Middleware(pr.proxy)
	if !s.NetHTTPOnly {
		var err error
		if pr.front, err = newFrontRoute(pr, p, base, s); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

// setXForwarded sets the X-Forwarded-For, X-Forwarded-Host and
// X-Forwarded-Proto fields of r.Out as httputil.ProxyRequest.SetXForwarded
// sets them, keeping the incoming X-Forwarded-For chain (which
// httputil.ReverseProxy removes before Rewrite) and appending the client to
// it. It writes the map directly: Header.Set checks each name and makes a
// slice for each value, where the values here take one allocation
// together and the protocol's is shared (header values are not written in
// place).
func setXForwarded(r *httputil.ProxyRequest) {
	h := r.Out.Header
	client, _, err := net.SplitHostPort(r.In.RemoteAddr)
	if err != nil {
		delete(h, "X-Forwarded-For")
		h["X-Forwarded-Host"] = []string{r.In.Host}
	} else {
		if prior := r.In.Header["X-Forwarded-For"]; len(prior) > 0 {
			client = strings.Join(prior, ", ") + ", " + client
		}
		vs := []string{client, r.In.Host}
		h["X-Forwarded-For"], h["X-Forwarded-Host"] = vs[0:1:1], vs[1:2:2]
	}
	if r.In.TLS == nil {
		h["X-Forwarded-Proto"] = protoHTTP
	} else {
		h["X-Forwarded-Proto"] = protoHTTPS
	}
}

// routeBreaker makes the breaker of a route whose policy document has one:
// named after the route's upstream host, as the metrics name the guards
// httpretry keeps per host (so that the breaker's state and its changes
// are one series, and a fleet shares it per host), and reporting its
// changes to obs (nil: to nobody).
func routeBreaker(rc *Route, obs event.Observer) (*breaker.Breaker, error) {
	c := *rc.Doc.Breaker
	c.Name = rc.Upstream.Host
	if c.Observer == nil {
		c.Observer = obs
	}
	return breaker.New(c)
}

// addVia returns the values of a Via header (RFC 9110 §7.6.3) with this
// proxy's entry added for a message received in HTTP/major.minor. A
// message without Via gets a shared slice for the common versions: header
// values are not written in place (an append makes a new array).
func addVia(vs []string, major, minor int) []string {
	if len(vs) == 0 {
		switch {
		case major == 1 && minor == 1:
			return via11
		case major == 2:
			return via2
		}
	}
	v := strconv.Itoa(major) + "." + strconv.Itoa(minor) + " yaoki"
	if major == 2 {
		v = "2 yaoki"
	}
	return append(vs[:len(vs):len(vs)], v)
}

// The Via values of a message without Via, by version, the Attempt-Count
// value of a first attempt and the X-Forwarded-Proto values. Shared: header
// values are not written in place.
var (
	via11        = []string{"1.1 yaoki"}
	via2         = []string{"2 yaoki"}
	firstAttempt = []string{"1"}
	protoHTTP    = []string{"http"}
	protoHTTPS   = []string{"https"}
)

// upgradeOrRetry sends a request that asks for a protocol upgrade
// (WebSocket) once, straight to base: the connection it opens is handed
// over to the client and cannot be retried. Every other request goes
// through the retrying transport.
type upgradeOrRetry struct {
	retrying *httpretry.Transport
	base     http.RoundTripper
}

func (u *upgradeOrRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isUpgrade(req) {
		return u.retrying.RoundTrip(req)
	}
	resp, err := u.base.RoundTrip(req)
	if err != nil {
		// The transport's error alone ("EOF") says neither what was tried
		// nor why nothing followed.
		return nil, fmt.Errorf("proxy: %s %s: upgrade to %s, sent once (an upgrade is never retried): %w",
			req.Method, req.URL.Redacted(), req.Header.Get("Upgrade"), err)
	}
	return resp, nil
}

// isUpgrade reports whether req, a request the proxy sends, asks for a
// protocol upgrade (httputil.ReverseProxy keeps Upgrade only then).
func isUpgrade(req *http.Request) bool {
	_, ok := req.Header["Upgrade"]
	return ok
}

// relay adjusts an upstream answer before it is copied to the client (and
// watches its body for a cut and its trailer: watchBody): its Location, Content-Location
// and Link point the client through the
// proxy (clientLocation, clientLinks); when it carries a status this route retries and this proxy was the
// layer that retried (the client does not say it retries, and the request
// was not an upgrade, which is sent once), Do-Not-Retry tells the layers
// above that retrying again would multiply what was already tried.
func (pr *proxyRoute) relay(resp *http.Response) error {
	resp.Header["Via"] = addVia(resp.Header["Via"], resp.ProtoMajor, resp.ProtoMinor)
	for _, name := range [...]string{"Location", "Content-Location"} {
		if vs := resp.Header[name]; len(vs) == 1 {
			if v := clientLocation(pr.cfg.Upstream, vs[0]); v != vs[0] {
				resp.Header[name] = []string{v}
			}
		}
	}
	for i, v := range resp.Header["Link"] {
		resp.Header["Link"][i] = clientLinks(pr.cfg.Upstream, v) // the values read from the upstream are this answer's own
	}
	if c := resp.StatusCode; c < len(pr.statuses) && pr.statuses[c] && resp.Request != nil && !layer.FromRetryingCaller(resp.Request) &&
		mayRetry(resp.Request) && !pr.hintTooLong(resp) {
		resp.Header.Set(header.DoNotRetry, "true")
	}
	pr.watchBody(resp)
	return nil
}

// hintTooLong reports whether resp asks to wait longer than the route's
// policy waits (retry.Policy.MaxRetryAfter, or its whole MaxElapsed): the
// proxy stopped because it would not wait that long, not because its
// retries were spent, and a client that waits longer may come back as
// asked.
func (pr *proxyRoute) hintTooLong(resp *http.Response) bool {
	d, ok := httpretry.Hint(resp, time.Now())
	return ok && d > pr.maxHint
}

// mayRetry reports whether the proxy could send req, an attempt it made,
// more than once: not an upgrade, an idempotent method or an
// Idempotency-Key, and a body that was kept for the retries (httpretry
// gives the attempts of a kept body a GetBody; a body too long to keep was
// streamed once).
func mayRetry(req *http.Request) bool {
	if isUpgrade(req) {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	return httpretry.Idempotent(req.Method) || req.Header.Get(header.IdempotencyKey) != "" || req.Header.Get(header.XIdempotencyKey) != ""
}

// proxyProblem is the body of an answer the proxy makes itself: an RFC
// 9457 problem details object, sent by internal/problem as the
// idempotency middleware's are.
type proxyProblem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts,omitempty"`
}

// fail answers a request that got no upstream answer to relay: the
// reason, a status that says who failed (502 the upstream, 503 a guard of
// this proxy, 504 a deadline), Retry-After when the proxy knows when to
// come back, and Do-Not-Retry when the proxy's own retries ended.
func (pr *proxyRoute) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// The client went away: the attempt was cancelled, nobody reads
		// the answer. 499 is nginx's code for it, for whoever wraps the
		// handler with an access log.
		w.WriteHeader(499)
		return
	}
	p, wait, dnr := problemFor(err, layer.FromRetryingCaller(r))
	if dnr {
		w.Header().Set(header.DoNotRetry, "true")
	}
	writeProxyProblem(w, p, wait)
}

// problemFor turns the transport's error into the proxy's answer.
func problemFor(err error, retryingCaller bool) (p proxyProblem, retryAfter int, doNotRetry bool) {
	retryAfter = -1
	var ce *clientBodyError
	if errors.As(err, &ce) {
		// The client's fault, not the upstream's: not worth a retry.
		return proxyProblem{Status: http.StatusBadRequest, Reason: "bad_request_body", Detail: ce.Error()}, retryAfter, false
	}
	p = proxyProblem{Status: http.StatusBadGateway, Reason: "upstream_error", Detail: err.Error()}
	var he *httpretry.Error
	if errors.As(err, &he) {
		p.Attempts = he.Attempts
	}
	var re *retry.Error
	if !errors.As(err, &re) {
		if errors.Is(err, context.DeadlineExceeded) {
			p.Status, p.Reason = http.StatusGatewayTimeout, "upstream_timeout"
		}
		return p, retryAfter, false
	}
	p.Reason = re.Reason.Key()
	doNotRetry = true
	switch re.Reason {
	case retry.ReasonBreakerOpen, retry.ReasonHintTooLong:
		p.Status = http.StatusServiceUnavailable
		if re.Wait > 0 {
			retryAfter = int(math.Ceil(re.Wait.Seconds()))
		}
	case retry.ReasonBudgetExhausted, retry.ReasonRejectedLocally:
		p.Status = http.StatusServiceUnavailable
	case retry.ReasonDeadline:
		p.Status = http.StatusGatewayTimeout
	case retry.ReasonOuterLayer:
		// One attempt because the client retries: its retry may succeed.
		p.Status, doNotRetry = http.StatusServiceUnavailable, false
		if h, ok := retry.HintOf(re.Last); ok {
			retryAfter = int(math.Ceil(h.Seconds()))
		}
	case retry.ReasonPermanent:
		if he != nil && he.NotRetried != nil {
			if errors.Is(he.NotRetried, httpretry.ErrNotIdempotent) {
				p.Reason = "not_idempotent"
			} else {
				p.Reason = "body_not_replayable"
			}
			// The proxy could not retry; a client with a key could.
			doNotRetry = false
			if cli.IsTimeout(re.Last) {
				p.Status = http.StatusGatewayTimeout
			}
		}
	case retry.ReasonExhausted:
		if cli.IsTimeout(re.Last) {
			p.Status = http.StatusGatewayTimeout
		}
	}
	if retryingCaller && re.Reason != retry.ReasonOuterLayer {
		doNotRetry = true
	}
	return p, retryAfter, doNotRetry
}

// clientBody is the body of a request as the proxy reads it from its
// client. A read that fails (a malformed chunk, a body cut short) returns
// a *clientBodyError, which problemFor finds through the errors of
// httpretry and http.Transport that carry it: the client's fault, answered
// 400, where any other error of an attempt is the upstream's.
//
// With Server.ClientTimeout, each read first moves the connection's read
// deadline (rd), until the body's end: net/http then reads the connection
// to hear a client that goes away, without a deadline. A read from another
// goroutine (http.Transport sends a streamed body from its own) after the
// handler returned (done) moves nothing: the connection may be reading the
// next request by then, under the server's own deadlines.
type clientBody struct {
	rc   io.ReadCloser
	rd   idleDeadline
	eof  bool
	done atomic.Bool // ServeHTTP returned
	// trailerOut, the outgoing request's trailer (the names the client
	// announced, less the hop-by-hop ones), gets their values from
	// trailerIn, the incoming request's, which net/http fills at the
	// body's end: no field the client did not announce goes on.
	trailerIn, trailerOut http.Header
}

func (b *clientBody) Read(p []byte) (int, error) {
	if b.rd.conn != nil && !b.eof && !b.done.Load() {
		b.rd.extend()
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		if !b.eof {
			for k := range b.trailerOut {
				b.trailerOut[k] = b.trailerIn[k]
			}
		}
		b.eof = true
	case err != nil:
		err = &clientBodyError{err: err}
	}
	return n, err
}

func (b *clientBody) Close() error { return b.rc.Close() }

// clientBodyError is a failure to read a request's body from the client.
type clientBodyError struct{ err error }

func (e *clientBodyError) Error() string {
	return "proxy: the request's body could not be read from the client: " + e.err.Error()
}

func (e *clientBodyError) Unwrap() error { return e.err }

// writeProxyProblem writes p as application/problem+json, with
// Retry-After when retryAfter ≥ 0.
func writeProxyProblem(w http.ResponseWriter, p proxyProblem, retryAfter int) {
	p.Type = "about:blank"
	p.Title = http.StatusText(p.Status)
	problem.Write(w, p.Status, p, retryAfter)
}

// bufferPool lends the reverse proxies their 32 KiB copy buffers, so that
// a response does not cost one. It keeps them as pointers to their
// arrays, which a sync.Pool holds without an allocation, where a slice
// put in it would cost one for its header.
type bufferPool struct{ p sync.Pool }

// copyBufferSize is the length of the buffers of bufferPool, as
// httputil.ReverseProxy makes its own.
const copyBufferSize = 32 << 10

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBufferSize]byte); ok {
		return v[:]
	}
	return make([]byte, copyBufferSize)
}

// Put keeps buf if it is one of bufferPool's size (httputil.ReverseProxy
// gives back what Get lent).
func (b *bufferPool) Put(buf []byte) {
	if len(buf) == copyBufferSize {
		b.p.Put((*[copyBufferSize]byte)(buf))
	}
}

// clientLocation returns a Location (or Content-Location) value of an
// answer from the upstream up as the client must follow it: a reference
// into up (its scheme, host and port, and under its base path) becomes
// the path the client asks the proxy for, which the proxy sends to the
// same place (the base path and the client's path joined, as
// httputil.ProxyRequest.SetURL joins them). Without this, a path written
// in the upstream's space (/v2/x) came back through the proxy as
// /v2/v2/x, and an absolute URL took the client past the proxy. Any other
// value (another host, outside the base path, a relative path, a form
// that does not parse) is returned as it is.
func clientLocation(up *url.URL, v string) string {
	rest := v
	if !strings.HasPrefix(v, "/") {
		scheme, after, ok := strings.Cut(v, "://")
		if !ok || !strings.EqualFold(scheme, up.Scheme) {
			return v
		}
		end := strings.IndexAny(after, "/?#")
		if end < 0 {
			end = len(after)
		}
		if !sameHostPort(after[:end], up.Host, up.Scheme) {
			return v
		}
		rest = after[end:]
	} else if strings.HasPrefix(v, "//") {
		return v // scheme-relative: rare, and its scheme is the client's
	}
	base := strings.TrimSuffix(up.EscapedPath(), "/")
	p, ok := strings.CutPrefix(rest, base)
	if !ok || !strings.HasPrefix(p, "/") {
		return v // outside the base path, or its bare root: no client path leads there
	}
	return p
}

// sameHostPort reports whether the authorities a and b, of URLs of the
// scheme, name the same host and port (a port left out is the scheme's).
func sameHostPort(a, b, scheme string) bool {
	port := ":80"
	if strings.EqualFold(scheme, "https") {
		port = ":443"
	}
	a, b = strings.TrimSuffix(a, port), strings.TrimSuffix(b, port)
	return strings.EqualFold(a, b)
}

// clientLinks returns a Link field value (RFC 8288: <URI-reference>;
// parameters, separated by commas) with the URI of each link rewritten by
// clientLocation, so that a link into the upstream (a paginated API's next
// page) is followed through the proxy. The parameters, quoted strings
// included, are kept as they came, and so is everything from the first
// text that is not a link on.
func clientLinks(up *url.URL, v string) string {
	var b strings.Builder
	copied := 0 // v[:copied] is in b
	for i := 0; i < len(v); {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		if i == len(v) || v[i] != '<' {
			break
		}
		end := strings.IndexByte(v[i+1:], '>')
		if end < 0 {
			break
		}
		ref := v[i+1 : i+1+end]
		if to := clientLocation(up, ref); to != ref {
			b.WriteString(v[copied : i+1])
			b.WriteString(to)
			copied = i + 1 + end
		}
		// The parameters, to the comma that ends this link.
		quoted := false
		for i += end + 2; i < len(v) && (quoted || v[i] != ','); i++ {
			switch {
			case quoted && v[i] == '\\':
				i++
			case v[i] == '"':
				quoted = !quoted
			}
		}
		i++
	}
	if copied == 0 {
		return v
	}
	b.WriteString(v[copied:])
	return b.String()
}
