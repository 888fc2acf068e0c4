package curl

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// defaultMaxRedirs is curl's default for --max-redirs.
const defaultMaxRedirs = 50

type httpOptions struct {
	pf             flags.Policy
	obs            telemetry.Flags
	method         string
	headers        []string
	data           []dataPart // -d, --data-binary, --data-raw, --data-urlencode, --json in order
	form           []formPart // -F, --form-string in order
	formType       string     // the multipart body's Content-Type, with its boundary
	get            bool
	head           bool
	output         string
	remoteName     bool   // -O: the file is named from the URL
	headerName     bool   // -J: with -O, the file is named by the answer's Content-Disposition
	namedByServer  bool   // -J named the file: it is not written over
	serverName     string // the name -J's answer gave
	outputDir      string // --output-dir: the folder of -o's or -O's file
	dumpHeader     string // -D: the headers to this file too ("-": stdout)
	include        bool
	fail           bool
	failWithBody   bool
	silent         bool
	showError      bool
	location       bool
	trusted        bool // --location-trusted: -L, and credentials to every host
	maxRedirs      int
	insecure       bool
	user           string
	bearer         string // --oauth2-bearer: Authorization: Bearer TOKEN, over -u's
	netrc          bool   // -n: -u from $HOME/.netrc
	netrcOptional  bool   // --netrc-optional: the same, the file may be missing
	netrcFile      string // --netrc-file: -u from this file
	connectTimeout flags.Seconds
	writeOut       string
	userAgent      string
	noUserAgent    bool // -A "": send no User-Agent
	referer        string
	autoReferer    bool // -e 'URL;auto': each redirect sends the URL left as Referer
	target         *target
	redirected     time.Time // when -L last followed a redirect (-w %{time_redirect})
	verbose        bool
	key            string
	retries        int
	retryDelay     flags.Seconds
	retryMaxTime   flags.Seconds // --retry-max-time: no retry once this much time has passed (0: no limit)
	retryAll       bool          // --retry-all-errors
	globoff        bool          // -g: {} and [] in the URL are sent as written
	pathAsIs       bool          // --path-as-is: the URL's "." and ".." segments are sent
	compressed     bool          // --compressed: ask for deflate, gzip, br or zstd, write the body decoded
	mkdirs         bool          // --create-dirs: make -o's folders
	caCert         string        // --cacert: the roots to trust instead of the system's
	network        string        // -4 (tcp4), -6 (tcp6), or "" for either
	http11         bool          // --http1.1: no HTTP/2
	upload         string        // -T: the file to PUT ("-": stdin)
	urls           []string      // --url: the URL, instead of the argument (one)
	resolve        []string
	unixSocket     string              // --unix-socket: every connection to this socket
	connectToFlag  []string            // --connect-to's entries, as given
	noKeepalive    bool                // --no-keepalive: no TCP keepalive probes
	stderrFile     string              // --stderr: the messages to this file ("-": stdout)
	realStderr     io.Writer           // with --stderr, the process's stderr (-w's %{stderr})
	keepaliveTime  int                 // --keepalive-time: seconds idle before a TCP keepalive probe (0: 30, Go's and this tool's)
	connectTos     []connectTo         // --connect-to's, read
	maxFilesize    byteSize            // --max-filesize: a longer Content-Length exits 63 (0: no limit)
	tooLarge       bool                // the answer is over --max-filesize
	protoFlag      string              // --proto's value, as given
	protoRedirFlag string              // --proto-redir's value, as given
	protos         protoSet            // the protocols --proto lets through
	protosRedir    protoSet            // the protocols --proto-redir lets through to a redirect
	tlsMin         string              // --tlsv1.N: the oldest TLS version spoken ("": Go's)
	tlsMax         string              // --tls-max: the newest
	certFile       string              // -E: the client certificate's PEM file
	keyFile        string              // --key: its private key's PEM file
	clientCert     *tls.Certificate    // -E's and --key's, read
	proxy          string              // -x: the proxy to send through
	proxyURL       *url.URL            // -x's, parsed
	noProxy        string              // --noproxy: hosts sent to directly
	resolved       map[string][]string // --resolve's: "host:port" (lower case) to the addresses to dial
	hedge          flags.Hedge
	cookie         cookieFlags
	byteRange      string // -r: the byte range(s) to ask for
	rangeSet       bool   // -r given (even "")
	continueAt     string // -C: the byte offset to continue from, or "-"
	resume         *resumeState
	trace          *connTrace // the attempts' connections, for the headers as they came
	format         string     // -w's format, as read
	extraOutputs   int        // the -o's after the first (curl's for the next URLs)
	urlGiven       string     // %{url}: the URL given (with -G, made anew with the data)
	infoWritten    bool       // -w's format was written
}

// NewCommand returns the yaoki http command, built anew at each call.
func NewCommand() *cobra.Command {
	o := &httpOptions{}
	cmd := &cobra.Command{
		Use:   "http [flags] URL",
		Short: "Send an HTTP request that retries like yaoki's Go client (curl's flags and exit codes)",
		Long: `http sends one request through yaoki's retrying HTTP client (package
httpretry) and writes the answer's body to stdout. It takes curl's flags with
curl's meaning (-s, -S, -f, --fail-with-body, -L, -k, -u, -m, -w, -I, -i, -o,
-A, -e, -b, -c, -r, -C, -d, --data-binary, --data-raw, --data-urlencode, --json,
-G, -H, -X, -v, -K, combined as -fsS or -sSL) and exits with curl's exit codes, so that it can
stand in for curl --retry: --retry N is --max-attempts N+1, --retry-delay D
makes every wait D, --retry-max-time S makes no retry after S,
--retry-all-errors retries every error (with -f, every status from 400).

It retries 408, 429, 500, 502, 503 and 504 answers, connection failures and
host names that did not resolve (as curl --retry does), honours Retry-After
(up to --max-retry-after, 60s by default), and retries POST and PATCH only
with an Idempotency-Key (--idempotency-key auto makes one, sent unchanged on
every attempt), even with --retry-all-errors. A POST or PATCH without one
that gets a retryable answer is not retried, and stderr says so. Redirects
are followed with -L only.

-v writes, as curl -v does, each attempt's request headers ("> ") and the
answer's headers ("< "), and yaoki's decisions ("* "): each attempt's
outcome and time, and the wait before the next one with where it came from:
"backoff" (the policy's schedule) or "server" (Retry-After or a rate-limit
reset). -m/--max-time bounds the whole run, attempts and waits (curl's bounds
each attempt).
` + exitCodesHelp + "\n" + flags.PolicyHelp + "\n" + telemetry.FlagsHelp,
		Example: `  # GET, retrying 429/5xx with the defaults (3 attempts), each attempt on stderr
  yaoki http -v http://127.0.0.1:8080/

  # where you typed curl --retry 3: fail on 4xx/5xx, quiet but for errors
  yaoki http -fsS --retry 3 -m 30 http://127.0.0.1:8080/health

  # POST JSON with one Idempotency-Key for every attempt
  yaoki http -f --json '{"sku":42}' --idempotency-key auto --max-attempts 5 \
      http://127.0.0.1:8080/orders

  # the status and total time of a call, for scripts
  yaoki http -s -o /dev/null -w '%{http_code} %{time_total} %{num_retries}\n' http://127.0.0.1:8080/

  # a GET that sends a copy after 50ms without an answer (2 copies at most)
  yaoki http -v --hedge-after 50ms --max-hedges 2 http://127.0.0.1:8080/

  # upload a file as is, with the response headers, body to a file
  yaoki http -i --data-binary @payload.bin -o answer.txt http://127.0.0.1:8080/upload`,
		Args: func(cmd *cobra.Command, args []string) error {
			if n := len(args) + len(o.urls); n != 1 {
				return cli.Usagef("http needs exactly one URL: yaoki http [flags] URL, or --url URL (got %d; curl would fetch them one after the other)", n)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, append(o.urls, args...)[0])
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if re := (*configReadError)(nil); errors.As(err, &re) {
			return cli.Exit(curlReadError, fmt.Sprintf("(%d) -K %s: %v", curlReadError, re.name, re))
		}
		err = unknownFlag(cli.FlagValueError(err), c.Flags())
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("%v\nsee '%s --help' for the flags and the values they accept", err, c.CommandPath()))
	})
	f := cmd.Flags()
	o.pf.RegisterShort(f, "m")
	f.IntVar(&o.retries, "retry", 0, "retries after the first attempt, as curl's --retry: --max-attempts N+1")
	f.Var(&o.retryDelay, "retry-delay", "as curl's: the same wait before every retry (--base, --throttle-base and --cap D, --jitter none); a longer Retry-After is still honoured; 0: the policy's backoff")
	f.Var(&o.retryMaxTime, "retry-max-time", "as curl's: no retry once SECONDS have passed since the first attempt, nor when Retry-After would end past them (the attempt under way and the wait are not cut: -m bounds them); 0: no limit")
	f.BoolVar(&o.retryAll, "retry-all-errors", false, "as curl's: retry every error (no such host, untrusted certificate...) and, with -f or --fail-with-body, every status from 400; a POST or PATCH is still retried only with an Idempotency-Key")
	f.Bool("no-progress-meter", false, "accepted as curl's: yaoki http draws no progress meter")
	f.BoolP("disable", "q", false, "accepted as curl's: yaoki http reads no .curlrc")
	f.Bool("retry-connrefused", false, "accepted as curl's: yaoki http retries refused connections without it")
	f.StringVarP(&o.method, "request", "X", "", "method, sent as written (case-sensitive: get is not GET); default GET, HEAD with -I, POST with data")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "request header 'Name: value' (repeatable); 'Name:' removes a header yaoki would send, 'Name;' sends Name empty; @FILE sends FILE's lines, one header each (@- stdin)")
	f.VarP(dataFlag{dataAscii, &o.data}, "data", "d", "request body (POST, form-encoded); @FILE reads a file without its newlines, @- stdin; several are joined with &")
	f.Var(dataFlag{dataBinary, &o.data}, "data-binary", "request body as is; @FILE reads a file, @- stdin")
	f.Var(dataFlag{dataRaw, &o.data}, "data-raw", "request body; a leading @ is sent as it is")
	f.Var(dataFlag{dataURLEncode, &o.data}, "data-urlencode", "request body part, percent-encoded as a form value: 'content', '=content', 'name=content', '@FILE' or 'name@FILE' (the file's content, @- stdin)")
	f.Var(dataFlag{dataJSON, &o.data}, "json", "JSON request body (POST, Content-Type and Accept application/json); @FILE reads a file")
	f.VarP(formFlag{false, &o.form}, "form", "F", "multipart form part (POST, multipart/form-data; repeatable): 'name=value', 'name=@FILE' (upload FILE), 'name=<FILE' (FILE's content as the value); ';type=TYPE' and ';filename=NAME' after it")
	f.Var(formFlag{true, &o.form}, "form-string", "multipart form part 'name=value', the value sent as written (no @, < or ; meaning)")
	f.BoolVarP(&o.get, "get", "G", false, "send the data in the URL's query string with GET")
	f.BoolVarP(&o.head, "head", "I", false, "send HEAD and write the answer's headers only")
	f.VarP(&outputFlag{dst: &o.output, extra: &o.extraOutputs}, "output", "o", "write the body to FILE instead of stdout (the first -o: curl's next ones are for the next URLs)")
	f.BoolVarP(&o.remoteName, "remote-name", "O", false, "write the body to a file named as the URL's last path segment (as written, query left out), in the current folder or --output-dir")
	f.BoolVarP(&o.headerName, "remote-header-name", "J", false, "with -O, name the file as the answer's Content-Disposition filename says (its last path segment; a file that is there is not written over: exit 23)")
	f.StringVar(&o.outputDir, "output-dir", "", "the folder of -o's or -O's file")
	f.StringVarP(&o.dumpHeader, "dump-header", "D", "", "write the answer's headers (with -L, each redirect's first) to FILE too; - for stdout")
	f.BoolVarP(&o.include, "include", "i", false, "write the status line and headers before the body")
	f.BoolVarP(&o.fail, "fail", "f", false, "exit 22, writing no body, when the final status is 400 or more")
	f.BoolVar(&o.failWithBody, "fail-with-body", false, "exit 22 when the final status is 400 or more, still writing the body")
	f.BoolVarP(&o.silent, "silent", "s", false, "write no messages on stderr (errors too, unless -S)")
	f.BoolVarP(&o.showError, "show-error", "S", false, "with -s, still write error messages")
	f.BoolVarP(&o.location, "location", "L", false, "follow redirects (each hop retried on its own)")
	f.BoolVar(&o.trusted, "location-trusted", false, "as -L, and send -u's and -H's Authorization and Cookie to every host a redirect leads to")
	f.IntVar(&o.maxRedirs, "max-redirs", defaultMaxRedirs, "with -L, most redirects followed (-1: no limit)")
	f.BoolVarP(&o.insecure, "insecure", "k", false, "accept any TLS certificate")
	f.BoolVar(&o.compressed, "compressed", false, "ask for a compressed answer (Accept-Encoding: deflate, gzip, br, zstd) and write its body decoded; -i shows the headers as they came")
	f.StringVarP(&o.upload, "upload-file", "T", "", "PUT FILE as the body (- for stdin), sent again from its start on each attempt; a URL whose path ends with / gets the file's name")
	f.StringArrayVar(&o.urls, "url", nil, "the URL, as curl's --url (instead of the argument; one URL)")
	f.StringVar(&o.protoFlag, "proto", "", "PROTOCOLS the URL and redirects may use, as curl: '=https' (only https), '-http' (all but http), '+https' or 'https' (add), 'all'; comma-separated; another exits 1")
	f.StringVar(&o.protoRedirFlag, "proto-redir", "", "PROTOCOLS that -L may follow a redirect to, as --proto (default: http and https)")
	for _, v := range []string{"1.0", "1.1", "1.2", "1.3"} {
		v := v
		f.Var(tlsMinFlag{&o.tlsMin, v}, "tlsv"+v, "speak TLS "+v+" or later")
		f.Lookup("tlsv" + v).NoOptDefVal = "true"
	}
	f.StringVarP(&o.certFile, "cert", "E", "", "FILE: the client certificate (PEM) to show a server that asks for one; its key in FILE too, or in --key's")
	f.StringVar(&o.keyFile, "key", "", "FILE: -E's private key (PEM, not encrypted)")
	f.StringVar(&o.tlsMax, "tls-max", "", "VERSION: the newest TLS version to speak (1.0, 1.1, 1.2, 1.3 or default)")
	f.Var(&o.maxFilesize, "max-filesize", "exit 63, writing no body, when the answer's Content-Length is over BYTES (k, M, G for KiB, MiB, GiB); a body of unknown length is not bounded, as curl 7.88; 0: no limit")
	f.StringArrayVar(&o.connectToFlag, "connect-to", nil, "HOST1:PORT1:HOST2:PORT2: connect to HOST2:PORT2 for HOST1:PORT1, which the URL, Host and TLS keep (an empty HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the one asked for; the first that matches wins; repeatable)")
	f.StringVar(&o.stderrFile, "stderr", "", "FILE: write the messages (errors, -v, -w's %{stderr}) to FILE instead of stderr; - for stdout")
	f.Bool("tcp-nodelay", false, "accepted as curl's: TCP_NODELAY is on without it (Go's default, as curl's)")
	f.BoolVar(&o.noKeepalive, "no-keepalive", false, "send no TCP keepalive probes")
	f.IntVar(&o.keepaliveTime, "keepalive-time", 0, "SECONDS idle before TCP keepalive probes (default 30)")
	f.StringVar(&o.unixSocket, "unix-socket", "", "PATH: connect to the Unix socket at PATH instead of the URL's host and port, which Host keeps (as curl; the Docker daemon's /var/run/docker.sock)")
	f.StringArrayVar(&o.resolve, "resolve", nil, "HOST:PORT:ADDR[,ADDR...]: connect to ADDR (in order, until one answers) for HOST:PORT, which the URL, Host and TLS keep (repeatable)")
	f.StringVarP(&o.proxy, "proxy", "x", "", "send through this proxy ([SCHEME://]HOST:PORT; http when no scheme; https, socks5 too); without it, $http_proxy, $HTTPS_PROXY and $NO_PROXY as Go reads them")
	f.StringVar(&o.noProxy, "noproxy", "", "hosts to reach without -x's proxy: names, domains (example.com covers its subdomains), comma-separated; * for all")
	f.BoolVar(&o.mkdirs, "create-dirs", false, "make the folders of -o's file (mode 0750)")
	f.StringVar(&o.caCert, "cacert", "", "trust the certificates of this PEM FILE instead of the system's")
	f.VarP(ipVersion{&o.network, "tcp4"}, "ipv4", "4", "connect over IPv4 only (the last of -4 and -6 decides)")
	f.VarP(ipVersion{&o.network, "tcp6"}, "ipv6", "6", "connect over IPv6 only (the last of -4 and -6 decides)")
	f.Lookup("ipv4").NoOptDefVal, f.Lookup("ipv6").NoOptDefVal = "true", "true"
	f.BoolVar(&o.http11, "http1.1", false, "speak HTTP/1.1 only (without it, HTTP/2 where TLS offers it)")
	f.Bool("http2", false, "accepted as curl's: HTTP/2 where TLS offers it, the default (over http:// no h2c upgrade is asked for, where curl asks; --http1.1 wins)")
	for _, name := range []string{"progress-bar", "no-buffer", "fail-early"} {
		f.Bool(name, false, "accepted as curl's: yaoki http draws no progress meter, writes the body as it comes and sends one URL")
	}
	f.BoolP("progress-bar-short", "#", false, "accepted as curl's -#: yaoki http draws no progress meter")
	f.Lookup("progress-bar-short").Hidden = true
	f.BoolP("no-buffer-short", "N", false, "accepted as curl's -N: yaoki http writes the body as it comes")
	f.Lookup("no-buffer-short").Hidden = true
	f.BoolVar(&o.pathAsIs, "path-as-is", false, "send the URL's /./ and /../ segments as written (without it they are removed, as curl removes them)")
	f.BoolVarP(&o.globoff, "globoff", "g", false, "send {} and [] in the URL as written; without it, as curl reads them: a glob ({a,b}, [1-3]) is refused (yaoki http sends one URL), \\{ sends {")
	f.StringVarP(&o.user, "user", "u", "", "USER:PASSWORD for basic authentication")
	f.BoolVarP(&o.netrc, "netrc", "n", false, "without -u, the login and password of the URL's host (or the default entry) in $HOME/.netrc, as curl; a file that is not there gives none")
	f.BoolVar(&o.netrcOptional, "netrc-optional", false, "as -n (curl's: the file may be missing)")
	f.StringVar(&o.netrcFile, "netrc-file", "", "FILE: as -n, with FILE for $HOME/.netrc")
	f.StringVar(&o.bearer, "oauth2-bearer", "", "TOKEN: send Authorization: Bearer TOKEN (in place of -u's; -H Authorization replaces it)")
	f.Var(&o.connectTimeout, "connect-timeout", "bound on each connection's setup, TCP and TLS (default: none)")
	f.StringVarP(&o.writeOut, "write-out", "w", "", "write FORMAT on stdout at the end: %{http_code} %{time_total} %{time_connect} %{time_starttransfer} %{size_download} %{num_retries} %{url_effective} %{exitcode} %header{NAME} ... and \\n; @FILE reads it")
	f.StringVarP(&o.userAgent, "user-agent", "A", "", "User-Agent header (default yaoki/VERSION)")
	f.StringVarP(&o.referer, "referer", "e", "", "Referer header; 'URL;auto' (or ';auto') with -L sends, on each redirect, the URL left")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "write each attempt's headers and each retry decision on stderr")
	f.StringVar(&o.key, "idempotency-key", "", "auto (a new key for POST and PATCH), off, or the KEY to send on every attempt")
	o.cookie.register(f)
	f.VarP(&configFlag{fs: f, stdin: cmd.InOrStdin}, "config", "K", "read curl flags from FILE (- for stdin) at this place among the flags, one a line, as curl's config file: 'silent', 'header = \"X-A: 1\"', 'url = URL', '-o out'; # comments")
	f.StringVarP(&o.byteRange, "range", "r", "", "ask for byte RANGE only, as curl: START-END, START-, -SUFFIX, or several with ',' (Range: bytes=RANGE; with a body, Content-Range: bytes RANGE/SIZE)")
	f.StringVarP(&o.continueAt, "continue-at", "C", "", "continue a download from byte OFFSET (- : from where -o's file ends): asks for the bytes from it and appends them to the file")
	o.hedge.Register(f)
	o.obs.Register(f)
	return cmd
}

// methodFor is the method sent: -X's, else PUT with -T, HEAD with -I,
// POST with a body, GET.
func (o *httpOptions) methodFor(hasBody bool) string {
	switch {
	case o.method != "":
		return o.method
	case o.upload != "":
		return http.MethodPut
	case o.head:
		return http.MethodHead
	case hasBody:
		return http.MethodPost
	}
	return http.MethodGet
}

// say writes an informational line on stderr, unless -s.
func (o *httpOptions) say(w io.Writer, format string, args ...any) {
	if !o.silent {
		fmt.Fprintf(w, "yaoki http: "+format+"\n", args...)
	}
}

// failWith returns the exit error for code, with msg (run prints it
// unless -s without -S).
func (o *httpOptions) failWith(code int, msg string) error {
	return cli.Exit(code, fmt.Sprintf("(%d) %s", code, msg))
}

// check refuses the flag values that cannot be used, before anything is
// read or sent.
func (o *httpOptions) check(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if changed("request") && strings.TrimSpace(o.method) == "" {
		return cli.Usagef(`-X "": want a method such as GET, POST or PUT`)
	}
	if o.method != "" && !validToken(o.method) {
		return cli.Usagef("-X %q: a method is one word of letters, digits and !#$%%&'*+-.^_`|~, such as GET or POST", o.method)
	}
	if changed("idempotency-key") && o.key == "" {
		return cli.Usagef(`--idempotency-key "": want auto, off, or the key to send (e.g. a UUID)`)
	}
	if o.key != "" && !validHeaderValue(o.key) {
		return cli.Usagef("--idempotency-key %q: a key cannot hold control characters", o.key)
	}
	if changed("retry") {
		if changed("max-attempts") {
			return cli.Usagef("--retry %d and --max-attempts %d say the same thing: use one (--retry N is --max-attempts N+1)", o.retries, o.pf.MaxAttempts)
		}
		if o.retries < 0 {
			return cli.Usagef("--retry %d: want retries ≥ 0 (--retry N makes at most N+1 attempts)", o.retries)
		}
		if err := cmd.Flags().Set("max-attempts", strconv.Itoa(o.retries+1)); err != nil {
			return cli.Usagef("--retry %d: %v", o.retries, err)
		}
	}
	if changed("retry-delay") && o.retryDelay.D > 0 {
		for _, name := range []string{"base", "throttle-base", "cap", "multiplier", "jitter", "policy"} {
			if changed(name) {
				return cli.Usagef("--retry-delay %s and --%s cannot be combined: --retry-delay makes every wait %s (--base, --throttle-base and --cap %s, --jitter none); use one", flags.SecondsText(o.retryDelay.D), name, flags.SecondsText(o.retryDelay.D), flags.SecondsText(o.retryDelay.D))
			}
		}
		d := strconv.FormatInt(o.retryDelay.D.Nanoseconds(), 10) + "ns"
		for _, set := range [][2]string{{"base", d}, {"throttle-base", d}, {"cap", d}, {"jitter", "none"}} {
			if err := cmd.Flags().Set(set[0], set[1]); err != nil {
				return cli.Usagef("--retry-delay %s: %v", flags.SecondsText(o.retryDelay.D), err)
			}
		}
	}
	if o.retryAll && changed("policy") {
		return cli.Usagef("--retry-all-errors and --policy cannot be combined: the policy's retriers say what is retried (HTTP.4XX, States.ALL); use one")
	}
	if o.maxRedirs < -1 {
		return cli.Usagef("--max-redirs %d: want ≥ 0, or -1 for no limit", o.maxRedirs)
	}
	if changed("connect-timeout") && o.connectTimeout.D == 0 {
		return cli.Usagef("--connect-timeout 0: want a duration > 0, such as 5 or 2.5s (leave it out for no bound)")
	}
	if changed("user") && !strings.Contains(o.user, ":") {
		return cli.Usagef("-u %q: want USER:PASSWORD (yaoki http does not prompt for a password)", o.user)
	}
	if o.remoteName && changed("output") {
		return cli.Usagef("-o %s and -O both name the file: use one (-O names it from the URL)", o.output)
	}
	o.protos, o.protosRedir = protoSet{true, true}, protoSet{true, true}
	if changed("proto") {
		o.protos = parseProto(o.protoFlag, protoSet{true, true})
	}
	if changed("proto-redir") {
		o.protosRedir = parseProto(o.protoRedirFlag, protoSet{true, true})
	}
	if _, ok := tlsVersions[o.tlsMax]; !ok && o.tlsMax != "" && o.tlsMax != "default" {
		return cli.Usagef("--tls-max %q: want 1.0, 1.1, 1.2, 1.3 or default", o.tlsMax)
	}
	if o.keepaliveTime < 0 {
		return cli.Usagef("--keepalive-time %d: want seconds ≥ 1", o.keepaliveTime)
	}
	if o.headerName && (o.include || o.head) {
		return cli.Usagef("-J and -i (or -I) cannot be combined, as in curl: the headers would be written to the file before its name is known; use -D FILE for the headers")
	}
	if o.headerName && changed("continue-at") {
		return cli.Usagef("-J and -C cannot be combined: the file to continue is not known before the answer names it; name it with -o FILE")
	}
	if o.fail && o.failWithBody {
		return cli.Usagef("-f and --fail-with-body cannot be combined, as in curl: -f writes no body when the status is 400 or more, --fail-with-body writes it; use one")
	}
	if o.upload != "" && (len(o.data) > 0 || o.head || o.get) {
		return cli.Usagef("-T %s cannot be combined with -d, --json, -I or -G: -T sends the file as the body", o.upload)
	}
	if len(o.form) > 0 && (len(o.data) > 0 || o.upload != "" || o.head) {
		return cli.Usagef("-F cannot be combined with -d, --data-binary, --data-raw, --data-urlencode, --json, -T or -I, as in curl: -F sends a multipart form as the body; use one")
	}
	if o.head && len(o.data) > 0 && !o.get {
		return cli.Usagef("-I cannot send a body: drop -I, or add -G to send the data in the query string")
	}
	if changed("continue-at") {
		if _, _, err := parseContinueAt(o.continueAt); err != nil {
			return err
		}
		if len(o.data) > 0 || len(o.form) > 0 || o.upload != "" {
			return cli.Usagef("-C cannot be combined with -d, --json, -F or -T: yaoki http continues downloads (GET), not uploads")
		}
		if changed("hedge-after") {
			return cli.Usagef("-C cannot be combined with --hedge-after: the copies would append to one file at once")
		}
	}
	o.noUserAgent = changed("user-agent") && o.userAgent == ""
	if o.rangeSet = changed("range"); o.rangeSet {
		if err := o.checkRange(cmd.ErrOrStderr()); err != nil {
			return err
		}
	}
	// As curl: ";auto" anywhere ends the Referer given and asks for the
	// URL left on each redirect.
	if ref, _, ok := strings.Cut(o.referer, ";auto"); ok {
		o.referer, o.autoReferer = ref, true
	}
	if !validHeaderValue(o.bearer) {
		return cli.Usagef("--oauth2-bearer: a token cannot hold control characters")
	}
	if !validHeaderValue(o.referer) {
		return cli.Usagef("-e %q: a Referer cannot hold control characters", o.referer)
	}
	if err := o.readHeaderFiles(cmd.InOrStdin()); err != nil {
		return err
	}
	for _, h := range o.headers {
		name, value, ok := cutHeader(h)
		if !ok {
			return cli.Usagef("-H %q: want 'Name: value', 'Name:' (send no Name) or 'Name;' (send Name empty), e.g. -H 'Content-Type: application/json'", h)
		}
		if strings.EqualFold(name, "Host") && value == "" {
			return cli.Usagef("-H %q: yaoki http always sends Host (HTTP/1.1 requires it): want 'Host: name' to send another", h)
		}
		if !validHeaderName(name) {
			return cli.Usagef("-H %q: %q is not a header name: want letters, digits and !#$%%&'*+-.^_`|~ without spaces, e.g. -H 'Content-Type: application/json'", h, name)
		}
		if !validHeaderValue(value) {
			return cli.Usagef("-H %q: a header value cannot hold control characters", h)
		}
	}
	return nil
}

// run sends the request to rawURL and writes the answer. As curl, a run
// that ends before its transfer (a malformed URL, a file that cannot be
// read or written) still writes -w's format, with %{http_code} 000 and
// %{url} as given; and -s without -S silences every message but a bad
// usage's.
func (o *httpOptions) run(cmd *cobra.Command, rawURL string) error {
	if o.stderrFile == "" {
		return o.run1(cmd, rawURL)
	}
	// As curl --stderr: every message, the run's error line too (which
	// main would write on stderr), goes to the file.
	w := cmd.OutOrStdout()
	if o.stderrFile != "-" {
		f, err := os.Create(o.stderrFile)
		if err != nil {
			return o.failWith(curlWriteError, fmt.Sprintf("--stderr %s: cannot write there: %v", o.stderrFile, err))
		}
		defer f.Close()
		w = f
	}
	o.realStderr = cmd.ErrOrStderr()
	cmd.SetErr(w)
	err := o.run1(cmd, rawURL)
	var ee *cli.ExitError
	if errors.As(err, &ee) && ee.Msg != "" {
		fmt.Fprintln(w, "yaoki:", ee.Msg)
		return cli.Exit(ee.Code, "")
	}
	return err
}

func (o *httpOptions) run1(cmd *cobra.Command, rawURL string) error {
	// As curl, which ignores SIGPIPE: a reader that went away (| head)
	// makes the write fail (exit 23), and the run ends as after any
	// failed write (-w, -c's jar), where Go's runtime would kill the
	// process at its first write to a closed stdout. Asking for the
	// signal turns it into that write's EPIPE error.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	// net/http writes some things through the standard logger (bytes that
	// came on an idle connection: a HEAD answered with a body); curl says
	// such things with -v only, as "* " lines.
	logOut, logFlags, logPrefix := log.Writer(), log.Flags(), log.Prefix()
	defer func() { log.SetOutput(logOut); log.SetFlags(logFlags); log.SetPrefix(logPrefix) }()
	log.SetOutput(io.Discard)
	if o.verbose {
		log.SetOutput(cmd.ErrOrStderr())
		log.SetFlags(0)
		log.SetPrefix("* ")
	}
	err := o.transfer(cmd, rawURL)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code == cli.ExitUsage {
		return err
	}
	if !o.infoWritten {
		given := o.urlGiven
		if given == "" {
			given = uploadURL(rawURL, o.upload)
		}
		msg := ee.Msg
		if _, after, ok := strings.Cut(msg, ") "); ok && strings.HasPrefix(msg, "(") {
			msg = after
		}
		method := o.methodFor(len(o.data) > 0 && !o.get || len(o.form) > 0)
		info := transferInfo{url: given, urlGiven: given, method: method, filename: o.output, exitCode: ee.Code, errMsg: msg}
		o.writeInfo(cmd.OutOrStdout(), cmd.ErrOrStderr(), o.format, &info)
	}
	if o.silent && !o.showError {
		return cli.Exit(ee.Code, "")
	}
	return err
}

func (o *httpOptions) transfer(cmd *cobra.Command, rawURL string) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	if o.extraOutputs > 0 {
		o.say(stderr, "warning: more -o than URLs: the body goes to %s, the first, as curl writes it", o.output)
	}
	format, err := readWriteOut(o.writeOut, cmd.InOrStdin())
	if err != nil {
		return err
	}
	o.format, o.urlGiven = format, uploadURL(rawURL, o.upload)
	if !o.globoff {
		if rawURL, err = unglob(rawURL); err != nil {
			o.infoWritten = true // as curl: no -w for a URL it cannot glob
			return err
		}
		o.urlGiven = uploadURL(rawURL, o.upload)
	}
	tg, err := checkURL(uploadURL(rawURL, o.upload), o.pathAsIs)
	if err != nil {
		return err
	}
	o.applyNetrc(tg.url.Hostname())
	if !o.protos.allows(tg.url.Scheme) {
		return o.failWith(curlUnsupported, fmt.Sprintf("protocol %q not allowed by --proto %s", tg.url.Scheme, o.protoFlag))
	}
	for _, name := range checkWriteOut(format) {
		fmt.Fprintf(stderr, "yaoki: unknown --write-out variable: '%s' (known: %s)\n", name, writeOutNames())
	}
	cp, err := o.pf.Build(cmd)
	if err != nil {
		return err
	}
	hc, err := o.hedge.Config(cmd)
	if err != nil {
		return err
	}
	for _, w := range cp.Unmatchable("http") {
		o.say(stderr, "%s", w)
	}
	u := tg.url
	o.target = tg
	body, hasBody, isJSON, err := requestBody(o.data, cmd.InOrStdin())
	if err != nil {
		return err
	}
	if len(o.form) > 0 {
		// As curl, -G leaves a form in the body.
		if body, o.formType, err = formBody(o.form, newBoundary(), o.givenContentType(), cmd.InOrStdin()); err != nil {
			return err
		}
		hasBody = true
	}
	if o.get && hasBody && o.formType == "" {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += lowerEscapes(string(body))
		body, hasBody = nil, false
		o.urlGiven = tg.text(u, false) // as curl: -G's URL is made anew, with the data
		if i := strings.IndexFunc(u.RawQuery, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
			return o.failWith(curlBadURL, fmt.Sprintf("-G: the query %q holds %q at byte %d: a URL has no spaces or control characters; encode the data with --data-urlencode, or write a space as %%20 or +", u.RawQuery, u.RawQuery[i], i))
		}
	}
	// As curl, -X's method is sent as written: methods are case-sensitive
	// (RFC 9110 §9.1), so "get" is not GET and is retried as a method of
	// unknown safety.
	method := o.methodFor(hasBody)
	outFlag := "-o"
	if o.remoteName {
		outFlag = "-O"
		name, ok := remoteFileName(tg)
		if !ok {
			return o.failWith(curlWriteError, fmt.Sprintf("-O: %s has no file name after its last /: name the file with -o FILE", tg.text(u, true)))
		}
		o.output = name
	}
	if o.outputDir != "" && o.output != "" && o.output != "-" {
		o.output = strings.TrimSuffix(o.outputDir, "/") + "/" + o.output
	}
	if err := o.createDirs(); err != nil {
		return err
	}
	if cmd.Flags().Changed("continue-at") {
		o.setupResume(cmd.OutOrStdout())
	} else if !cmd.Flags().Changed("hedge-after") && !(o.headerName && o.remoteName) {
		o.setupRestart(cmd.OutOrStdout())
	}
	if o.resolved, err = o.parseResolve(); err != nil {
		return err
	}
	if err := o.parseConnectTo(); err != nil {
		return err
	}
	if err := o.parseProxy(); err != nil {
		return err
	}
	roots, err := o.rootCAs()
	if err != nil {
		return err
	}
	if err := o.loadClientCert(); err != nil {
		return err
	}
	if err := checkOutput(outFlag, o.output); err != nil {
		return o.failWith(curlWriteError, err.Error())
	}
	if err := o.resume.makeFile(); err != nil {
		return o.failWith(curlWriteError, fmt.Sprintf("-C: cannot open %s to append to it: %v", o.output, err))
	}
	if err := checkOutput("-D", o.dumpHeader); err != nil {
		return o.failWith(curlWriteError, err.Error())
	}

	ctx := cmd.Context()
	if d := cp.Retry.MaxElapsed; d > 0 {
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
		return cli.Exit(curlBadURL, fmt.Sprintf("(3) cannot make a %s request to %s: %v", method, rawURL, err))
	}
	if o.upload != "" {
		if err := o.uploadBody(req, cmd.InOrStdin()); err != nil {
			return err
		}
	}
	o.setHeaders(req, hasBody, isJSON)
	keyMode := o.key
	if keyMode == "" && cp.Doc != nil {
		keyMode = cp.Doc.IdempotencyKey
	}
	switch keyMode {
	case "", "off":
	case "auto":
		if !httpretry.Idempotent(method) && req.Header.Get(header.IdempotencyKey) == "" {
			req.Header.Set(header.IdempotencyKey, httpretry.NewKey())
		}
	default:
		req.Header.Set(header.IdempotencyKey, keyMode)
	}

	ob, err := o.obs.Start(cmd, "yaoki http")
	if err != nil {
		return err
	}
	defer ob.Stop()
	lw := &lockedWriter{w: stderr}
	limit := "unlimited"
	if n := cp.Attempts(); n > 0 {
		limit = fmt.Sprint(n)
	}
	obs := &httpObserver{w: lw, verbose: o.verbose, limit: limit}
	base := o.baseTransport(roots)
	addrs := &connTrace{base: base}
	o.trace = addrs
	var rt http.RoundTripper = addrs
	if o.verbose {
		rt = &verboseTransport{base: rt, w: lw}
	}
	rt = writtenPath{base: rt, t: tg}
	rt = curlErrors{base: rt, all: o.retryAll, resume: o.resume}
	// No per-host budget: one call per process, so a budget could only cut
	// the retries asked for (--retry, --policy), never protect a fleet (a
	// policy document's own Budget still applies).
	t := &httpretry.Transport{Base: rt, Policy: cp.Retry, Observer: event.Multi(obs, ob.Observer),
		Guards: httpretry.Guards{Budget: httpretry.NoBudget}, Hedge: hc}
	if o.removedHeader(header.AttemptCount) {
		t.AttemptHeader = httpretry.NoHeader
	}
	ob.Track(t)
	switch {
	case cp.Doc != nil:
		t.Statuses = policyfile.Statuses(cp.Doc)
	case o.retryAll && (o.fail || o.failWithBody):
		t.Statuses = failStatuses()
	}
	defer t.CloseIdleConnections()
	var window *retryWindow
	if d := o.retryMaxTime.D; d > 0 {
		window = &retryWindow{max: d}
		obs.window = window
		t.Policy.Classify = window.classify(t.Policy.Classify)
	}
	client := &http.Client{Transport: t, CheckRedirect: o.checkRedirect}
	if o.cookie.on() {
		var verbose io.Writer
		if o.verbose {
			verbose = stderr
		}
		given, jar := o.cookie.setup(cmd.InOrStdin(), verbose, time.Now())
		client.Transport = &cookieTransport{base: t, jar: jar, given: given, host: u.Hostname(), userCookie: o.givenHeader("Cookie"), t: tg}
		// After -w: curl writes the jar when the run ends.
		defer func() {
			o.cookie.save(jar, cmd.OutOrStdout(), func(format string, args ...any) { o.say(stderr, format, args...) }, time.Now())
		}()
	}
	if o.verbose {
		fmt.Fprintf(stderr, "* yaoki http: %s %s (attempts: %s, policy: %s, retry mode: %s", method, tg.text(u, true), limit, cp.Source, cp.ModeText())
		if k := req.Header.Get(header.IdempotencyKey); k != "" {
			fmt.Fprintf(stderr, ", Idempotency-Key: %s", k)
		}
		fmt.Fprintln(stderr, ")")
	}
	start := time.Now()
	if window != nil {
		window.start = start
	}
	resp, err := client.Do(req)
	tg.restore(resp)
	info := transferInfo{url: tg.text(u, false), urlGiven: o.urlGiven, method: method, filename: o.output}
	if err != nil {
		code, msg := curlExit(ctx, err)
		if dns := (*net.DNSError)(nil); code == curlNoHost && o.proxyURL != nil && errors.As(revealed(err), &dns) && strings.EqualFold(dns.Name, o.proxyURL.Hostname()) {
			code, msg = curlNoProxy, "could not resolve proxy: "+dns.Name
		}
		if code == curlTimeout && cp.Retry.MaxElapsed > 0 && ctx.Err() != nil {
			msg = fmt.Sprintf("operation timed out: --max-time %s passed without an answer", flags.SecondsText(cp.Retry.MaxElapsed))
		}
		_, total, retries := obs.counts()
		if total > 1 && code != curlTooManyRedirect {
			msg += fmt.Sprintf(" (after %d attempts in %s)", total, flags.SecondsText(time.Since(start)))
		}
		o.notRetried(stderr, method, err, 0, obs.gaveUp())
		if why := window.why(); why != "" && obs.gaveUp() == retry.ReasonPermanent.Key() {
			o.say(stderr, "gave up after %d attempt%s: %s", total, cli.Plural(total), why)
		}
		noBody := true
		if cut := (*errBodyCut)(nil); resp == nil && errors.As(err, &cut) && cut.resp != nil {
			// --retry-all-errors' last attempt ended with its body cut
			// short: what came of it is written, as curl writes it.
			resp, noBody = cut.resp, o.fail && cut.resp.StatusCode >= 400
		}
		if resp != nil {
			// Past --max-redirs: the redirect not followed, its body
			// closed; -i writes its headers and -w its status, as curl.
			info.answered(resp, tg)
			n, werr := o.write(cmd.OutOrStdout(), resp, noBody)
			info.size, info.filename = n, o.effectiveFilename()
			if werr != nil {
				code, msg = curlWriteError, werr.Error()
				if errors.Is(werr, errCannotResume) {
					code = curlCannotResume
				}
			}
		}
		addrs.carried(resp, &info, start)
		info.took, info.retries, info.exitCode, info.errMsg = time.Since(start), retries, code, msg
		o.writeInfo(cmd.OutOrStdout(), stderr, format, &info)
		return o.failWith(code, msg)
	}
	defer resp.Body.Close()
	info.answered(resp, tg)
	reason := obs.gaveUp()
	code, msg := curlOK, ""
	switch {
	case reason == retry.ReasonDeadline.Key():
		code, msg = curlTimeout, fmt.Sprintf("--max-time %s passed before the next attempt: last answer %s", flags.SecondsText(cp.Retry.MaxElapsed), resp.Status)
		if why := obs.deadlineWhy(); why != "" {
			msg = fmt.Sprintf("no time for the next attempt within --max-time %s: %s: last answer %s", flags.SecondsText(cp.Retry.MaxElapsed), why, resp.Status)
		}
	case o.maxFilesize > 0 && resp.ContentLength > int64(o.maxFilesize):
		o.tooLarge = true
		code, msg = curlFileTooLarge, fmt.Sprintf("maximum file size exceeded: the answer's Content-Length %d is over --max-filesize %d", resp.ContentLength, o.maxFilesize)
	case (o.fail || o.failWithBody) && resp.StatusCode >= 400:
		code, msg = curlHTTPError, fmt.Sprintf("the requested URL returned error: %d", resp.StatusCode)
	}
	noBody := code == curlHTTPError && !o.failWithBody || code == curlFileTooLarge
	n, werr := o.write(cmd.OutOrStdout(), resp, noBody)
	info.filename = o.effectiveFilename()
	// After the body: over HTTP/2 the request's body may still be on its
	// way when the answer comes, and %{size_request} and %{size_upload}
	// count it once written.
	addrs.carried(resp, &info, start)
	if !o.redirected.IsZero() && info.redirects > 0 {
		info.phases.redirect = o.redirected.Sub(start)
	}
	info.size = n
	last, total, retries := obs.counts()
	info.took, info.retries = time.Since(start), retries
	if werr != nil {
		code, msg = curlWriteError, werr.Error()
		if ctx.Err() != nil {
			code, msg = curlTimeout, fmt.Sprintf("--max-time %s passed while reading the answer", flags.SecondsText(cp.Retry.MaxElapsed))
		} else if errors.Is(werr, io.ErrUnexpectedEOF) {
			// As curl: the connection closed before the whole body came.
			code, msg = curlPartialFile, "transfer closed with outstanding read data remaining"
			if resp.ContentLength > n {
				msg = fmt.Sprintf("transfer closed with %d bytes remaining to read", resp.ContentLength-n)
			}
		} else if errors.Is(werr, errCannotResume) {
			code = curlCannotResume
		} else if errors.Is(werr, errDecode) {
			code, msg = curlBadEncoding, werr.Error()
		} else if errors.Is(werr, errReadBody) {
			code, msg = curlRecvError, werr.Error()
		}
	}
	switch reason {
	case retry.ReasonPermanent.Key():
		if why := window.why(); why != "" {
			o.say(stderr, "gave up after %d attempt%s in %s: %s: last answer %s", last, cli.Plural(last),
				flags.SecondsText(time.Since(start)), why, resp.Status)
		}
	case "", "do_not_retry":
	case "not_idempotent", "body_not_replayable":
		o.notRetried(stderr, method, nil, resp.StatusCode, reason)
	default:
		if code != curlTimeout {
			o.say(stderr, "gave up after %d attempt%s in %s (%s): last answer %s", last, cli.Plural(last),
				flags.SecondsText(time.Since(start)), strings.ReplaceAll(reason, "_", " "), resp.Status)
		}
	}
	_ = total
	info.exitCode, info.errMsg = code, msg
	o.writeInfo(cmd.OutOrStdout(), stderr, format, &info)
	if code != curlOK {
		return o.failWith(code, msg)
	}
	return nil
}

// notRetried says, once, that a request was sent once only although its
// outcome was retryable: a POST or PATCH without Idempotency-Key, or a
// body that could not be replayed.
func (o *httpOptions) notRetried(w io.Writer, method string, err error, status int, reason string) {
	if o.silent && !o.showError {
		return
	}
	what := "its failure"
	if status != 0 {
		what = fmt.Sprintf("its %d answer", status)
	} else if re := (*retry.Error)(nil); errors.As(err, &re) && re.Last != nil {
		what = "its failure (" + lastMessage(re.Last) + ")"
	}
	switch {
	case reason == "not_idempotent" || err != nil && errors.Is(err, httpretry.ErrNotIdempotent):
		fmt.Fprintf(w, "yaoki http: the %s was sent once, not retried: %s is retryable, but a %s without an Idempotency-Key may have been executed; --idempotency-key auto sends one key on every attempt so that the server can execute it once\n",
			method, what, method)
	case reason == "body_not_replayable" || err != nil && errors.Is(err, httpretry.ErrBodyNotReplayable):
		fmt.Fprintf(w, "yaoki http: the %s was sent once, not retried: %s is retryable, but its body could not be sent again\n", method, what)
	}
}

// setHeaders sets the headers curl would send, then -H's.
func (o *httpOptions) setHeaders(req *http.Request, hasBody, isJSON bool) {
	h := req.Header
	h.Set("User-Agent", "yaoki/"+cli.Version())
	h.Set("Accept", "*/*")
	if o.compressed {
		h.Set("Accept-Encoding", acceptEncoding)
	}
	if hasBody {
		if o.formType != "" {
			h.Set("Content-Type", o.formType)
		} else if isJSON {
			h.Set("Content-Type", "application/json")
			h.Set("Accept", "application/json")
		} else {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if o.userAgent != "" || o.noUserAgent {
		h.Set("User-Agent", o.userAgent) // empty: net/http sends none
	}
	if o.referer != "" {
		h.Set("Referer", o.referer)
	}
	o.setRange(req, hasBody)
	if o.user != "" {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(o.user)))
	}
	if o.bearer != "" {
		h.Set("Authorization", "Bearer "+o.bearer) // as curl: over -u's, whatever their order
	}
	// As curl: the first -H of a name replaces the header yaoki would
	// send, the others are added; "Name:" removes the header yaoki would
	// send (not one given by -H); "Name;" sends Name empty.
	given := map[string]bool{}
	for _, hv := range o.headers {
		name, value, _ := cutHeader(hv)
		name = http.CanonicalHeaderKey(name)
		if name == "Host" {
			req.Host = value
			continue
		}
		if value == "" && !strings.HasSuffix(hv, ";") {
			if !given[name] {
				h.Del(name)
				if name == "User-Agent" {
					h.Set(name, "") // how net/http sends none
				}
			}
			continue
		}
		if name == "Content-Type" && o.formType != "" {
			continue // in the form's Content-Type, with its boundary
		}
		if !given[name] {
			h.Del(name)
			given[name] = true
		}
		h.Add(name, value)
	}
	// As curl: -H 'Transfer-Encoding: chunked' sends the body chunked,
	// without Content-Length (net/http writes the header itself).
	if req.Body != nil && req.Body != http.NoBody && strings.EqualFold(h.Get("Transfer-Encoding"), "chunked") {
		h.Del("Transfer-Encoding")
		req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	}
}

// readHeaderFiles replaces each -H @FILE by FILE's lines, as curl 7.88
// reads them: split at CR and LF, empty lines skipped; @- reads stdin.
// A file that cannot be read exits 26 (curl warns and sends the request
// without them: a request without the headers asked for, Authorization
// say, is not one to send).
func (o *httpOptions) readHeaderFiles(stdin io.Reader) error {
	var out []string
	for _, h := range o.headers {
		name, ok := strings.CutPrefix(h, "@")
		if !ok {
			out = append(out, h)
			continue
		}
		b, err := readFileArg(name, stdin)
		if err != nil {
			return o.failWith(curlReadError, fmt.Sprintf("-H @%s: cannot read the headers: %v", name, err))
		}
		out = append(out, strings.FieldsFunc(string(b), func(r rune) bool { return r == '\r' || r == '\n' })...)
	}
	o.headers = out
	return nil
}

// removedHeader reports whether -H 'Name:' removes the header yaoki
// would send as name (one not given by an earlier -H with a value).
func (o *httpOptions) removedHeader(name string) bool {
	for _, hv := range o.headers {
		n, value, _ := cutHeader(hv)
		if !strings.EqualFold(n, name) {
			continue
		}
		if value != "" || strings.HasSuffix(hv, ";") {
			return false
		}
		return true
	}
	return false
}

// givenContentType returns the first -H Content-Type's value, or "".
func (o *httpOptions) givenContentType() string {
	for _, hv := range o.headers {
		if name, value, _ := cutHeader(hv); strings.EqualFold(name, "Content-Type") && value != "" {
			return value
		}
	}
	return ""
}

// cutHeader splits a -H value as curl reads it: "Name: value", "Name:"
// (value empty: send no Name) or "Name;" (value empty: send Name empty;
// the ";" ends the value).
// Name and value are trimmed of spaces and tabs.
func cutHeader(hv string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(hv, ":")
	if !ok {
		name, ok = strings.CutSuffix(hv, ";")
		value = ""
	}
	return strings.TrimSpace(name), strings.TrimSpace(value), ok
}

// checkRedirect follows redirects with -L, up to --max-redirs, sending
// the next request as curl does: with -X's method (curl keeps it, while
// a 301, 302 or 303 still drops the body), with the Referer given (no
// Referer of its own; with -e ';auto', the URL left, without credentials
// and fragment), and without credentials (Authorization, Cookie) when the
// redirect leaves the first URL's origin: scheme, host and port.
func (o *httpOptions) checkRedirect(req *http.Request, via []*http.Request) error {
	if !o.location && !o.trusted {
		return http.ErrUseLastResponse
	}
	if o.maxRedirs >= 0 && len(via) > o.maxRedirs {
		return &errTooManyRedirects{n: o.maxRedirs}
	}
	if err := o.checkProto(req); err != nil {
		return err
	}
	first := via[0]
	if o.method != "" {
		req.Method = o.method
	}
	if o.autoReferer {
		req.Header.Set("Referer", o.target.referer(via[len(via)-1]))
	} else if ref := first.Header.Values("Referer"); len(ref) > 0 {
		req.Header["Referer"] = ref
	} else {
		req.Header.Del("Referer")
	}
	o.rangeOnRedirect(req)
	if o.trusted {
		// Go's client leaves them out on a redirect to another domain.
		for _, h := range []string{"Authorization", "Cookie"} {
			if v := first.Header.Values(h); len(v) > 0 && req.Header.Get(h) == "" {
				req.Header[h] = v
			}
		}
	} else if !sameOrigin(first.URL, req.URL) {
		for _, h := range []string{"Authorization", "Cookie", "Cookie2", "Www-Authenticate"} {
			req.Header.Del(h)
		}
	}
	o.redirected = time.Now()
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (the scheme's default port when none is written).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}
