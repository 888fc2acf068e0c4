package httpretry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

func TestClassify(t *testing.T) {
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	cases := []struct {
		name string
		err  error
		want retry.Class
	}{
		{"503", &httpretry.StatusError{Code: 503, Hint: -1}, retry.ClassThrottled},
		{"429", &httpretry.StatusError{Code: 429, Hint: -1}, retry.ClassThrottled},
		{"500", &httpretry.StatusError{Code: 500, Hint: -1}, retry.ClassTransient},
		{"refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), retry.ClassTransient},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, retry.ClassTransient},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, retry.ClassTransient},
		{"EOF", io.EOF, retry.ClassTransient},
		{"unexpected EOF", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.ErrUnexpectedEOF), retry.ClassTransient},
		{"deadline", context.DeadlineExceeded, retry.ClassTransient},
		{"attempt timeout", retry.ErrAttemptTimeout, retry.ClassTransient},
		{"DNS temporary", dial(&net.DNSError{Err: "server misbehaving", Name: "api.test", IsTemporary: true}), retry.ClassTransient},
		{"DNS timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "api.test", IsTimeout: true}), retry.ClassTransient},
		{"DNS no such host", dial(&net.DNSError{Err: "no such host", Name: "api.test", IsNotFound: true}), retry.ClassPermanent},
		{"unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, retry.ClassPermanent},
		{"x509 hostname", x509.HostnameError{Host: "api.test"}, retry.ClassPermanent},
		{"x509 expired", x509.CertificateInvalidError{Reason: x509.Expired}, retry.ClassPermanent},
		{"TLS alert", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, retry.ClassPermanent},
		{"not TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, retry.ClassPermanent},
		{"scheme", errors.New(`unsupported protocol scheme "ftp"`), retry.ClassPermanent},
		{"no host", errors.New("http: no Host in request URL"), retry.ClassPermanent},
		{"bad header", errors.New(`net/http: invalid header field name "a b"`), retry.ClassPermanent},
		{"redirects", &url.Error{Op: "Get", URL: "http://a/", Err: errors.New("stopped after 10 redirects")}, retry.ClassPermanent},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), retry.ClassPermanent},
		{"unknown", errors.New("http2: server sent GOAWAY and closed the connection"), retry.ClassTransient},
	}
	for _, c := range cases {
		if got := httpretry.Classify(c.err); got != c.want {
			t.Errorf("%s (%v): got %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestPolicyClassifyComposed(t *testing.T) {
	// The caller's classifier refines what HTTP finds retryable, and
	// cannot make retryable what HTTP refuses.
	var asked []string
	p := fast(retry.Policy{Classify: func(err error) retry.Class {
		asked = append(asked, err.Error())
		var se *httpretry.StatusError
		if errors.As(err, &se) && se.StatusCode() == 502 {
			return retry.ClassPermanent
		}
		return retry.ClassTransient
	}})
	srv := newCountingServer(t, []int{502, 200})
	tr := &httpretry.Transport{Base: srv.base, Policy: p}
	resp, _, err := do(t, tr, "GET", srv.URL, nil)
	if err != nil || resp.StatusCode != 502 || srv.n.Load() != 1 {
		t.Fatalf("got %v, %v after %d attempts; want the 502 after 1 (the caller made it final)", resp, err, srv.n.Load())
	}
	if len(asked) != 1 {
		t.Errorf("classifier asked %d times, want 1", len(asked))
	}
}

type countingServer struct {
	*httptest.Server
	base *http.Transport
	n    atomic.Int32
}

// newCountingServer answers the n-th request with codes[n-1] (200 after).
func newCountingServer(t *testing.T, codes []int) *countingServer {
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.n.Add(1))
		if n <= len(codes) {
			w.WriteHeader(codes[n-1])
		}
	}))
	s.base = &http.Transport{}
	t.Cleanup(func() { s.base.CloseIdleConnections(); s.Close() })
	return s
}

func TestTLSCertificateErrorNotRetried(t *testing.T) {
	var handled, conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handled.Add(1) }))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes
	srv.StartTLS()
	defer srv.Close()
	base := &http.Transport{} // trusts the system roots only, not the test server
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{MaxAttempts: 5})}
	_, _, err := do(t, tr, "GET", srv.URL, nil)
	var cve *tls.CertificateVerificationError
	if !errors.As(err, &cve) {
		t.Fatalf("got %v, want a certificate verification error", err)
	}
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 1 || re.Reason != retry.ReasonPermanent {
		t.Fatalf("got %v, want a permanent error after 1 attempt", err)
	}
	if n := conns.Load(); n != 1 || handled.Load() != 0 {
		t.Errorf("server saw %d connections and %d requests, want 1 and 0", n, handled.Load())
	}
	// The same server through a client that trusts it: answered.
	ok := &httpretry.Transport{Base: srv.Client().Transport}
	resp, _, err := do(t, ok, "GET", srv.URL, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("trusting client: got %v, %v; want 200", resp, err)
	}
}

// rtFunc adapts a function to an http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDNSFailures(t *testing.T) {
	cases := []struct {
		name     string
		err      *net.DNSError
		attempts int
	}{
		{"temporary", &net.DNSError{Err: "server misbehaving", Name: "api.test", IsTemporary: true}, 2},
		{"timeout", &net.DNSError{Err: "i/o timeout", Name: "api.test", IsTimeout: true}, 2},
		{"no such host", &net.DNSError{Err: "no such host", Name: "api.test", IsNotFound: true}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			base := rtFunc(func(r *http.Request) (*http.Response, error) {
				n++
				if n == 1 {
					return nil, &net.OpError{Op: "dial", Net: "tcp", Err: c.err}
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
			})
			tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
			_, _, err := do(t, tr, "GET", "http://api.test/", nil)
			if n != c.attempts || (c.attempts == 2) != (err == nil) {
				t.Fatalf("got %d attempts, %v; want %d", n, err, c.attempts)
			}
		})
	}
}
