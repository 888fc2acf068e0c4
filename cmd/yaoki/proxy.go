package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
)

type proxyOptions struct {
	listen   string
	upstream string
	config   string
	redisURL string
	grace    seconds
	key      string
	maxBody  string
	pf       policyFlags
	hedge    hedgeFlags
	obs      observeFlags
}

func newProxyCmd() *cobra.Command {
	o := &proxyOptions{grace: seconds{30 * time.Second}}
	cmd := &cobra.Command{
		Use:   "proxy (--upstream URL | --config FILE) [flags]",
		Short: "A reverse proxy that applies yaoki's retry policy to every call through it",
		Long: `proxy is a reverse proxy (a sidecar) in front of one or more upstream APIs: each
request that passes through it is sent with yaoki's retrying HTTP client
(package httpretry), so that a service in any language gets the toolkit's
retries, Retry-After handling, retry budget and breaker.

--upstream URL serves one upstream, with the policy of the policy flags;
--config FILE serves the routes of a YAML file (see docs/proxy.md): each
route takes a path prefix or a host to an upstream URL, with its own policy
(a Step Functions Retry document), idempotency_key, max_buffered_body and
hedge.

What it does with a request: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are
retried on 408, 429, 500, 502, 503, 504 and connection failures; POST and
PATCH only with an Idempotency-Key (--idempotency-key auto adds one to those
that have none). Bodies up to --max-buffered-body are kept for the retries;
larger ones are streamed once and not retried. Answers stream back as they
come (server-sent events are flushed event by event). Hop-by-hop headers are
dropped as RFC 9110 says; an Upgrade (WebSocket) is passed through once,
without retries. A client that goes away cancels the upstream attempt.
With --hedge-after (or a route's hedge), a request that is safe to send
twice and has no answer after the delay is sent again while the first
attempt runs; the first answer wins, within the hedge budget of package
hedge (5 % more requests by default).

Each attempt carries Attempt-Count; a client that sends Attempt-Count itself
retries, and then the proxy makes one attempt per request. When the proxy's
own retries end on a retryable status, it relays the last answer with
Do-Not-Retry: true. When there is no answer to relay, the proxy answers
itself with application/problem+json: 502 (upstream unreachable), 503
(budget exhausted, breaker open: with Retry-After when it knows when), 504
(a deadline passed), with the reason as a word.

--redis URL shares the retry budgets and breakers with every proxy using
the same Redis. --admin-addr serves /metrics (Prometheus), /healthz and
/readyz. SIGTERM (or SIGINT) stops accepting and lets the calls in flight,
and their retries, finish within --grace; SIGHUP reloads --config, keeping
the loaded routes if the new file is invalid.
` + policyFlagsHelp,
		Example: `  # one upstream, the default policy, metrics on 127.0.0.1:9464
  yaoki proxy --listen 127.0.0.1:8080 --upstream https://api.partner.example --admin-addr 127.0.0.1:9464

  # the routes of a file; a budget and breaker shared through Redis
  yaoki proxy --config proxy.yaml --redis redis://127.0.0.1:6379/0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve the proxy on (port 0: any free port; the URL is printed on stdout)")
	f.StringVar(&o.upstream, "upstream", "", "the one upstream URL, e.g. https://api.partner.example")
	f.StringVar(&o.config, "config", "", "a YAML file of routes (reloaded on SIGHUP)")
	f.StringVar(&o.redisURL, "redis", "", "share retry budgets and breakers through this Redis, e.g. redis://127.0.0.1:6379/0")
	f.Var(&o.grace, "grace", "on SIGTERM, how long the calls in flight may take to finish")
	f.StringVar(&o.key, "idempotency-key", "", "with --upstream: auto adds an Idempotency-Key to each POST and PATCH that has none (default off)")
	f.StringVar(&o.maxBody, "max-buffered-body", "", "with --upstream: largest request body kept for retries, e.g. 64KiB (default 1MiB; -1: never)")
	f.StringVar(&o.obs.metricsAddr, "admin-addr", "", "serve /metrics, /healthz and /readyz on this address (port 0: any free port)")
	f.StringVar(&o.obs.logFormat, "log-format", "", "log retries, give-ups and breaker changes on stderr as structured records: text or json")
	o.pf.register(f)
	o.hedge.register(f)
	return cmd
}

// routes returns the routes the flags ask for.
func (o *proxyOptions) routes(cmd *cobra.Command) (*proxyConfig, error) {
	changed := cmd.Flags().Changed
	switch {
	case o.config != "" && o.upstream != "":
		return nil, usagef("--config and --upstream cannot be combined: give the upstream as a route of the file, or drop --config")
	case o.config == "" && o.upstream == "":
		return nil, usagef("proxy needs --upstream URL or --config FILE")
	case o.config != "":
		for _, name := range []string{"idempotency-key", "max-buffered-body", "policy", "max-attempts", "max-time", "base",
			"throttle-base", "cap", "multiplier", "jitter", "attempt-timeout", "max-retry-after", "hedge-after", "max-hedges"} {
			if changed(name) {
				return nil, usagef("--%s cannot be combined with --config: set it per route in the file (policy, idempotency_key, max_buffered_body, hedge)", name)
			}
		}
		cfg, err := loadProxyConfig(o.config)
		if err != nil {
			return nil, usagef("%v", err)
		}
		return cfg, nil
	}
	u, err := parseUpstream(o.upstream)
	if err != nil {
		return nil, usagef("--upstream %v", err)
	}
	cp, err := o.pf.build(cmd)
	if err != nil {
		return nil, err
	}
	hc, err := o.hedge.fixed(cmd)
	if err != nil {
		return nil, err
	}
	rc := &routeConfig{name: "--upstream", at: "--upstream", upstream: u, policy: cp.retry, doc: cp.doc, policySource: cp.source, hedge: hc}
	switch o.key {
	case "auto":
		rc.keyMode = httpretry.KeyAuto
	case "", "off":
		if o.key == "" && cp.doc != nil && cp.doc.IdempotencyKey == "auto" {
			rc.keyMode = httpretry.KeyAuto
		}
	default:
		return nil, usagef("--idempotency-key %q: want auto or off", o.key)
	}
	if o.maxBody != "" {
		if rc.maxBody, err = parseByteSize(o.maxBody); err != nil {
			return nil, usagef("--max-buffered-body %v", err)
		}
	}
	return &proxyConfig{routes: []*routeConfig{rc}, source: "--upstream"}, nil
}

func (o *proxyOptions) run(cmd *cobra.Command) error {
	cfg, err := o.routes(cmd)
	if err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("--listen %q: want HOST:PORT such as 127.0.0.1:8080 (port 0: any free port)", o.listen)
	}
	stderr := cmd.ErrOrStderr()
	s := &proxyServer{base: newUpstreamTransport(), stderr: stderr, buffers: &bufferPool{}}
	if o.redisURL != "" {
		if s.fleet, err = newProxyFleet(o.redisURL, stderr); err != nil {
			return err
		}
		defer s.fleet.close()
	}
	obs, err := o.obs.startWith(cmd, "yaoki proxy", s.mountAdmin)
	if err != nil {
		return err
	}
	defer obs.stop()
	s.obs = obs
	rs, err := s.build(cfg)
	if err != nil {
		return exit(1, fmt.Sprintf("proxy: %v", err))
	}
	s.routes.Store(rs)
	defer func() { s.routes.Load().close() }()

	setProxyGC()
	// The signals are ours before the first request can be served: a
	// SIGTERM or SIGHUP sent as soon as the proxy answers (by a test, an
	// orchestrator) must reach the shutdown or the reload, not Go's
	// default action, which ends the process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return exit(1, fmt.Sprintf("proxy: cannot listen on %s: %v (is the port taken? use port 0 for a free one)", o.listen, err))
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.ready.Store(true)
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s/\n", ln.Addr())
	fmt.Fprintf(stderr, "yaoki proxy: listening on http://%s/, %d route%s from %s\n", ln.Addr(), len(rs.list), plural(len(rs.list)), cfg.source)
	if obs.url != "" {
		fmt.Fprintf(stderr, "yaoki proxy: admin on http://%s (/metrics, /healthz, /readyz)\n", strings.TrimSuffix(strings.TrimPrefix(obs.url, "http://"), "/metrics"))
	}

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		select {
		case err := <-served:
			return exit(1, fmt.Sprintf("proxy: serving stopped: %v", err))
		case <-ctx.Done():
			return s.shutdown(srv, o.grace.d)
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				return s.shutdown(srv, o.grace.d)
			}
			if o.config == "" {
				fmt.Fprintln(stderr, "yaoki proxy: SIGHUP: nothing to reload (no --config)")
				continue
			}
			s.reload(o.config)
		}
	}
}

// proxyGCPercent is the garbage collector's target that the proxy runs
// with unless the environment sets GOGC: the heap may grow to five times
// what is live before a collection, instead of twice. A proxy's live heap
// is small (its connections' buffers and the requests in flight), so at
// GOGC's default of 100 it collects every few thousand requests, and the
// collections cost a large share of its CPU time; docs/proxy.md has the
// figures.
const proxyGCPercent = 400

// setProxyGC sets the garbage collector's target to proxyGCPercent, unless
// the environment sets GOGC (which then stands as it is).
func setProxyGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(proxyGCPercent)
	}
}

// proxyServer routes each request to its route's reverse proxy.
type proxyServer struct {
	routes  atomic.Pointer[proxyRoutes]
	base    http.RoundTripper // shared by every route: one connection pool (newUpstreamTransport)
	obs     *observing
	fleet   *proxyFleet // nil without --redis
	stderr  io.Writer
	buffers *bufferPool
	// writers holds the relayWriters of requests that have been served.
	writers  sync.Pool
	ready    atomic.Bool
	inFlight atomic.Int64
}

func (s *proxyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	pr := s.routes.Load().match(r)
	if pr == nil {
		writeProxyProblem(w, proxyProblem{Status: http.StatusNotFound, Reason: "no_route",
			Detail: fmt.Sprintf("proxy: no route takes %s %s (host %s)", r.Method, r.URL.Path, requestHost(r))}, -1)
		return
	}
	rw, _ := s.writers.Get().(*relayWriter)
	if rw == nil {
		rw = new(relayWriter)
	}
	rw.ResponseWriter = w
	defer func() {
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

// relayWriter is the ResponseWriter a route's reverse proxy writes to. It
// gives the 1xx answers that httputil.ReverseProxy relays as they come
// (through its ClientTrace.Got1xxResponse, which copies the upstream's
// fields as they are) the rules of the final answer: their hop-by-hop
// fields stay with the upstream (RFC 9110 §7.6.1). And it relays an answer
// with the Content-Type its upstream gave, or none: a key without values,
// set when the final answer's header is written (httputil.ReverseProxy
// clears the header after each 1xx), keeps net/http's server from adding
// one it guessed from the first bytes (§7.7: a proxy does not transform
// what it relays). The proxy's own answers set theirs. Pooled
// (proxyServer.writers): a request costs no allocation for it.
type relayWriter struct {
	http.ResponseWriter
	final bool // the final answer's header is written
}

func (w *relayWriter) WriteHeader(code int) {
	h := w.ResponseWriter.Header()
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		removeHopByHop(h)
	} else if !w.final {
		w.final = true
		if _, ok := h["Content-Type"]; !ok {
			h["Content-Type"] = nil
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *relayWriter) Write(p []byte) (int, error) {
	if !w.final {
		w.WriteHeader(http.StatusOK) // as net/http does on a Write before WriteHeader
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the server's ResponseWriter, for http.ResponseController
// (flushes, the hijack of an upgraded connection).
func (w *relayWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
func (s *proxyServer) build(cfg *proxyConfig) (*proxyRoutes, error) {
	ctx, stop := context.WithCancel(context.Background())
	rs := &proxyRoutes{source: cfg.source, stop: stop}
	for _, rc := range cfg.routes {
		pr, err := newProxyRoute(rc, s.base, s, ctx)
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("%s (%s): %w", rc.name, rc.at, err)
		}
		rs.list = append(rs.list, pr)
		if s.obs != nil && s.obs.metrics != nil {
			rs.retire = append(rs.retire, s.obs.metrics.TrackTransport(pr.rt))
		}
	}
	return rs, nil
}

// reload loads the config file again and serves its routes from the next
// request on; the requests in flight finish on the routes they started
// with. A file that does not load leaves the routes as they are.
func (s *proxyServer) reload(file string) {
	cfg, err := loadProxyConfig(file)
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
	fmt.Fprintf(s.stderr, "yaoki proxy: SIGHUP: reloaded %s: %d route%s\n", file, len(rs.list), plural(len(rs.list)))
}

// shutdown stops accepting, waits for the calls in flight (with their
// retries) up to grace, then cuts those left.
func (s *proxyServer) shutdown(srv *http.Server, grace time.Duration) error {
	s.ready.Store(false)
	n := s.inFlight.Load()
	fmt.Fprintf(s.stderr, "yaoki proxy: stopping: %d call%s in flight, %v to finish\n", n, plural(int(n)), grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if ci, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		defer ci.CloseIdleConnections()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		left := s.inFlight.Load()
		_ = srv.Close()
		return exit(1, fmt.Sprintf("proxy: --grace %v passed with %d call%s in flight: cut", grace, left, plural(int(left))))
	}
	fmt.Fprintln(s.stderr, "yaoki proxy: stopped: every call finished")
	return nil
}

// mountAdmin adds /healthz and /readyz to the admin listener.
func (s *proxyServer) mountAdmin(mux *http.ServeMux) {
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
		fmt.Fprintf(w, "ready: %d route%s from %s\n", len(rs.list), plural(len(rs.list)), rs.source)
	})
}
