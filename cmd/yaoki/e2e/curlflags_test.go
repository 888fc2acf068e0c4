package e2e

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// --compressed as curl's: it asks for a compressed answer and writes the
// body decoded (gzip, deflate), -i with the headers as they came,
// %{size_download} the bytes as they came; a body that does not decode
// exits 61. Without it, the body is written as it came.
func TestHTTPCompressedLikeCurl(t *testing.T) {
	plain := strings.Repeat("hello compressed world\n", 20)
	var gz, zl bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write([]byte(plain))
	gw.Close()
	zw := zlib.NewWriter(&zl)
	zw.Write([]byte(plain))
	zw.Close()
	var br, zs bytes.Buffer
	bw := brotli.NewWriter(&br)
	bw.Write([]byte(plain))
	bw.Close()
	sw, err := zstd.NewWriter(&zs)
	if err != nil {
		t.Fatal(err)
	}
	sw.Write([]byte(plain))
	sw.Close()
	// br over gzip: "Content-Encoding: gzip, br".
	var gzbr bytes.Buffer
	bw = brotli.NewWriter(&gzbr)
	bw.Write(gz.Bytes())
	bw.Close()
	encoded := func(enc, body string) answer {
		return answer{status: 200, headers: map[string]string{"Content-Encoding": enc, "Content-Type": "text/plain"}, body: body}
	}
	for _, tc := range []struct {
		name   string
		answer answer
		args   []string
		code   int
		curl0  bool // curl 7.88 exits 0 where yaoki exits 61: a stream cut short
	}{
		{"gzip", encoded("gzip", gz.String()), []string{"--compressed"}, 0, false},
		{"deflate", encoded("deflate", zl.String()), []string{"--compressed"}, 0, false},
		{"gzip -i", encoded("gzip", gz.String()), []string{"--compressed", "-i"}, 0, false},
		{"not compressed", ok(plain), []string{"--compressed"}, 0, false},
		{"gzip without --compressed", encoded("gzip", gz.String()), nil, 0, false},
		{"gzip that is not", encoded("gzip", "not gzip at all"), []string{"--compressed"}, 61, false},
		{"br", encoded("br", br.String()), []string{"--compressed"}, 0, false},
		{"zstd", encoded("zstd", zs.String()), []string{"--compressed"}, 0, false},
		{"zstd -i", encoded("zstd", zs.String()), []string{"--compressed", "-i"}, 0, false},
		{"br without --compressed", encoded("br", br.String()), nil, 0, false},
		{"br that is not", encoded("br", "not brotli at all"), []string{"--compressed"}, 61, false},
		{"zstd that is not", encoded("zstd", "not zstd at all"), []string{"--compressed"}, 61, false},
		{"zstd cut short", encoded("zstd", zs.String()[:zs.Len()/2]), []string{"--compressed"}, 61, true},
		{"br cut short", encoded("br", br.String()[:br.Len()/2]), []string{"--compressed"}, 61, true},
		{"gzip cut short", encoded("gzip", gz.String()[:gz.Len()/2]), []string{"--compressed"}, 61, true},
		{"gzip, br", encoded("gzip, br", gzbr.String()), []string{"--compressed"}, 0, false},
		{"identity, gzip", encoded("identity, gzip", gz.String()), []string{"--compressed"}, 0, false},
		{"six encodings", encoded("identity, identity, identity, identity, identity, gzip", gz.String()), []string{"--compressed"}, 61, false},
		{"br, unknown", encoded("br, x-unknown", br.String()), []string{"--compressed"}, 61, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.answer)
			args := append(append([]string{"-s", "-w", "|%{size_download} %{exitcode}"}, tc.args...), s.url)
			y := run(t, nil, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, args...)
			if ya, ca := ys[0].header.Get("Accept-Encoding"), s.requests()[0].header.Get("Accept-Encoding"); ya != ca {
				t.Errorf("Accept-Encoding: yaoki %q, curl %q", ya, ca)
			}
			wantCurl, cstdout := tc.code, c.stdout
			if tc.curl0 {
				wantCurl, cstdout = 0, strings.TrimSuffix(c.stdout, " 0")+" 61"
			}
			if y.code != tc.code || c.code != wantCurl {
				t.Errorf("exit: yaoki %d, curl %d; want %d, %d\n%s", y.code, c.code, tc.code, wantCurl, y.stderr)
			}
			if y.stdout != cstdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if ae := ys[0].header.Get("Accept-Encoding"); (ae != "") != (len(tc.args) > 0 && tc.args[0] == "--compressed") {
				t.Errorf("yaoki sent Accept-Encoding %q", ae)
			}
		})
	}
}

// --cacert trusts a server's certificate (exit 77 for a file that holds
// none), and --http1.1 keeps to HTTP/1.1 where the server offers HTTP/2;
// -4 and -6 choose the address family, the last given deciding;
// --create-dirs makes -o's folders; --resolve connects to the addresses
// given (exit 49 for an entry it cannot read); --url gives the URL; -#,
// --progress-bar, -N, --no-buffer and --fail-early are accepted. As curl,
// each.
func TestHTTPConnectionFlagsLikeCurl(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", r.Proto, r.URL.Path)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := startScripted(t, false, ok("plain\n"))
	for _, tc := range []struct {
		name string
		args []string // URL: the TLS server's; PLAIN: the plain one's
		code int
	}{
		{"--cacert", []string{"--cacert", ca, "-w", "|%{http_version}", "URL"}, 0},
		{"--cacert --http1.1", []string{"--cacert", ca, "--http1.1", "-w", "|%{http_version}", "URL"}, 0},
		{"without --cacert", []string{"URL"}, 60},
		{"--cacert of no certificate", []string{"--cacert", "/dev/null", "URL"}, 77},
		{"--cacert missing", []string{"--cacert", filepath.Join(dir, "missing.pem"), "URL"}, 77},
		{"-4", []string{"-4", "PLAIN"}, 0},
		{"-6 to an IPv4 address", []string{"-6", "PLAIN"}, 7},
		{"-4 -6", []string{"-4", "-6", "PLAIN"}, 7},
		{"-6 -4", []string{"-6", "-4", "PLAIN"}, 0},
		{"--create-dirs", []string{"--create-dirs", "-o", "OUT/a/b/file", "-w", "%{filename_effective}", "PLAIN"}, 0},
		{"--create-dirs over a file", []string{"--create-dirs", "-o", "OUT/file/x", "PLAIN"}, 23},
		{"accepted flags", []string{"-#", "--progress-bar", "-N", "--no-buffer", "--fail-early", "PLAIN"}, 0},
		{"--resolve", []string{"--resolve", "example.test:PORT:127.0.0.1", "-w", "|%{remote_ip} %{url_effective}", "http://example.test:PORT/p"}, 0},
		{"--resolve in order", []string{"--resolve", "example.test:PORT:[::1],127.0.0.1", "-w", "|%{remote_ip}", "http://example.test:PORT/p"}, 0},
		{"--resolve with TLS", []string{"--resolve", "example.com:TLSPORT:127.0.0.1", "--cacert", ca, "https://example.com:TLSPORT/p"}, 0},
		{"--resolve of another port", []string{"--resolve", "example.test:1:127.0.0.1", "http://example.test:PORT/p"}, 6},
		{"--resolve unreadable", []string{"--resolve", "example.test", "PLAIN"}, 49},
		{"--url", []string{"--url", "PLAIN"}, 0},
		{"TCP flags", []string{"--tcp-nodelay", "--no-keepalive", "PLAIN"}, 0},
		{"--keepalive-time", []string{"--keepalive-time", "30", "PLAIN"}, 0},
		{"--connect-to", []string{"--connect-to", "example.test:80:127.0.0.1:PORT", "-w", "|%{remote_ip} %{remote_port} %{url_effective}", "http://example.test/p"}, 0},
		{"--connect-to any host and port", []string{"--connect-to", "::127.0.0.1:PORT", "-w", "|%{remote_port}", "http://example.test:99/p"}, 0},
		{"--connect-to keeps the port", []string{"--connect-to", "example.test::127.0.0.1:", "http://example.test:PORT/p"}, 0},
		{"--connect-to the first that matches", []string{"--connect-to", "other.test:80:127.0.0.1:1", "--connect-to", "example.test:80:127.0.0.1:PORT", "--connect-to", "::127.0.0.1:1", "http://example.test/p"}, 0},
		{"--connect-to with TLS", []string{"--connect-to", "example.com:443:127.0.0.1:TLSPORT", "--cacert", ca, "https://example.com/p"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs [2]string
			var got [2]result
			for i, who := range []string{"yaoki", "curl"} {
				out := filepath.Join(t.TempDir(), who)
				os.MkdirAll(out, 0o700)
				os.WriteFile(filepath.Join(out, "file"), nil, 0o600)
				args := []string{"-sS", "--retry", "0"}
				for _, a := range tc.args {
					a = strings.Replace(strings.Replace(a, "URL", srv.URL+"/p", 1), "PLAIN", plain.url+"p", 1)
					a = strings.ReplaceAll(strings.ReplaceAll(a, "TLSPORT", srv.URL[strings.LastIndex(srv.URL, ":")+1:]), "PORT", plain.url[strings.LastIndex(plain.url, ":")+1:len(plain.url)-1])
					args = append(args, strings.Replace(a, "OUT", out, 1))
				}
				got[i] = runAs(t, who, args...)
				got[i].stdout = strings.ReplaceAll(got[i].stdout, out, "OUT")
				outs[i] = out
			}
			y, c := got[0], got[1]
			if y.code != tc.code || c.code != tc.code {
				t.Errorf("exit: yaoki %d, curl %d; want %d\nyaoki: %s\ncurl: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if y.stdout != c.stdout {
				t.Errorf("stdout:\nyaoki: %q\ncurl:  %q", y.stdout, c.stdout)
			}
			if strings.HasPrefix(tc.name, "--cacert") && tc.code == 0 && !strings.Contains(y.stdout, "HTTP/2.0") != strings.Contains(tc.name, "--http1.1") {
				t.Errorf("stdout %q: want HTTP/2 without --http1.1 only", y.stdout)
			}
			if tc.name == "--create-dirs" {
				for i, out := range outs {
					st, err := os.Stat(filepath.Join(out, "a", "b"))
					if err != nil || st.Mode().Perm() != 0o750 {
						t.Errorf("run %d: the folder made: %v, %v; want mode 0750", i, st, err)
					}
				}
			}
		})
	}
}

// -T FILE PUTs the file as curl does: to the URL, with the file's name
// added when its path ends with '/' or is empty; the same body on every
// attempt; exit 26 for a file that cannot be read, 2 with -d.
func TestHTTPUploadLikeCurl(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "up.txt")
	os.WriteFile(file, []byte("line 1\nline 2\x00\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
		path   string // after the server's URL (which ends with /)
		code   int
	}{
		{"to a name", []answer{ok("put\n")}, []string{"-T", file}, "named?q=1", 0},
		{"to a folder", []answer{ok("put\n")}, []string{"-T", file}, "dir/?q=1", 0},
		{"to the root", []answer{ok("put\n")}, []string{"-T", file}, "", 0},
		{"-X POST", []answer{ok("put\n")}, []string{"-T", file, "-X", "POST"}, "x", 0},
		{"an empty file", []answer{ok("put\n")}, []string{"-T", empty}, "x", 0},
		{"retried", []answer{status(503, "busy\n"), ok("put\n")}, []string{"-T", file, "--retry", "1", "--retry-delay", "1"}, "x", 0},
		{"a missing file", []answer{ok("put\n")}, []string{"-T", filepath.Join(dir, "missing")}, "x", 26},
		{"with -d", []answer{ok("put\n")}, []string{"-T", file, "-d", "a=1"}, "x", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			var sent [2][]seen
			var got [2]result
			for i, who := range []string{"yaoki", "curl"} {
				s.restart()
				got[i] = runAs(t, who, append(append([]string{"-s"}, tc.args...), s.url+tc.path)...)
				sent[i] = s.requests()
			}
			if got[0].code != tc.code || got[1].code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d\n%s", got[0].code, got[1].code, tc.code, got[0].stderr)
			}
			if len(sent[0]) != len(sent[1]) {
				t.Fatalf("yaoki sent %d requests, curl %d", len(sent[0]), len(sent[1]))
			}
			for i := range sent[0] {
				a, b := sent[0][i], sent[1][i]
				if a.method != b.method || a.uri != b.uri || a.body != b.body || a.header.Get("Content-Length") != b.header.Get("Content-Length") || a.header.Get("Content-Type") != b.header.Get("Content-Type") {
					t.Errorf("request %d: yaoki sent %s %s %q (Content-Length %q, Type %q); curl %s %s %q (%q, %q)", i+1,
						a.method, a.uri, a.body, a.header.Get("Content-Length"), a.header.Get("Content-Type"), b.method, b.uri, b.body, b.header.Get("Content-Length"), b.header.Get("Content-Type"))
				}
			}
		})
	}
}

// Over HTTP/2, %{size_request} counts the request as HTTP/1.1 writes it
// (its pseudo-headers are the request line): the same as with --http1.1.
// The server reads the body before it answers (one that answers first
// may reset the stream before the body is sent, which is then not
// counted), and answers with a body, read before -w counts the request.
func TestHTTPSizeRequestOverHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintln(w, "read")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	h2 := run(t, nil, "http", "-s", "-o", "/dev/null", "--cacert", ca, "-d", "a=1", "-w", "%{http_version} %{size_request}", srv.URL+"/p")
	h1 := run(t, nil, "http", "-s", "-o", "/dev/null", "--cacert", ca, "-d", "a=1", "--http1.1", "-w", "%{http_version} %{size_request}", srv.URL+"/p")
	v2, n2, _ := strings.Cut(h2.stdout, " ")
	v1, n1, _ := strings.Cut(h1.stdout, " ")
	if v2 != "2" || v1 != "1.1" || n1 != n2 || n1 == "0" {
		t.Errorf("HTTP/2: %q, HTTP/1.1: %q; want versions 2 and 1.1 with the same size", h2.stdout, h1.stdout)
	}
}

// -x sends through a proxy as curl does: the request in absolute form to
// the proxy; --noproxy's hosts directly; exit 7 for a proxy that refuses
// the connection, 5 for one whose name does not resolve.
func TestHTTPProxyLikeCurl(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string // PROXY: the scripted server's host:port
		url  string   // TARGET: the scripted server's URL
		code int
	}{
		{"-x host:port", []string{"-x", "PROXY"}, "http://example.test/p?q=1", 0},
		{"-x http://", []string{"-x", "http://PROXY", "-H", "X-Tag: a"}, "http://example.test:8080/p", 0},
		{"--noproxy", []string{"-x", "PROXY", "--noproxy", "other.test,127.0.0.1"}, "TARGETdirect", 0},
		{"--noproxy *", []string{"-x", "PROXY", "--noproxy", "*"}, "TARGETdirect", 0},
		{"--noproxy a domain", []string{"-x", "PROXY", "--noproxy", "test"}, "http://example.test/p", 6},
		{"proxy refused", []string{"-x", "127.0.0.1:1"}, "http://example.test/p", 7},
		{"proxy not resolved", []string{"-x", "http://yaoki-e2e.invalid:3128"}, "http://example.test/p", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, ok("via\n"))
			hostPort := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/")
			var sent [2][]seen
			var got [2]result
			for i, who := range []string{"yaoki", "curl"} {
				s.restart()
				args := []string{"-sS", "--retry", "0"}
				for _, a := range tc.args {
					args = append(args, strings.Replace(a, "PROXY", hostPort, 1))
				}
				got[i] = runAs(t, who, append(args, strings.Replace(tc.url, "TARGET", s.url, 1))...)
				sent[i] = s.requests()
			}
			if got[0].code != tc.code || got[1].code != tc.code || got[0].stdout != got[1].stdout {
				t.Fatalf("yaoki exit %d, %q; curl exit %d, %q; want %d\nyaoki: %s\ncurl: %s", got[0].code, got[0].stdout, got[1].code, got[1].stdout, tc.code, got[0].stderr, got[1].stderr)
			}
			if len(sent[0]) != len(sent[1]) {
				t.Fatalf("yaoki sent %d requests, curl %d", len(sent[0]), len(sent[1]))
			}
			for i := range sent[0] {
				a, b := sent[0][i], sent[1][i]
				if a.uri != b.uri || a.host != b.host || a.header.Get("X-Tag") != b.header.Get("X-Tag") {
					t.Errorf("the proxy got from yaoki %s (Host %s), from curl %s (Host %s)", a.uri, a.host, b.uri, b.host)
				}
			}
		})
	}
}
