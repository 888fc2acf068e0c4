package curl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// Exit codes of yaoki http. Where curl has a code for the same failure,
// yaoki http uses it (curl's manual, "EXIT CODES"); its own codes are
// above 100.
const (
	curlOK              = 0   // an answer (with -f: a status below 400)
	curlUnsupported     = 1   // the URL's scheme is not http or https
	curlUsage           = 2   // bad usage: an unknown flag, a value that cannot be used
	curlBadURL          = 3   // the URL is malformed (no host, a port out of range)
	curlNoProxy         = 5   // the proxy's host name did not resolve
	curlNoHost          = 6   // the host name did not resolve
	curlNoConnect       = 7   // the connection was refused or could not be made
	curlPartialFile     = 18  // the connection closed before the whole body came
	curlHTTPError       = 22  // -f or --fail-with-body: the final status is 400 or more
	curlWriteError      = 23  // the body could not be written (-o's file, a closed stdout)
	curlReadError       = 26  // a --data @FILE could not be read
	curlTimeout         = 28  // --max-time or --connect-timeout passed
	curlCannotResume    = 33  // -C: the answer is not the part asked for
	curlTLS             = 35  // the TLS handshake failed
	curlTooManyRedirect = 47  // -L followed more than --max-redirs redirects
	curlBadResolve      = 49  // a --resolve entry could not be read
	curlEmptyReply      = 52  // the server closed the connection without answering
	curlRecvError       = 56  // the connection broke (reset) while waiting for the answer
	curlLocalCert       = 58  // -E, --key: the client certificate or its key could not be read
	curlBadCert         = 60  // the server's certificate was not trusted (see -k)
	curlBadEncoding     = 61  // --compressed: the body could not be decoded
	curlFileTooLarge    = 63  // --max-filesize: the answer's Content-Length is over it
	curlCACert          = 77  // --cacert: the file holds no certificate
	yaokiRefused        = 101 // no attempt could be sent: a local guard (budget, breaker, throttle) refused
	yaokiInterrupted    = 130 // stopped by SIGINT or SIGTERM
)

// exitCodesHelp is the exit-code table of yaoki http's help; docs/cli.md
// has the same table.
const exitCodesHelp = `
Exit codes (curl's where curl has one):
  0    an answer, whatever its status (with -f: a status below 400); a
       request that gave up on a retryable status still exits 0 without -f,
       as curl --retry does, and says so on stderr
  1    unsupported protocol: the URL is not http or https, or --proto
       (--proto-redir for a redirect) leaves it out
  2    bad usage: unknown flag, a value that cannot be used
  3    malformed URL (a space or control character, no host, a port out
       of 1-65535)
  5    -x: the proxy's host name did not resolve
  6    the host name did not resolve
  7    the connection failed (refused, unreachable)
  18   the connection closed before the whole body came (what came is
       written)
  22   -f/--fail-with-body: the final status is 400 or more
  23   the body could not be written (-o's file, or stdout whose reader
       went away, as with | head)
  26   a --data @FILE could not be read
  33   -C: the answer is not the part asked for (the server ignores ranges)
  28   --max-time or --connect-timeout passed, or the wait before the next
       attempt would end after --max-time (the last answer, if any, is
       still written)
  35   the TLS handshake failed
  47   -L: more than --max-redirs redirects
  49   a --resolve entry could not be read
  52   the server closed the connection without an answer
  56   the connection broke while waiting for the answer (reset), or
       closed in the middle of its header
  58   -E, --key: the client certificate or its key could not be read
  60   the server's certificate is not trusted (-k skips the check)
  61   --compressed: the body could not be decoded
  63   --max-filesize: the answer's Content-Length is over it
  77   --cacert: the file could not be read or holds no certificate
  101  no attempt could be sent: a local guard (budget, breaker, throttle)
       refused it
  130  stopped by SIGINT or SIGTERM
A request given up on after a connection failure exits with the code of its
last failure (7, 28, 52, 56, ...).`

// errTooManyRedirects is what -L's redirect check returns past
// --max-redirs.
type errTooManyRedirects struct{ n int }

func (e *errTooManyRedirects) Error() string {
	return fmt.Sprintf("maximum (%d) redirects followed", e.n)
}

// curlExit returns curl's exit code for err, the error with which a
// request ended without an answer, and a one-line message in curl's
// words, without the "(N)" prefix.
func curlExit(ctx context.Context, err error) (int, string) {
	var (
		he     *httpretry.Error
		re     *retry.Error
		tooMR  *errTooManyRedirects
		proto  *errProtoDisabled
		cut    *errBodyCut
		dnsErr *net.DNSError
		certV  *tls.CertificateVerificationError
		unkCA  x509.UnknownAuthorityError
		hostE  x509.HostnameError
		invE   x509.CertificateInvalidError
		recE   tls.RecordHeaderError
		alertE tls.AlertError
		opErr  *net.OpError
		wout   *errWriteOut
	)
	last := err
	if errors.As(err, &re) && re.Last != nil {
		last = re.Last
	}
	last = revealed(last)
	switch {
	case errors.As(err, &tooMR):
		return curlTooManyRedirect, tooMR.Error()
	case errors.As(err, &proto):
		return curlUnsupported, proto.Error()
	case errors.As(last, &cut):
		return curlPartialFile, cut.Error()
	case errors.As(last, &wout):
		return curlWriteError, wout.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, retry.ErrDeadline), cli.IsTimeout(last):
		return curlTimeout, "operation timed out: " + lastMessage(last)
	case ctx.Err() != nil, errors.As(err, &he) && he.Reason == retry.ReasonCancelled:
		return yaokiInterrupted, "stopped by a signal"
	case errors.As(err, &re) && (re.Reason == retry.ReasonRejectedLocally || re.Reason == retry.ReasonBreakerOpen) && re.Last == nil:
		return yaokiRefused, "no attempt sent: " + re.Error()
	case errors.As(last, &dnsErr):
		return curlNoHost, "could not resolve host: " + dnsErr.Name
	case errors.As(last, &certV), errors.As(last, &unkCA), errors.As(last, &hostE), errors.As(last, &invE):
		return curlBadCert, "SSL certificate problem: " + lastMessage(last)
	case errors.As(last, &recE), errors.As(last, &alertE), errors.As(last, &opErr) && opErr.Op == "remote error":
		// "remote error": an alert the server sent (crypto/tls's own
		// alert type is not exported): it refused the handshake, a TLS
		// version (--tlsv1.3 to a TLS 1.2 server) or a client certificate.
		return curlTLS, "SSL connect error: " + lastMessage(last)
	case errors.Is(last, syscall.ECONNRESET):
		return curlRecvError, "recv failure: connection reset by peer"
	case errors.Is(last, io.ErrUnexpectedEOF):
		// Something came (a status line, some headers), then the
		// connection closed before the empty line that ends the header.
		return curlRecvError, "recv failure: the connection closed in the middle of the answer's header"
	case errors.Is(last, io.EOF):
		return curlEmptyReply, "empty reply from server"
	case errors.As(last, &opErr) && (opErr.Op == "dial" || opErr.Op == "proxyconnect"):
		return curlNoConnect, "failed to connect: " + lastMessage(last)
	}
	return curlRecvError, lastMessage(last)
}

// lastMessage is err's text without the url.Error wrapping that repeats
// the method and URL.
func lastMessage(err error) string {
	if ue := (*url.Error)(nil); errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return strings.TrimPrefix(err.Error(), "httpretry: ")
}

// checkURL parses a URL as curl reads it: without a scheme it is http, a
// '%' that starts no escape is kept as written (see target), a scheme
// other than http or https is unsupported (exit 1), and a URL with a
// space or a control character, without a host or with a port outside
// 1-65535 is malformed (exit 3).
func checkURL(raw string, asIs bool) (*target, error) {
	if i := strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return nil, cli.Exit(curlBadURL, fmt.Sprintf("(3) %q holds %q at byte %d: a URL has no spaces or control characters; write a space as %%20", raw, raw[i], i))
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	t, err := parseWritten(s, asIs)
	if err != nil {
		return nil, cli.Exit(curlBadURL, fmt.Sprintf("(3) %q is not a URL: %v; want e.g. http://127.0.0.1:8080/path", raw, trimURLError(err)))
	}
	u := t.url
	if u.Path == "" && u.Opaque == "" {
		u.Path = "/" // what is sent, and what curl shows (%{url_effective})
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, cli.Exit(curlUnsupported, fmt.Sprintf("(1) %q: protocol %q is not supported: want http or https", raw, u.Scheme))
	}
	if u.Hostname() == "" {
		return nil, cli.Exit(curlBadURL, fmt.Sprintf("(3) %q has no host: want e.g. http://127.0.0.1:8080/path", raw))
	}
	if p := u.Port(); p != "" {
		n := 0
		for _, c := range p {
			n = n*10 + int(c-'0')
			if n > 65535 {
				break
			}
		}
		if n < 1 || n > 65535 {
			return nil, cli.Exit(curlBadURL, fmt.Sprintf("(3) %q: port %s is out of range: want 1 to 65535", raw, p))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, cli.Exit(curlBadURL, fmt.Sprintf("(3) %q: the port after %q is empty: want 1 to 65535, or no colon", raw, u.Hostname()))
	}
	return t, nil
}

func trimURLError(err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
