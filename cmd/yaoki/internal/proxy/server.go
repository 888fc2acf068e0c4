package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
)

// Server routes each request to its route's reverse proxy. Make it with
// NewServer, set its exported fields, Load its routes, then serve it (it
// is an http.Handler); its methods are safe for concurrent use once it
// serves. Every route shares one pool of upstream connections.
type Server struct {
	// Observer, if not nil, hears every route's retry events. Set it
	// before Load.
	Observer event.Observer
	// Metrics, if not nil, follows every route's transport (yaoki/otel's
	// Observer.TrackTransport) while the route serves. Set it before Load.
	Metrics Tracker
	// Fleet, if not nil, shares every route's budget and breaker through
	// Redis (NewFleet). Set it before Load.
	Fleet *Fleet
	// ClientTimeout is how long the proxy waits for a client to send the
	// next bytes of its request's body, or to take a write of the answer
	// (at most 32 KiB, once the socket's buffers are full), before it
	// gives the client up: the connection is closed and the upstream
	// attempt cancelled.
	// A request is served however long it takes as long as bytes move; the
	// wait for the upstream's answer is the policy's (AttemptTimeout,
	// MaxElapsed), not this. An Upgrade (WebSocket) is not bounded. Zero
	// (the zero Server): no bound; NewServer sets DefaultClientTimeout.
	// Set it before serving.
	ClientTimeout time.Duration
	// NetHTTPOnly makes every route's requests go through net/http's
	// server and httputil.ReverseProxy, none through the front end of
	// Listener (yaoki proxy --net-http). Set it before Load.
	NetHTTPOnly bool

	front   atomic.Pointer[front] // set by Listener
	date    dateCache
	routes  atomic.Pointer[proxyRoutes]
	base    http.RoundTripper // shared by every route: one connection pool (newUpstreamTransport)
	stderr  io.Writer
	buffers *bufferPool
	// writers holds the relayWriters of requests that have been served.
	writers  sync.Pool
	ready    atomic.Bool
	inFlight atomic.Int64
}

// Tracker follows a transport for the metrics until the function it
// returns is called; yaoki/otel's *Observer is one.
type Tracker interface {
	TrackTransport(t *httpretry.Transport) (untrack func())
}

// NewServer returns a Server without routes that writes what it does
// (reloads, shutdowns, Redis errors) on stderr.
func NewServer(stderr io.Writer) *Server {
	return &Server{base: newUpstreamTransport(), stderr: stderr, buffers: &bufferPool{}, ClientTimeout: DefaultClientTimeout}
}

// Load builds the routes of cfg and serves them from the next request on.
// An error names the route it is about; the routes served before stay.
func (s *Server) Load(cfg *Config) error {
	rs, err := s.build(cfg)
	if err != nil {
		return err
	}
	if old := s.routes.Swap(rs); old != nil {
		old.close()
	}
	return nil
}

// Close closes the routes served: their fleet syncs stop and their
// metrics are no longer followed.
func (s *Server) Close() {
	if rs := s.routes.Load(); rs != nil {
		rs.close()
	}
}

// MarkReady makes /readyz answer that the proxy is ready, until Shutdown.
func (s *Server) MarkReady() { s.ready.Store(true) }

// ServeHTTP sends r on through the route that takes it; a request no route
// takes is answered 404 with a problem (no_route).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	closes := r.TransferEncoding != nil || (r.ProtoMajor == 1 && r.ProtoMinor == 0)
	if closes {
		// RFC 9112 §6.3: a request with both Transfer-Encoding and
		// Content-Length is read as chunked (net/http removes the
		// Content-Length), and its connection MUST be closed after the
		// answer: an intermediary in front that framed it by its
		// Content-Length takes the bytes after the chunked body for the
		// body, which the next request would otherwise be read from
		// (request smuggling). §6.1: an HTTP/1.0 request with
		// Transfer-Encoding has faulty framing (net/http reads it by its
		// Content-Length), and its connection MUST be closed after it too.
		// net/http removes these fields before the handler sees the
		// request, so such requests cannot be told from a chunked one, or
		// from any HTTP/1.0 one: the connection of each is closed after
		// its answer (HTTP/1.0 connections are closed unless the client
		// asks to keep them).
		w.Header()["Connection"] = connClose
	}
	if vs, ok := r.Header["Via"]; ok {
		if n := yaokiHops(vs); n >= maxYaokiHops {
			w.Header().Set(header.DoNotRetry, "true")
			writeProxyProblem(w, proxyProblem{Status: http.StatusLoopDetected, Reason: "loop_detected",
				Detail: fmt.Sprintf("proxy: %s %s has passed through %d yaoki proxies (its Via): an upstream leads back to a proxy it went through", r.Method, r.URL.Path, n)}, -1)
			return
		}
	}
	if r.Method == http.MethodConnect {
		// A client that takes the proxy for a forward proxy: no upstream
		// can read the CONNECT it would be sent as (its target has become
		// the route's path), and a tunnel it answered would not be one.
		writeProxyProblem(w, proxyProblem{Status: http.StatusNotImplemented, Reason: "connect_not_supported",
			Detail: fmt.Sprintf("proxy: CONNECT %s: yaoki proxy is a reverse proxy, not a forward one: send requests to it as to the upstream (GET /path), not through it (HTTPS_PROXY)", r.Host)}, -1)
		return
	}
	if n, ok := maxForwards(r); ok && n == 0 {
		// RFC 9110 §7.6.2: the request ends here, answered by the proxy
		// as its final recipient.
		if r.Method == http.MethodOptions {
			w.Header()["Content-Length"] = []string{"0"}
			w.WriteHeader(http.StatusOK)
			return
		}
		writeProxyProblem(w, proxyProblem{Status: http.StatusNotImplemented, Reason: "trace_not_supported",
			Detail: "proxy: TRACE with Max-Forwards: 0 ends at yaoki proxy, which does not reflect requests"}, -1)
		return
	}
	if hasDotDotSegment(r.URL.Path) {
		// Matched against a route's prefix and resolved by the upstream,
		// a ".." would reach what the route does not take (RFC 3986
		// §5.2.4); clients resolve them before sending (curl, browsers).
		w.Header().Set(header.DoNotRetry, "true")
		writeProxyProblem(w, proxyProblem{Status: http.StatusBadRequest, Reason: "bad_request_path",
			Detail: fmt.Sprintf("proxy: %s %s: the path has a \"..\" segment (written as is, percent-encoded, or after an encoded slash or a backslash), which would leave the route's prefix upstream: send the path resolved", r.Method, r.URL.EscapedPath())}, -1)
		return
	}
	pr := s.routes.Load().match(r)
	if pr == nil {
		writeProxyProblem(w, proxyProblem{Status: http.StatusNotFound, Reason: "no_route",
			Detail: fmt.Sprintf("proxy: no route takes %s %s (host %s)", r.Method, r.URL.Path, requestHost(r))}, -1)
		return
	}
	var body *clientBody
	if r.Body != nil && r.Body != http.NoBody {
		// So that an attempt that fails because the client's body could
		// not be read is answered as the client's fault (problemFor).
		body = &clientBody{rc: r.Body}
		r.Body = body
	}
	rw, _ := s.writers.Get().(*relayWriter)
	if rw == nil {
		rw = new(relayWriter)
	}
	rw.ResponseWriter, rw.http10, rw.close = w, !r.ProtoAtLeast(1, 1), closes
	if _, up := r.Header["Upgrade"]; s.ClientTimeout > 0 && !up {
		// An upgraded connection (a WebSocket) is the client's and the
		// upstream's to keep, idle as long as they like: no deadline is
		// left on it.
		if c, ok := w.(connDeadlines); ok {
			rw.wd = idleDeadline{conn: c, write: true, idle: s.ClientTimeout}
			if body != nil {
				body.rd = idleDeadline{conn: c, idle: s.ClientTimeout}
			}
		}
	}
	defer func() {
		if body != nil {
			body.done.Store(true)
		}
		if rw.http10 {
			if v := recover(); v != nil {
				// httputil.ReverseProxy panics with ErrAbortHandler when
				// the answer is cut (the upstream's connection failed, or
				// sent nothing for the read timeout), and the server then
				// closes the connection. An HTTP/1.0 client reads an
				// answer of unknown length to the connection's end, so it
				// would take the part it got for the whole: it gets a
				// reset instead.
				if v == http.ErrAbortHandler && !rw.sized() {
					resetConn(w)
				}
				*rw = relayWriter{}
				s.writers.Put(rw)
				panic(v)
			}
		}
		// The server writes what is left of the answer once the
		// handler returns: under a deadline that is idle from now.
		rw.wd.extend()
		*rw = relayWriter{}
		s.writers.Put(rw)
	}()
	if _, ok := r.Header[header.AttemptCount]; ok {
		// The client retries: the route's loop makes one attempt.
		pr.layered.ServeHTTP(rw, r)
		return
	}
	pr.proxy.ServeHTTP(rw, r)
}

// maxForwards returns the Max-Forwards of a TRACE or OPTIONS request
// (RFC 9110 §7.6.2), the only methods it counts hops for; ok is false
// without one, or with one that is not a number.
func maxForwards(r *http.Request) (n int, ok bool) {
	if r.Method != http.MethodOptions && r.Method != http.MethodTrace {
		return 0, false
	}
	v, ok := r.Header["Max-Forwards"]
	if !ok || len(v) != 1 {
		return 0, false
	}
	n, err := strconv.Atoi(textproto.TrimString(v[0]))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// hasDotDotSegment reports whether path (decoded: a percent-encoded dot
// or slash is one) has a ".." segment, segments split at '/' and at '\\'
// (which some servers take for a slash).
func hasDotDotSegment(path string) bool {
	for i := 0; ; {
		j := strings.IndexAny(path[i:], "/\\")
		if j < 0 {
			return path[i:] == ".."
		}
		if path[i:i+j] == ".." {
			return true
		}
		i += j + 1
	}
}

// maxYaokiHops is how many yaoki proxies a request may have passed
// through (the Via entries they added) before one refuses it as a loop: a
// route whose upstream leads back to the proxy (its own listen address)
// would otherwise send each request round until the process had no file
// descriptors left. Chains of sidecars and shared proxies are far
// shorter.
const maxYaokiHops = 10

// yaokiHops counts the entries of a Via field (RFC 9110 §7.6.3: protocol,
// received-by, comment) whose received-by is yaoki, as addVia writes
// them.
func yaokiHops(via []string) int {
	n := 0
	for _, v := range via {
		for entry := range strings.SplitSeq(v, ",") {
			_, by, ok := strings.Cut(textproto.TrimString(entry), " ")
			if !ok {
				continue
			}
			if i := strings.IndexByte(by, ' '); i >= 0 {
				by = by[:i]
			}
			if by == "yaoki" {
				n++
			}
		}
	}
	return n
}

// relayWriter is the ResponseWriter a route's reverse proxy writes to. It
// gives the 1xx answers that httputil.ReverseProxy relays as they come
// (through its ClientTrace.Got1xxResponse, which copies the upstream's
// fields as they are) the rules of the final answer: their hop-by-hop
// fields stay with the upstream (RFC 9110 §7.6.1). And it relays an answer
// with the Content-Type its upstream gave, or none: a key without values,
// set when the final answer's header is written (httputil.ReverseProxy
// clears the header after each 1xx), keeps net/http's server from adding
// one it guessed from the first bytes (§7.7: a proxy does not transform
// what it relays). The proxy's own answers set theirs. An HTTP/1.0 client
// gets no 1xx answer (§15.2), and any other at most max1xx per request. Pooled
// (Server.writers): a request costs no allocation for it.
type relayWriter struct {
	http.ResponseWriter
	final    bool         // the final answer's header is written
	http10   bool         // the client speaks HTTP/1.0, which has no 1xx answers
	close    bool         // the final answer closes the connection (a chunked or HTTP/1.0 request, see ServeHTTP)
	n1xx     int          // the 1xx answers relayed
	bytes1xx int          // the size of their headers
	wd       idleDeadline // the write deadline of Server.ClientTimeout, moved before each write
}

func (w *relayWriter) WriteHeader(code int) {
	w.wd.extend() // a 1xx is written at once
	h := w.ResponseWriter.Header()
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		size := len("HTTP/1.1 100 \r\n\r\n")
		for k, vs := range h {
			for _, v := range vs {
				size += len(k) + len(": \r\n") + len(v)
			}
		}
		if w.http10 || w.n1xx >= max1xx || w.bytes1xx+size > maxResponseHeaderBytes {
			// RFC 9110 §15.2: never to an HTTP/1.0 client, which would
			// read it as the answer. And at most max1xx to any, and
			// headers of at most maxResponseHeaderBytes together: the
			// attempt that sends more is ended (the fallback transport
			// may relay one or two past the bound before it ends), and
			// the retries may bring more.
			return
		}
		w.n1xx++
		w.bytes1xx += size
		removeHopByHop(h)
	} else if !w.final {
		w.final = true
		if _, ok := h["Content-Type"]; !ok {
			h["Content-Type"] = nil
		}
		if w.close {
			// Set again: a 1xx before took the header's hop-by-hop
			// fields, and httputil.ReverseProxy cleared it after.
			h["Connection"] = connClose
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *relayWriter) Write(p []byte) (int, error) {
	if !w.final {
		w.WriteHeader(http.StatusOK) // as net/http does on a Write before WriteHeader
	}
	w.wd.extend()
	return w.ResponseWriter.Write(p)
}

// sized reports whether the final answer's header, written, has a
// Content-Length: a client sees an answer cut short of it.
func (w *relayWriter) sized() bool {
	_, ok := w.ResponseWriter.Header()["Content-Length"]
	return w.final && ok
}

// resetConn ends the connection of w's request with a reset (a TCP RST,
// where the connection is TCP) rather than a close, so that its client's
// read fails: the answer it was reading was cut.
func resetConn(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return // the server closes it
	}
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// Unwrap returns the server's ResponseWriter, for http.ResponseController
// (flushes, the hijack of an upgraded connection).
func (w *relayWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// connClose is the value of a Connection field that closes the
// connection after the answer. Shared: header values are not written in
// place.
var connClose = []string{"close"}

// hopByHop are the hop-by-hop fields of RFC 9110 §7.6.1 and the ones
// httputil.ReverseProxy removes besides: those a proxy does not relay.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop removes from h the fields that its Connection names and
// the hopByHop fields.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				delete(h, http.CanonicalHeaderKey(name))
			}
		}
	}
	for _, name := range hopByHop {
		delete(h, name)
	}
}

// build makes the routes of cfg.
func (s *Server) build(cfg *Config) (*proxyRoutes, error) {
	ctx, stop := context.WithCancel(context.Background())
	rs := &proxyRoutes{source: cfg.Source, stop: stop}
	for _, rc := range cfg.Routes {
		pr, err := newProxyRoute(rc, s.base, s, ctx)
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("%s (%s): %w", rc.Name, rc.At, err)
		}
		rs.list = append(rs.list, pr)
		if s.Metrics != nil {
			rs.retire = append(rs.retire, s.Metrics.TrackTransport(pr.rt))
		}
	}
	return rs, nil
}

// Reload loads the config file again and serves its routes from the next
// request on; the requests in flight finish on the routes they started
// with. A file that does not load leaves the routes as they are, and
// stderr says why.
func (s *Server) Reload(file string) {
	cfg, err := LoadConfig(file)
	var rs *proxyRoutes
	if err == nil {
		rs, err = s.build(cfg)
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "yaoki proxy: SIGHUP: %s not loaded, the routes loaded before stay:\n%v\n", file, err)
		return
	}
	old := s.routes.Swap(rs)
	old.close()
	fmt.Fprintf(s.stderr, "yaoki proxy: SIGHUP: reloaded %s: %d route%s\n", file, len(rs.list), cli.Plural(len(rs.list)))
}

// Shutdown stops srv, which serves s, from accepting, waits for the calls
// in flight (with their retries) up to grace, then cuts those left and
// says how many in its error.
func (s *Server) Shutdown(srv *http.Server, grace time.Duration) error {
	s.ready.Store(false)
	n := s.inFlight.Load()
	fmt.Fprintf(s.stderr, "yaoki proxy: stopping: %d call%s in flight, %v to finish\n", n, cli.Plural(int(n)), grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	left := int64(-1) // the calls in flight when the grace passed
	if f := s.front.Load(); f != nil {
		f.Close()
		n, ferr := f.wait(ctx)
		if ferr != nil {
			left = n // counted before the front end cut its calls
		}
		if err == nil {
			err = ferr
		}
	}
	if ci, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		defer ci.CloseIdleConnections()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if left < 0 {
			left = s.inFlight.Load()
		}
		_ = srv.Close()
		return fmt.Errorf("proxy: --grace %v passed with %d call%s in flight: cut", grace, left, cli.Plural(int(left)))
	}
	fmt.Fprintln(s.stderr, "yaoki proxy: stopped: every call finished")
	return nil
}

// MountAdmin adds /healthz and /readyz to the admin listener's mux.
func (s *Server) MountAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: starting or stopping")
			return
		}
		rs := s.routes.Load()
		fmt.Fprintf(w, "ready: %d route%s from %s\n", len(rs.list), cli.Plural(len(rs.list)), rs.source)
	})
}
