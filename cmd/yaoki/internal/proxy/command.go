package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/httpretry"
)

// options are yaoki proxy's flags.
type options struct {
	listen   string
	upstream string
	config   string
	redisURL string
	grace    flags.Seconds
	client   flags.Seconds
	readIdle string
	netHTTP  bool
	key      string
	maxBody  string
	pf       flags.Policy
	hedge    flags.Hedge
	obs      telemetry.Flags
}

// NewCommand returns the yaoki proxy command, built anew at each call.
func NewCommand() *cobra.Command {
	o := &options{grace: flags.Seconds{D: 30 * time.Second}, client: flags.Seconds{D: DefaultClientTimeout}}
	cmd := &cobra.Command{
		Use:   "proxy (--upstream URL | --config FILE) [flags]",
		Short: "A reverse proxy that applies yaoki's retry policy to every call through it",
		Long: `proxy is a reverse proxy (a sidecar) in front of one or more upstream APIs: each
request that passes through it is sent with yaoki's retry loop and
httpretry's rules, so that a service in any language gets the toolkit's
retries, Retry-After handling, retry budget and breaker. Plain GETs and HEADs
are served by the proxy's own HTTP/1.1 front end, at a third of the CPU of
net/http's server and reverse proxy, which serve everything else (--net-http:
every request).

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
retries, and then the proxy makes one attempt per request, sent with the
client's number. When the proxy's
own retries end on a retryable status, it relays the last answer with
Do-Not-Retry: true. When there is no answer to relay, the proxy answers
itself with application/problem+json: 502 (upstream unreachable), 503
(budget exhausted, breaker open: with Retry-After when it knows when), 504
(a deadline passed), 400 (the client's body could not be read, or its
path has a ".." segment), with the reason as a word.

--client-timeout (60 s) gives up a client that stalls: one that sends no
byte of its request body, or does not take a write of the answer (at most
32 KiB), for that long. --upstream-read-timeout (60 s) bounds each wait
for the upstream's next bytes: an attempt whose answer header does not
start within it after the request was sent times out (retried as an
--attempt-timeout is; 504 once the attempts are spent), and an answer whose
body gets no byte for that long is cut (the client's answer ends cut, the
upstream's connection is closed); a stream with heartbeats more often than
that is relayed however long it lasts.

--redis URL shares the retry budgets and breakers with every proxy using
the same Redis. --admin-addr serves /metrics (Prometheus), /healthz and
/readyz. SIGTERM (or SIGINT) stops accepting and lets the calls in flight,
and their retries, finish within --grace; SIGHUP reloads --config, keeping
the loaded routes if the new file is invalid.
` + flags.PolicyHelp,
		Example: `  # one upstream, the default policy, metrics on 127.0.0.1:9464
  yaoki proxy --listen 127.0.0.1:8080 --upstream https://api.partner.example --admin-addr 127.0.0.1:9464

  # the routes of a file; a budget and breaker shared through Redis
  yaoki proxy --config proxy.yaml --redis redis://127.0.0.1:6379/0`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve the proxy on (port 0: any free port; the URL is printed on stdout)")
	f.StringVar(&o.upstream, "upstream", "", "the one upstream URL, e.g. https://api.partner.example")
	f.StringVar(&o.config, "config", "", "a YAML file of routes (reloaded on SIGHUP)")
	f.StringVar(&o.redisURL, "redis", "", "share retry budgets and breakers through this Redis, e.g. redis://127.0.0.1:6379/0")
	f.Var(&o.grace, "grace", "on SIGTERM, how long the calls in flight may take to finish")
	f.Var(&o.client, "client-timeout", "give up a client that sends no byte of its request body, or does not take a write of the answer (at most 32 KiB), for this long (0: never)")
	f.StringVar(&o.readIdle, "upstream-read-timeout", "", "with --upstream: time out an attempt, or cut an answer, that gets no byte from the upstream for this long (default 60s; 0: never)")
	f.StringVar(&o.key, "idempotency-key", "", "with --upstream: auto adds an Idempotency-Key to each POST and PATCH that has none (default off)")
	f.StringVar(&o.maxBody, "max-buffered-body", "", "with --upstream: largest request body kept for retries, e.g. 64KiB (default 1MiB; -1: never)")
	f.StringVar(&o.obs.MetricsAddr, "admin-addr", "", "serve /metrics, /healthz and /readyz on this address (port 0: any free port)")
	f.StringVar(&o.obs.LogFormat, "log-format", "", "log retries, give-ups and breaker changes on stderr as structured records: text or json")
	f.BoolVar(&o.netHTTP, "net-http", false, "serve every request with net/http's server and httputil.ReverseProxy, not the proxy's own HTTP/1.1 front end (which serves plain GETs and HEADs at a third of the CPU; see docs/proxy.md)")
	o.pf.Register(f)
	o.hedge.Register(f)
	return cmd
}

// routes returns the routes the flags ask for.
func (o *options) routes(cmd *cobra.Command) (*Config, error) {
	changed := cmd.Flags().Changed
	switch {
	case o.config != "" && o.upstream != "":
		return nil, cli.Usagef("--config and --upstream cannot be combined: give the upstream as a route of the file, or drop --config")
	case o.config == "" && o.upstream == "":
		return nil, cli.Usagef("proxy needs --upstream URL or --config FILE")
	case o.config != "":
		for _, name := range []string{"idempotency-key", "max-buffered-body", "policy", "max-attempts", "max-time", "base",
			"throttle-base", "cap", "multiplier", "jitter", "attempt-timeout", "max-retry-after", "hedge-after", "max-hedges", "upstream-read-timeout"} {
			if changed(name) {
				return nil, cli.Usagef("--%s cannot be combined with --config: set it per route in the file (policy, idempotency_key, max_buffered_body, hedge, upstream_read_timeout)", name)
			}
		}
		cfg, err := LoadConfig(o.config)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		return cfg, nil
	}
	u, err := ParseUpstream(o.upstream)
	if err != nil {
		return nil, cli.Usagef("--upstream %v", err)
	}
	cp, err := o.pf.Build(cmd)
	if err != nil {
		return nil, err
	}
	hc, err := o.hedge.Fixed(cmd)
	if err != nil {
		return nil, err
	}
	rc := &Route{Name: "--upstream", At: "--upstream", Upstream: u, Policy: cp.Retry, Doc: cp.Doc, PolicySource: cp.Source, Hedge: hc}
	switch o.key {
	case "auto":
		rc.KeyMode = httpretry.KeyAuto
	case "", "off":
		if o.key == "" && cp.Doc != nil && cp.Doc.IdempotencyKey == "auto" {
			rc.KeyMode = httpretry.KeyAuto
		}
	default:
		return nil, cli.Usagef("--idempotency-key %q: want auto or off", o.key)
	}
	if o.maxBody != "" {
		if rc.MaxBody, err = ParseByteSize(o.maxBody); err != nil {
			return nil, cli.Usagef("--max-buffered-body %v", err)
		}
	}
	if o.readIdle != "" {
		if rc.UpstreamReadTimeout, err = ParseReadTimeout(o.readIdle); err != nil {
			return nil, cli.Usagef("--upstream-read-timeout %v", err)
		}
	}
	return &Config{Routes: []*Route{rc}, Source: "--upstream"}, nil
}

func (o *options) run(cmd *cobra.Command) error {
	cfg, err := o.routes(cmd)
	if err != nil {
		return err
	}
	if err := cli.ListenAddr("--listen", o.listen); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	s := NewServer(stderr)
	s.ClientTimeout = o.client.D
	s.NetHTTPOnly = o.netHTTP
	if o.redisURL != "" {
		if s.Fleet, err = NewFleet(o.redisURL, stderr); err != nil {
			return cli.Usagef("%v", err)
		}
		defer s.Fleet.Close()
	}
	obs, err := o.obs.StartWith(cmd, "yaoki proxy", s.MountAdmin)
	if err != nil {
		return err
	}
	defer obs.Stop()
	s.Observer = obs.Observer
	if obs.Metrics != nil {
		s.Metrics = obs.Metrics
	}
	if err := s.Load(cfg); err != nil {
		return cli.Exit(1, fmt.Sprintf("proxy: %v", err))
	}
	defer s.Close()

	setGC()
	setProcs()
	// The signals are ours before the first request can be served: a
	// SIGTERM or SIGHUP sent as soon as the proxy answers (by a test, an
	// orchestrator) must reach the shutdown or the reload, not Go's
	// default action, which ends the process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return cli.Exit(1, fmt.Sprintf("proxy: cannot listen on %s: %v (is the port taken? use port 0 for a free one)", o.listen, err))
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: clientHeaderTimeout, IdleTimeout: clientIdleTimeout}
	served := make(chan error, 1)
	if !s.NetHTTPOnly {
		ln = s.Listener(ln)
	}
	go func() { served <- srv.Serve(ln) }()
	s.MarkReady()
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s/\n", ln.Addr())
	fmt.Fprintf(stderr, "yaoki proxy: listening on http://%s/, %d route%s from %s, GOMAXPROCS %d\n", ln.Addr(), len(cfg.Routes), cli.Plural(len(cfg.Routes)), cfg.Source, runtime.GOMAXPROCS(0))
	if obs.URL != "" {
		fmt.Fprintf(stderr, "yaoki proxy: admin on http://%s (/metrics, /healthz, /readyz)\n", strings.TrimSuffix(strings.TrimPrefix(obs.URL, "http://"), "/metrics"))
	}

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		select {
		case err := <-served:
			return cli.Exit(1, fmt.Sprintf("proxy: serving stopped: %v", err))
		case <-ctx.Done():
			return shutdown(s, srv, o.grace.D)
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				return shutdown(s, srv, o.grace.D)
			}
			if o.config == "" {
				fmt.Fprintln(stderr, "yaoki proxy: SIGHUP: nothing to reload (no --config)")
				continue
			}
			s.Reload(o.config)
		}
	}
}

// gcPercent is the garbage collector's target that the proxy runs
// with unless the environment sets GOGC: the heap may grow to five times
// what is live before a collection, instead of twice. A proxy's live heap
// is small (its connections' buffers and the requests in flight), so at
// GOGC's default of 100 it collects every few thousand requests, and the
// collections cost a large share of its CPU time; docs/proxy.md has the
// figures.
const gcPercent = 400

// setGC sets the garbage collector's target to gcPercent, unless
// the environment sets GOGC (which then stands as it is).
func setGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
}

// procsPerCPU is how many goroutines the proxy runs at once (GOMAXPROCS)
// for each CPU that Go finds it may use (all of the machine's, or its
// container's CPU limit), unless the environment sets GOMAXPROCS, and
// maxExtraProcs bounds how many that is beyond the CPUs. A sidecar shares
// its cores with its service, and the kernel preempts the proxy's
// threads; a preempted thread keeps its share of the Go scheduler, and the
// connections whose turn is on it wait until the kernel runs that thread
// again. With three per CPU, the others go on. The bound keeps a proxy on
// a large machine without a CPU limit from tripling what the runtime sizes
// by GOMAXPROCS (the garbage collector's workers among them): 6 on 2 CPUs,
// 16 on 8, 72 on 64. docs/proxy.md has the figures.
const (
	procsPerCPU   = 3
	maxExtraProcs = 8
)

// defaultProcs is the proxy's GOMAXPROCS for cpus CPUs.
func defaultProcs(cpus int) int {
	return cpus + min((procsPerCPU-1)*cpus, maxExtraProcs)
}

// setProcs sets GOMAXPROCS to defaultProcs of the runtime's default,
// unless the environment sets GOMAXPROCS (which then stands as it is).
// It is set once: a container limit changed later is not followed (Go
// follows one only while GOMAXPROCS is its default).
func setProcs() {
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		runtime.SetDefaultGOMAXPROCS()
		runtime.GOMAXPROCS(defaultProcs(runtime.GOMAXPROCS(0)))
	}
}

// shutdown stops the proxy: every call in flight finishes within grace,
// or the proxy exits 1 cutting them.
func shutdown(s *Server, srv *http.Server, grace time.Duration) error {
	if err := s.Shutdown(srv, grace); err != nil {
		return cli.Exit(1, err.Error())
	}
	return nil
}
