package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
)

func init() { subcommands = append(subcommands, newHTTPCmd) }

// Exit codes of yaoki http.
const (
	httpOK       = 0 // an answer (with -f: a status below 400)
	httpFailed   = 1 // something local failed: the output file, the data file
	httpError    = 3 // with -f: the final answer's status is 400 or more
	httpGaveUp   = 4 // retries ended without success: attempts, budget, a Retry-After too long
	httpDeadline = 5 // --max-time passed
	httpNoAnswer = 6 // no answer and not retried: connection, TLS or DNS failure that is final, or a POST without key
)

type httpOptions struct {
	pf         policyFlags
	method     string
	headers    []string
	data       []string
	dataBinary []string
	output     string
	include    bool
	fail       bool
	verbose    bool
	key        string
	obs        observeFlags
}

func newHTTPCmd() *cobra.Command {
	o := &httpOptions{}
	cmd := &cobra.Command{
		Use:   "http [flags] URL",
		Short: "Send an HTTP request that retries like yaoki's Go client (curl-like)",
		Long: `http sends one request through yaoki's retrying HTTP client (package
httpretry) and writes the answer's body to stdout. It retries 408, 429, 500,
502, 503 and 504 answers and connection failures, honours Retry-After (up
to --max-retry-after, 60s by default), and retries POST and PATCH only with
an Idempotency-Key (--idempotency-key auto makes one, sent unchanged on every
attempt). Redirects are not followed.

-v reports each attempt on stderr: its status (or error) and time, and the
wait before the next one, with where the wait came from: "backoff" (the
policy's schedule) or "server" (Retry-After or a rate-limit reset).

Exit codes:
  0  an answer (with -f: a status below 400)
  1  a local failure (writing -o, reading a --data file)
  2  bad usage
  3  with -f: the answer's status is 400 or more (not retried, or not retryable)
  4  gave up after retries: attempts used up, or the server asked to wait
     longer than --max-retry-after; the last answer, if any, is still written
  5  --max-time passed (or the next wait would have ended after it)
  6  no answer and not retried: a final connection, TLS or DNS error, or a
     request that could be sent only once (POST without key)
` + policyFlagsHelp + "\n" + observeFlagsHelp,
		Example: `  # GET, retrying 429/5xx with the defaults (3 attempts), each attempt on stderr
  yaoki http -v http://127.0.0.1:8080/

  # POST JSON with one Idempotency-Key for every attempt; fail on 4xx/5xx
  yaoki http -f -X POST -H 'Content-Type: application/json' -d '{"sku":42}' \
      --idempotency-key auto --max-attempts 5 --max-time 30s http://127.0.0.1:8080/orders

  # upload a file as is, with the response headers, body to a file
  yaoki http -i --data-binary @payload.bin -o answer.txt http://127.0.0.1:8080/upload`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("http needs exactly one URL: yaoki http [flags] URL (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	f := cmd.Flags()
	o.pf.register(f)
	f.StringVarP(&o.method, "request", "X", "", "method (default GET, or POST with data)")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "request header 'Name: value' (repeatable)")
	f.StringArrayVarP(&o.data, "data", "d", nil, "request body; @FILE reads a file without its newlines, @- stdin; several are joined with &")
	f.StringArrayVar(&o.dataBinary, "data-binary", nil, "request body as is; @FILE reads a file, @- stdin")
	f.StringVarP(&o.output, "output", "o", "", "write the body to FILE instead of stdout")
	f.BoolVarP(&o.include, "include", "i", false, "write the status line and headers before the body")
	f.BoolVarP(&o.fail, "fail", "f", false, "exit 3, writing no body, when the answer's status is 400 or more")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "report each attempt, and each wait with its source, on stderr")
	f.StringVar(&o.key, "idempotency-key", "", "auto (a new key for POST and PATCH) or the KEY to send on every attempt")
	o.obs.register(f)
	return cmd
}

func (o *httpOptions) run(cmd *cobra.Command, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("%q is not an http or https URL: want e.g. http://127.0.0.1:8080/path", rawURL)
	}
	cp, err := o.pf.build(cmd)
	if err != nil {
		return err
	}
	body, hasBody, err := o.body(cmd.InOrStdin())
	if err != nil {
		return err
	}
	method := strings.ToUpper(o.method)
	if method == "" {
		method = http.MethodGet
		if hasBody {
			method = http.MethodPost
		}
	}
	ctx := cmd.Context()
	if d := cp.retry.MaxElapsed; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return usagef("cannot make a %s request to %s: %v", method, rawURL, err)
	}
	if hasBody && len(o.data) > 0 {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "yaoki-http")
	for _, h := range o.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return usagef("-H %q: want 'Name: value', e.g. -H 'Content-Type: application/json'", h)
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	keyMode := o.key
	if keyMode == "" && cp.doc != nil {
		keyMode = cp.doc.IdempotencyKey
	}
	switch keyMode {
	case "", "off":
	case "auto":
		if !httpretry.Idempotent(method) && req.Header.Get(httpretry.IdempotencyKeyHeader) == "" {
			req.Header.Set(httpretry.IdempotencyKeyHeader, httpretry.NewKey())
		}
	default:
		req.Header.Set(httpretry.IdempotencyKeyHeader, keyMode)
	}

	stderr := cmd.ErrOrStderr()
	ob, err := o.obs.start(cmd, "yaoki http")
	if err != nil {
		return err
	}
	defer ob.stop()
	obs := &httpObserver{w: stderr, verbose: o.verbose}
	t := &httpretry.Transport{Policy: cp.retry, Observer: event.Multi(obs, ob.observer)}
	ob.track(t)
	if cp.doc != nil {
		t.Statuses = statusesFor(cp.doc)
	}
	defer t.CloseIdleConnections()
	client := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if o.verbose {
		attempts := "unlimited"
		if n := cp.attempts(); n > 0 {
			attempts = fmt.Sprint(n)
		}
		fmt.Fprintf(stderr, "yaoki http: %s %s (attempts: %s, policy: %s", method, u.Redacted(), attempts, cp.source)
		if k := req.Header.Get(httpretry.IdempotencyKeyHeader); k != "" {
			fmt.Fprintf(stderr, ", Idempotency-Key: %s", k)
		}
		fmt.Fprintln(stderr, ")")
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return o.noAnswer(stderr, ctx, err, time.Since(start))
	}
	defer resp.Body.Close()
	code := httpOK
	switch obs.gaveUp() {
	case "", retry.PermanentError.Key(), "do_not_retry", "not_idempotent", "body_not_replayable":
	case retry.Deadline.Key():
		code = httpDeadline
	default:
		code = httpGaveUp
	}
	if code == httpOK && o.fail && resp.StatusCode >= 400 {
		code = httpError
	}
	if err := o.write(cmd.OutOrStdout(), resp, o.fail && resp.StatusCode >= 400); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "yaoki http: --max-time %v passed while reading the answer\n", cp.retry.MaxElapsed)
			return exit(httpDeadline, "")
		}
		return exit(httpFailed, fmt.Sprintf("http: %v", err))
	}
	switch code {
	case httpGaveUp, httpDeadline:
		fmt.Fprintf(stderr, "yaoki http: gave up after %d attempt%s in %v (%s): last answer %s\n", obs.attempts(), plural(obs.attempts()),
			time.Since(start).Round(time.Millisecond), strings.ReplaceAll(obs.gaveUp(), "_", " "), resp.Status)
	case httpError:
		fmt.Fprintf(stderr, "yaoki http: the answer is %s (exit 3 with -f)\n", resp.Status)
	}
	if code != httpOK {
		return exit(code, "")
	}
	return nil
}

// noAnswer reports a request that ended without a response.
func (o *httpOptions) noAnswer(stderr io.Writer, ctx context.Context, err error, took time.Duration) error {
	var he *httpretry.Error
	code := httpNoAnswer
	if errors.As(err, &he) {
		switch {
		case he.Reason == retry.Deadline || errors.Is(ctx.Err(), context.DeadlineExceeded):
			code = httpDeadline
		case he.Reason == retry.PermanentError || he.NotRetried != nil:
			code = httpNoAnswer
		case he.Reason == retry.Cancelled:
			code = httpNoAnswer
		default:
			code = httpGaveUp
		}
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = httpDeadline
	}
	msg := err.Error()
	if ue := (*url.Error)(nil); errors.As(err, &ue) && ue.Err != nil {
		msg = ue.Err.Error()
	}
	fmt.Fprintf(stderr, "yaoki http: no answer after %v: %s\n", took.Round(time.Millisecond), msg)
	return exit(code, "")
}

// body returns the request body from -d and --data-binary.
func (o *httpOptions) body(stdin io.Reader) ([]byte, bool, error) {
	if len(o.data) > 0 && len(o.dataBinary) > 0 {
		return nil, false, usagef("-d and --data-binary cannot be combined: use one of them")
	}
	read := func(v string, strip bool) ([]byte, error) {
		name, ok := strings.CutPrefix(v, "@")
		if !ok {
			return []byte(v), nil
		}
		var b []byte
		var err error
		if name == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, exit(httpFailed, fmt.Sprintf("http: cannot read the request body: %v", err))
		}
		if strip {
			b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r"), nil), []byte("\n"), nil)
		}
		return b, nil
	}
	var parts [][]byte
	for _, v := range o.data {
		b, err := read(v, true)
		if err != nil {
			return nil, false, err
		}
		parts = append(parts, b)
	}
	for _, v := range o.dataBinary {
		b, err := read(v, false)
		if err != nil {
			return nil, false, err
		}
		parts = append(parts, b)
	}
	if len(parts) == 0 {
		return nil, false, nil
	}
	sep := []byte("&")
	if len(o.dataBinary) > 0 {
		sep = nil
	}
	return bytes.Join(parts, sep), true, nil
}

// write writes the answer: headers with -i, then the body (not with
// noBody), to -o or stdout.
func (o *httpOptions) write(stdout io.Writer, resp *http.Response, noBody bool) error {
	out := stdout
	if o.output != "" && !noBody {
		f, err := os.Create(o.output)
		if err != nil {
			return fmt.Errorf("cannot write the answer: %v", err)
		}
		defer f.Close()
		out = f
	}
	if o.include {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		if err := resp.Header.Write(out); err != nil {
			return err
		}
		fmt.Fprint(out, "\r\n")
	}
	if noBody {
		return nil
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fmt.Errorf("reading the answer: %v", err)
	}
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		return f.Close()
	}
	return nil
}

// statusesFor returns the statuses a transport must treat as retryable for
// doc: the defaults and every status its retriers name (HTTP.404, or each
// status of HTTP.4XX). A status no retrier matches is then final.
func statusesFor(doc *policy.Document) []int {
	set := map[int]bool{}
	for _, s := range httpretry.DefaultStatuses() {
		set[s] = true
	}
	for _, r := range doc.Retry {
		for _, n := range r.ErrorEquals {
			rest, ok := strings.CutPrefix(n, "HTTP.")
			if !ok || len(rest) != 3 {
				continue
			}
			if rest[1:] == "XX" {
				c := int(rest[0]-'0') * 100
				for s := c; s < c+100; s++ {
					set[s] = true
				}
				continue
			}
			var s int
			if _, err := fmt.Sscanf(rest, "%d", &s); err == nil {
				set[s] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	return out
}

// httpObserver reports attempts on stderr (with -v) and remembers why the
// loop gave up.
type httpObserver struct {
	w       io.Writer
	verbose bool

	mu     sync.Mutex
	n      int
	reason string
}

func (h *httpObserver) Observe(_ context.Context, e event.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case event.AttemptEnd:
		h.n = e.Attempt
		if !h.verbose {
			return
		}
		what := ""
		switch {
		case e.Status > 0:
			what = fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
		case e.Err != nil:
			what = "error: " + e.Err.Error()
		}
		fmt.Fprintf(h.w, "yaoki http: attempt %d: %s in %v\n", e.Attempt, what, e.Duration.Round(time.Millisecond))
	case event.RetryScheduled:
		if h.verbose {
			src := "backoff"
			if e.Source == event.ServerHint {
				src = "server (Retry-After or rate-limit reset)"
			}
			fmt.Fprintf(h.w, "yaoki http: waiting %v before attempt %d, from %s\n", e.Wait.Round(time.Millisecond), e.Attempt+1, src)
		}
	case event.GaveUp:
		h.reason = e.Reason
		if h.verbose {
			fmt.Fprintf(h.w, "yaoki http: stopped after %d attempt%s: %s\n", e.Attempt, plural(e.Attempt), strings.ReplaceAll(e.Reason, "_", " "))
		}
	}
}

func (h *httpObserver) gaveUp() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

func (h *httpObserver) attempts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}
