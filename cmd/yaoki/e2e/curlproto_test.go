package e2e

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
)

// --proto and --proto-redir limit the protocols of the URL and of the
// redirects followed, as curl 7.88 reads them ("=https" only, "-http"
// all but, "+https" or "https" added, "all"), a URL outside them exiting 1
// before anything is sent; --tlsv1.2 and --tlsv1.3 ask for that TLS
// version or later. "curl --proto '=https' --tlsv1.2 -sSf URL" is the line
// install scripts hand out.
func TestHTTPProtocolsLikeCurl(t *testing.T) {
	redirect := answer{status: 302, headers: map[string]string{"Location": "/next"}, body: "moved\n"}
	for _, tc := range []struct {
		name   string
		script []answer
		tls    bool
		args   []string
		code   int
		sent   int // requests each sends
	}{
		{"=https on http", []answer{ok("x\n")}, false, []string{"--proto", "=https"}, 1, 0},
		{"-http on http", []answer{ok("x\n")}, false, []string{"--proto", "-http"}, 1, 0},
		{"=http,https", []answer{ok("x\n")}, false, []string{"--proto", "=http,https"}, 0, 1},
		{"all,-https on http", []answer{ok("x\n")}, false, []string{"--proto", "all,-https"}, 0, 1},
		{"+https", []answer{ok("x\n")}, false, []string{"--proto", "+https"}, 0, 1},
		{"https alone adds", []answer{ok("x\n")}, false, []string{"--proto", "https"}, 0, 1},
		{"=https on https", []answer{ok("x\n")}, true, []string{"--proto", "=https", "--tlsv1.2", "-k"}, 0, 1},
		{"--proto-redir =https", []answer{redirect, ok("there\n")}, false, []string{"-L", "--proto-redir", "=https", "-w", "|%{http_code}"}, 1, 1},
		{"--proto -http with -L", []answer{redirect, ok("there\n")}, true, []string{"-kL", "--proto", "=https"}, 0, 2},
		{"--proto-redir =http", []answer{redirect, ok("there\n")}, false, []string{"-L", "--proto-redir", "=http"}, 0, 2},
		{"--tlsv1.3", []answer{ok("x\n")}, true, []string{"--tlsv1.3", "-k"}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, tc.tls, tc.script...)
			args := append(append([]string{"-sS", "--retry", "0"}, tc.args...), s.url+"p")
			y := run(t, nil, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, args...)
			cs := s.requests()
			if y.code != tc.code || c.code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d\nyaoki: %s\ncurl: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if len(ys) != tc.sent || len(cs) != tc.sent || y.stdout != c.stdout {
				t.Errorf("yaoki sent %d, wrote %q; curl sent %d, wrote %q; want %d sent", len(ys), y.stdout, len(cs), c.stdout, tc.sent)
			}
			if tc.code == 1 && !strings.Contains(y.stderr, "--proto") {
				t.Errorf("stderr %q: want it to name --proto", y.stderr)
			}
		})
	}

	// A server that speaks TLS 1.2 at most: --tlsv1.3 fails its handshake
	// (35), --tlsv1.2 does not.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				if tc, ok := c.(*tls.Conn); !ok || tc.Handshake() != nil {
					return
				}
				// The answer after the request: one sent before it would
				// be an answer on an idle connection to Go's client.
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"))
				}
			}(c)
		}
	}()
	url := "https://" + ln.Addr().String() + "/"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--tlsv1.3"}, 35},
		{[]string{"--tlsv1.2"}, 0},
		{[]string{"--tls-max", "1.2"}, 0},
	} {
		args := append(append([]string{"-sSk", "--retry", "0", "--http1.1"}, tc.args...), url)
		y := run(t, nil, append([]string{"http"}, args...)...)
		c := runCurl(t, args...)
		if y.code != tc.code || c.code != tc.code || y.stdout != c.stdout {
			t.Errorf("%q against TLS 1.2: yaoki exit %d %q, curl %d %q; want %d\nyaoki: %s\ncurl: %s", tc.args, y.code, y.stdout, c.code, c.stdout, tc.code, y.stderr, c.stderr)
		}
	}
}
