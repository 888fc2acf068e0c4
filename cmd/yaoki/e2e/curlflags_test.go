package e2e

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	encoded := func(enc, body string) answer {
		return answer{status: 200, headers: map[string]string{"Content-Encoding": enc, "Content-Type": "text/plain"}, body: body}
	}
	for _, tc := range []struct {
		name   string
		answer answer
		args   []string
		code   int
	}{
		{"gzip", encoded("gzip", gz.String()), []string{"--compressed"}, 0},
		{"deflate", encoded("deflate", zl.String()), []string{"--compressed"}, 0},
		{"gzip -i", encoded("gzip", gz.String()), []string{"--compressed", "-i"}, 0},
		{"not compressed", ok(plain), []string{"--compressed"}, 0},
		{"gzip without --compressed", encoded("gzip", gz.String()), nil, 0},
		{"gzip that is not", encoded("gzip", "not gzip at all"), []string{"--compressed"}, 61},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.answer)
			args := append(append([]string{"-s", "-w", "|%{size_download} %{exitcode}"}, tc.args...), s.url)
			y := run(t, nil, append([]string{"http"}, args...)...)
			ys := s.requests()
			s.restart()
			c := runCurl(t, args...)
			if y.code != tc.code || c.code != tc.code {
				t.Errorf("exit: yaoki %d, curl %d; want %d\n%s", y.code, c.code, tc.code, y.stderr)
			}
			if y.stdout != c.stdout {
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
// --create-dirs makes -o's folders; -#, --progress-bar, -N, --no-buffer
// and --fail-early are accepted. As curl, each.
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
