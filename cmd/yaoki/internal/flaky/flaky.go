package flaky

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/header"
)

type flakyOptions struct {
	addr          string
	script        string
	rate429       float64
	rate5xx       float64
	rateReset     float64
	rateSlow      float64
	slow          flags.Seconds
	status5xx     int
	retryAfter    string
	seed          uint64
	attemptHeader string
	maxRequests   int
	obs           telemetry.Flags
}

// NewCommand returns the yaoki flaky command, built anew at each call.
func NewCommand() *cobra.Command {
	o := &flakyOptions{}
	cmd := &cobra.Command{
		Use:   "flaky [flags]",
		Short: "Serve HTTP faults on a loopback port, to test any client's retries",
		Long: `flaky is an HTTP server that fails on purpose, for testing clients in any
language. It listens on a loopback address (--addr; port 0 picks a free one),
prints its URL on stdout (one line, the first), and logs every request on
stderr: the milliseconds since the start (ms=), its method and path, its attempt header (--attempt-header), its
Idempotency-Key, and the answer given.

Script mode (--script): answers in order, separated by commas. Each is an
HTTP status from 200 to 599 (a 1xx is not a final answer) or "reset" (the
connection is closed with a TCP reset), with options after colons:
  retry-after=N       a Retry-After header of N seconds
  retry-after=date+N  a Retry-After header as an HTTP date N seconds ahead
  slow=D              wait D (e.g. 2s, 300ms) before answering
  cut                 announce the whole body, send half of it and close
                      the connection (the link cut as the answer comes; a
                      keyed 2xx so cut still ran: its retry gets the replay)
Each option at most once; reset takes slow only (it sends no header).
After the last answer, the last one repeats. Requests with an
Idempotency-Key are one operation per key: each key walks the script from
its start (attempt 1 gets the first answer, attempt 2 the second...), and
once a key got a 2xx, later requests with it get the same answer again with
the header Idempotent-Replayed: true. Requests without a key share one walk.

Rate mode (--rate-429, --rate-5xx, --rate-reset, --rate-slow): each request
draws its fate from a seeded generator (--seed), so a run is repeatable.
--retry-after, --slow, --status-5xx and --seed qualify a rate, and are
refused without it (--retry-after needs --rate-429, --slow --rate-slow,
--status-5xx --rate-5xx, --seed any of them).

It stops on SIGINT or SIGTERM (at once: a slow answer under way is not sent,
its connection is closed, counted as "closed"), or after --max-requests
requests (the answers under way are sent; a request that comes after the
last is not answered, its connection closed), and prints a summary of the
answers on stderr.
` + telemetry.FlagsHelp + "\n" + flakyMetricsHelp,
		Example: `  # 503, then 429 with Retry-After: 1, then 200 for ever after
  yaoki flaky --addr 127.0.0.1:8080 --script 503,429:retry-after=1,200

  # a reset, a slow 500, then 200; any free port
  yaoki flaky --script reset,500:slow=2s,200

  # 30% 429s (Retry-After as a date 2 s ahead), 10% 503s, repeatable
  yaoki flaky --rate-429 0.3 --retry-after date+2 --rate-5xx 0.1 --seed 7`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:0", "loopback address to listen on; port 0 picks a free port")
	f.StringVar(&o.script, "script", "", "answers in order, e.g. 503,429:retry-after=2,200 (see above)")
	f.Float64Var(&o.rate429, "rate-429", 0, "share of requests answered 429, from 0 to 1")
	f.Float64Var(&o.rate5xx, "rate-5xx", 0, "share of requests answered --status-5xx, from 0 to 1")
	f.Float64Var(&o.rateReset, "rate-reset", 0, "share of connections reset instead of answered, from 0 to 1")
	f.Float64Var(&o.rateSlow, "rate-slow", 0, "share of answers delayed by --slow, from 0 to 1")
	f.Var(&o.slow, "slow", "delay of slow answers (default 2s)")
	f.IntVar(&o.status5xx, "status-5xx", 503, "status of the 5xx answers in rate mode")
	f.StringVar(&o.retryAfter, "retry-after", "", "Retry-After of 429s in rate mode: seconds (2) or date+SECONDS (default: none)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the rate mode's random draws")
	f.StringVar(&o.attemptHeader, "attempt-header", header.AttemptCount, "request header that carries the client's attempt number, logged with each request")
	f.IntVar(&o.maxRequests, "max-requests", 0, "stop after this many requests (0: never)")
	o.obs.Register(f)
	return cmd
}

// flaky is the server's state.
type flaky struct {
	o      *flakyOptions
	script []step
	rates  *rates
	log    io.Writer
	ob     *telemetry.Running // --metrics-addr, --log-format

	mu       sync.Mutex
	requests int
	beyond   int               // requests that came after --max-requests, not answered
	shared   int               // position of the requests without a key
	keys     map[string]*keyOp // by Idempotency-Key
	ops      int
	answers  map[string]int // summary: answer → count
	done     chan struct{}
	doneOnce sync.Once
	stopping chan struct{} // closed when the server stops: slow answers under way end
	start    time.Time
}

type keyOp struct {
	op       int
	attempts int
	replay   *step // the 2xx answer to replay
}

func (o *flakyOptions) run(cmd *cobra.Command) error {
	fl := &flaky{o: o, log: cmd.ErrOrStderr(), keys: map[string]*keyOp{}, answers: map[string]int{}, done: make(chan struct{}), stopping: make(chan struct{}), start: time.Now()}
	for _, r := range []struct {
		name string
		v    float64
	}{{"--rate-429", o.rate429}, {"--rate-5xx", o.rate5xx}, {"--rate-reset", o.rateReset}, {"--rate-slow", o.rateSlow}} {
		if !(r.v >= 0 && r.v <= 1) {
			return cli.Usagef("%s %v: want a share from 0 to 1, such as 0.3", r.name, r.v)
		}
	}
	if cmd.Flags().Changed("slow") && o.slow.D == 0 {
		return cli.Usagef("--slow 0: want a delay > 0 such as 2s (the share of slow answers is --rate-slow)")
	}
	rated := o.rate429 > 0 || o.rate5xx > 0 || o.rateReset > 0 || o.rateSlow > 0
	if err := o.checkRateCompanions(cmd, rated); err != nil {
		return err
	}
	switch {
	case o.script != "" && rated:
		return cli.Usagef("--script and the --rate-* flags cannot be combined: choose a script (answers in order) or rates (random answers)")
	case o.script != "":
		s, err := parseScript(o.script)
		if err != nil {
			return cli.Usagef("--script: %v", err)
		}
		fl.script = s
	case rated:
		r, err := o.makeRates()
		if err != nil {
			return err
		}
		fl.rates = r
	default:
		fl.script = []step{{status: http.StatusOK, retryAfter: -1}}
	}
	if !isToken(o.attemptHeader) {
		return cli.Usagef("--attempt-header %q: want a header name, such as Attempt-Count or X-Retry-Attempt (letters, digits and !#$%%&'*+-.^_`|~, no spaces nor colons)", o.attemptHeader)
	}
	if o.maxRequests < 0 {
		return cli.Usagef("--max-requests %d: want ≥ 0 (0: never stop on a count)", o.maxRequests)
	}
	if err := checkLoopback(o.addr); err != nil {
		return err
	}
	ob, err := o.obs.Start(cmd, "flaky")
	if err != nil {
		return err
	}
	defer ob.Stop()
	fl.ob = ob
	// The signals are ours before the address is printed: one sent as soon
	// as it is must end the server the clean way, not by Go's default.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return cli.Exit(1, fmt.Sprintf("flaky: cannot listen on %s: %v (is the port taken? use port 0 for a free one)", o.addr, err))
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintln(cmd.OutOrStdout(), url)
	mode := "script " + o.script
	if fl.rates != nil {
		mode = fmt.Sprintf("rates 429=%v 5xx=%v reset=%v slow=%v seed=%d", o.rate429, o.rate5xx, o.rateReset, o.rateSlow, o.seed)
	} else if o.script == "" {
		mode = "always 200 (no --script or --rate-* given)"
	}
	say(fl.ob, fl.log, "listening", "flaky: listening on %s (%s)\n", url, mode)

	srv := &http.Server{Handler: fl, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	wait := 5 * time.Second // for the answers under way
	select {
	case <-sigs:
		close(fl.stopping)
	case <-fl.done:
		// --max-requests: the answers under way are the last of them:
		// they are sent, slow ones too, unless a signal comes.
		wait += fl.longestSlow()
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-sigs:
				close(fl.stopping)
			case <-finished:
			}
		}()
	case err := <-served:
		return cli.Exit(1, fmt.Sprintf("flaky: server stopped: %v", err))
	case <-cmd.Context().Done():
		close(fl.stopping)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = srv.Shutdown(ctx)
	fl.summary()
	return nil
}

func (o *flakyOptions) makeRates() (*rates, error) {
	if s := o.rate429 + o.rate5xx + o.rateReset; s > 1 {
		return nil, cli.Usagef("--rate-429 + --rate-5xx + --rate-reset = %v: want at most 1", s)
	}
	if o.status5xx < 500 || o.status5xx > 599 {
		return nil, cli.Usagef("--status-5xx %d: want a status from 500 to 599", o.status5xx)
	}
	r := &rates{reset: o.rateReset, tooMany: o.rate429, server: o.rate5xx, slow: o.rateSlow, status5xx: o.status5xx,
		retryAfter: -1, slowFor: o.slow.D, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))}
	if r.slowFor == 0 {
		r.slowFor = 2 * time.Second
	}
	if o.retryAfter != "" {
		n, date, err := parseRetryAfter(o.retryAfter)
		if err != nil {
			return nil, cli.Usagef("--retry-after %q: %v", o.retryAfter, err)
		}
		r.retryAfter, r.dateAfter = n, date
	}
	return r, nil
}

// checkRateCompanions refuses the flags that qualify a rate (--retry-after,
// --slow, --status-5xx, --seed) when that rate is not set: they would do
// nothing, and a user who wrote them expects them to.
func (o *flakyOptions) checkRateCompanions(cmd *cobra.Command, rated bool) error {
	for _, c := range []struct {
		flag string
		set  bool   // the rate it qualifies is set
		says string // what it does, and what to do instead
	}{
		{"retry-after", o.rate429 > 0, "sets the Retry-After of --rate-429's answers, but --rate-429 is not set, so it would do nothing: add --rate-429 P, or write it in a --script step (429:retry-after=2)"},
		{"slow", o.rateSlow > 0, "delays --rate-slow's answers, but --rate-slow is not set, so it would do nothing: add --rate-slow P, or write it in a --script step (503:slow=2s)"},
		{"status-5xx", o.rate5xx > 0, "is the status of --rate-5xx's answers, but --rate-5xx is not set, so it would do nothing: add --rate-5xx P, or write the status in a --script (502)"},
		{"seed", rated, "seeds the draws of the --rate-* flags, but none is set, so it would do nothing: add a --rate-* flag, or drop --seed (a --script answers in order)"},
	} {
		if fl := cmd.Flags().Lookup(c.flag); fl.Changed && !c.set {
			return cli.Usagef("--%s %s %s", c.flag, fl.Value, c.says)
		}
	}
	return nil
}

// checkLoopback refuses addresses other than loopback: flaky serves faults
// for tests and must not be reachable from elsewhere.
func checkLoopback(addr string) error {
	if err := cli.ListenAddr("--addr", addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return cli.Usagef("--addr %q: flaky listens on loopback only: use 127.0.0.1, [::1] or localhost", addr)
}

func (fl *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get(header.IdempotencyKey)
	attemptHdr := r.Header.Get(fl.o.attemptHeader)

	fl.mu.Lock()
	if max := fl.o.maxRequests; max > 0 && fl.requests >= max {
		// Past --max-requests the server is stopping: a request that
		// came meanwhile (another connection) is not one of its answers.
		fl.beyond++
		fl.mu.Unlock()
		fmt.Fprintf(fl.log, "flaky: %s %s after --max-requests %d: not answered, connection closed\n", r.Method, r.URL.Path, max)
		panic(http.ErrAbortHandler)
	}
	fl.requests++
	n := fl.requests
	var st step
	op, pos, replayed := 0, 0, false
	switch {
	case key != "":
		k := fl.keys[key]
		if k == nil {
			fl.ops++
			k = &keyOp{op: fl.ops}
			fl.keys[key] = k
		}
		k.attempts++
		op, pos = k.op, k.attempts
		if k.replay != nil {
			st, replayed = *k.replay, true
		} else {
			st = fl.next(k.attempts - 1)
			if !st.reset && st.status >= 200 && st.status < 300 {
				saved := st
				saved.cut = false // the operation ran: its answer is replayed whole
				k.replay = &saved
			}
		}
	default:
		fl.shared++
		pos = fl.shared
		st = fl.next(fl.shared - 1)
	}
	answer := st.String()
	if replayed {
		answer += " (replay)"
	}
	fl.answers[strings.SplitN(answer, ":", 2)[0]]++
	last := fl.o.maxRequests > 0 && n >= fl.o.maxRequests
	fl.mu.Unlock()

	elapsed := time.Since(fl.start)
	if !reportAnswer(fl.ob, r, flakyAnswer{n: n, op: op, pos: pos, elapsed: elapsed, attemptHdr: attemptHdr, key: key, answer: answer, st: st, replayed: replayed}) {
		fmt.Fprintf(fl.log, "flaky: req=%d ms=%d method=%s path=%s attempt=%s key=%s op=%d step=%d answer=%s\n",
			n, elapsed.Milliseconds(), r.Method, r.URL.Path, orDash(attemptHdr), orDash(key), op, pos, answer)
	}
	if last {
		defer fl.doneOnce.Do(func() { close(fl.done) })
	}
	if st.slow > 0 {
		t := time.NewTimer(st.slow)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-fl.stopping:
			// Not the scripted answer: close the connection, as a
			// server that stops does, and count it so.
			t.Stop()
			fl.mu.Lock()
			if k := strings.SplitN(answer, ":", 2)[0]; fl.answers[k] > 1 {
				fl.answers[k]--
			} else {
				delete(fl.answers, k)
			}
			fl.answers["closed"]++
			fl.mu.Unlock()
			fmt.Fprintf(fl.log, "flaky: req=%d not answered: stopped during its slow=%v, connection closed\n", n, st.slow)
			panic(http.ErrAbortHandler)
		}
	}
	if st.reset {
		resetConn(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if st.retryAfter >= 0 {
		if st.dateAfter {
			// HTTP dates have whole seconds: round up so that the client
			// never waits less than asked.
			at := time.Now().Add(time.Duration(st.retryAfter)*time.Second + time.Second - 1).Truncate(time.Second)
			h.Set(header.RetryAfter, at.UTC().Format(http.TimeFormat))
		} else {
			h.Set(header.RetryAfter, fmt.Sprint(st.retryAfter))
		}
	}
	if replayed {
		h.Set(header.IdempotentReplayed, "true")
	}
	body := fmt.Sprintf("flaky: %d %s (request %d, step %d)\n", st.status, http.StatusText(st.status), n, pos)
	if st.cut {
		// The answer is announced whole and half of it sent: the link
		// is cut as the answer comes.
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(st.status)
		_, _ = io.WriteString(w, body[:len(body)/2])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	w.WriteHeader(st.status)
	_, _ = io.WriteString(w, body)
}

// longestSlow is the longest wait before an answer that the script or
// the rates may ask for.
func (fl *flaky) longestSlow() time.Duration {
	if fl.rates != nil {
		return fl.rates.slowFor
	}
	var d time.Duration
	for _, st := range fl.script {
		d = max(d, st.slow)
	}
	return d
}

// next returns the answer at position i of the script, or a random one.
// The caller holds fl.mu.
func (fl *flaky) next(i int) step {
	if fl.rates != nil {
		return fl.rates.draw()
	}
	if i >= len(fl.script) {
		i = len(fl.script) - 1
	}
	return fl.script[i]
}

// resetConn closes the request's connection with a TCP reset (SO_LINGER 0),
// which the client sees as "connection reset by peer".
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (fl *flaky) summary() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	keys := make([]string, 0, len(fl.answers))
	for k := range fl.answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d×%s", fl.answers[k], k)
	}
	answers := ""
	if len(parts) > 0 {
		answers = ": " + strings.Join(parts, ", ") // none before the first request
	}
	if fl.beyond > 0 {
		answers += fmt.Sprintf(" (and %d after --max-requests, not answered)", fl.beyond)
	}
	say(fl.ob, fl.log, "summary", "flaky: %d request%s, %d keyed operation%s%s\n", fl.requests, cli.Plural(fl.requests), fl.ops, cli.Plural(fl.ops), answers)
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), what a
// header's name is: a name with a space or a colon, or none, is no header a
// request can carry.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
