package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// --unix-socket PATH sends the request over the Unix socket at PATH, the
// URL's host still in Host, as curl does: how scripts talk to the Docker
// daemon (curl --unix-socket /var/run/docker.sock http://localhost/info).
// A socket that is not there fails as a refused connection (exit 7).
func TestHTTPUnixSocketLikeCurl(t *testing.T) {
	if _, err := os.Stat(curlPath); err != nil {
		t.Skipf("no curl at %s to compare with", curlPath)
	}
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no Unix socket: %v", err)
	}
	var mu sync.Mutex
	var seen []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s Host:%s", r.Method, r.RequestURI, r.Host))
		mu.Unlock()
		fmt.Fprintf(w, "hello %s\n", r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		s := seen
		seen = nil
		return s
	}
	for _, args := range [][]string{
		{"--unix-socket", sock, "http://localhost/v1/info?x=1"},
		{"--unix-socket", sock, "-d", "a=1", "-w", "|%{http_code}", "http://docker:2375/containers"},
	} {
		// A proxy in the environment is not used for a Unix socket, by
		// either.
		y := run(t, []string{"http_proxy=http://127.0.0.1:1"}, append([]string{"http", "-sS"}, args...)...)
		ys := take()
		c := runProgram(t, curlPath, []string{"http_proxy=http://127.0.0.1:1"}, append([]string{"-sS"}, args...)...)
		cs := take()
		if y.code != 0 || c.code != 0 || y.stdout != c.stdout || fmt.Sprint(ys) != fmt.Sprint(cs) {
			t.Errorf("%q: yaoki exit %d, %q, sent %q; curl exit %d, %q, sent %q\n%s", args, y.code, y.stdout, ys, c.code, c.stdout, cs, y.stderr)
		}
	}
	missing := filepath.Join(t.TempDir(), "none")
	y := run(t, nil, "http", "-sS", "--retry", "0", "--unix-socket", missing, "http://localhost/")
	c := runCurl(t, "-sS", "--unix-socket", missing, "http://localhost/")
	if y.code != 7 || c.code != 7 {
		t.Errorf("missing socket: exit %d, curl %d; want 7\n%s", y.code, c.code, y.stderr)
	}
}
