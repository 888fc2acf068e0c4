package httpretry_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// nginxConf rate-limits two locations to 50 requests/s each (burst 5, no
// delay), answers 429 with "Retry-After: 1" beyond that, and logs the
// status and path of every request.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log warn;
events { worker_connections 512; }
http {
	log_format st '$status $request_uri';
	access_log {{dir}}/access.log st;
	client_body_temp_path {{dir}}/tmp/body;
	proxy_temp_path {{dir}}/tmp/proxy;
	fastcgi_temp_path {{dir}}/tmp/fastcgi;
	uwsgi_temp_path {{dir}}/tmp/uwsgi;
	scgi_temp_path {{dir}}/tmp/scgi;
	keepalive_requests 100000;
	limit_req_zone $server_port zone=waits:1m rate=50r/s;
	limit_req_zone $server_port zone=hammers:1m rate=50r/s;
	limit_req_status 429;
	map $status $retry_after { 429 1; default ""; }
	server {
		listen 127.0.0.1:{{port}};
		root {{dir}}/www;
		location /waits { limit_req zone=waits burst=5 nodelay; add_header Retry-After $retry_after always; try_files /ok =404; }
		location /hammers { limit_req zone=hammers burst=5 nodelay; add_header Retry-After $retry_after always; try_files /ok =404; }
	}
}
`

// startNginx runs nginx from Debian's package on a free loopback port in a
// temporary directory and returns its base URL and the path of its access
// log. It skips the test when nginx is not installed.
func startNginx(t *testing.T) (string, string) {
	t.Helper()
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("nginx"); err != nil {
			t.Skip("nginx is not installed (apt-get install nginx-light; .ci/run does): skipping the test against a real nginx")
		}
	}
	dir := t.TempDir()
	for _, d := range []string{"www", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "ok"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	conf := strings.NewReplacer("{{dir}}", dir, "{{port}}", port).Replace(nginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addr := "127.0.0.1:" + port
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %v\n%s%s", err, stderr.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not listen on %s within 5 s: %s", addr, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "http://" + addr, filepath.Join(dir, "access.log")
}

// loggedStatuses reads nginx's access log until done says it holds every
// answer the clients got (nginx writes a request's line after it has sent
// the answer, so the last lines may come a moment after the client has
// them), or 10 s have passed; it returns the last count.
func loggedStatuses(t *testing.T, path string, done func(map[string]map[string]int) bool) map[string]map[string]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := countStatuses(t, path)
		if done(c) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(10 * time.Millisecond) // a real nginx writing its log: polled
	}
}

// countStatuses reads nginx's access log: status counts for each path.
func countStatuses(t *testing.T, path string) map[string]map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		status, uri, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if out[uri] == nil {
			out[uri] = map[string]int{}
		}
		out[uri][status]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fire sends 200 GETs to url from 20 goroutines (10 each) with get, and
// returns how many ended 200 and how long it took.
func fire(t *testing.T, get func(context.Context) (int, error)) (int, time.Duration) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ok   int
		errs []error
	)
	start := time.Now()
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				code, err := get(context.Background())
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if code == 200 {
					ok++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d errors, the first: %v", len(errs), errs[0])
	}
	return ok, time.Since(start)
}

// TestNginxRateLimit runs the Transport against a real nginx that
// rate-limits with limit_req and answers 429 with Retry-After: 1. 200 GETs
// from 20 goroutines all succeed; nginx's own log counts the 429s, compared
// with a client that retries at once without waiting.
func TestNginxRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("talks to a real nginx for several seconds")
	}
	base, logPath := startNginx(t)

	// The two clients run at the same time, each against its own limit, to
	// keep the test short.
	var (
		wg                     sync.WaitGroup
		waitsOK, hammersOK     int
		waitsTook, hammersTook time.Duration
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		tr := &httpretry.Transport{
			Base:   &http.Transport{MaxIdleConnsPerHost: 20},
			Policy: retry.Policy{MaxAttempts: retry.Unlimited, MaxElapsed: 20 * time.Second},
			// Every request must get through: no retry budget (by
			// default one would hand a few 429s back rather than let
			// retries exceed 20 % of the traffic).
			Guards: httpretry.Guards{Budget: httpretry.NoBudget},
		}
		defer tr.CloseIdleConnections()
		client := tr.Client()
		waitsOK, waitsTook = fire(t, func(ctx context.Context) (int, error) {
			resp, err := client.Get(base + "/waits")
			if err != nil {
				return 0, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, nil
		})
	}()
	go func() {
		defer wg.Done()
		hammerBase := &http.Transport{MaxIdleConnsPerHost: 20}
		defer hammerBase.CloseIdleConnections()
		hammer := &http.Client{Transport: hammerBase}
		hammersOK, hammersTook = fire(t, func(ctx context.Context) (int, error) {
			for range 100000 { // retry at once, without waiting, until it passes
				resp, err := hammer.Get(base + "/hammers")
				if err != nil {
					return 0, err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusTooManyRequests {
					return resp.StatusCode, nil
				}
			}
			return http.StatusTooManyRequests, nil
		})
	}()
	wg.Wait()

	counts := loggedStatuses(t, logPath, func(c map[string]map[string]int) bool {
		return c["/waits"]["200"] >= waitsOK && c["/hammers"]["200"] >= hammersOK
	})
	w, h := counts["/waits"], counts["/hammers"]
	t.Logf("nginx limit_req 50 r/s (burst 5), 200 GETs from 20 goroutines:")
	t.Logf("  httpretry (waits Retry-After: 1 + jitter): %d ok, %d × 429 logged by nginx, %v", waitsOK, w["429"], waitsTook.Round(time.Millisecond))
	t.Logf("  retry at once without waiting:             %d ok, %d × 429 logged by nginx, %v", hammersOK, h["429"], hammersTook.Round(time.Millisecond))
	if w["429"] > 0 {
		t.Logf("  the client that does not wait sent %.0f× as many requests that nginx refused", float64(h["429"])/float64(w["429"]))
	}
	if waitsOK != 200 || w["200"] != 200 {
		t.Errorf("httpretry: %d of 200 GETs succeeded (nginx logged %d × 200), want all", waitsOK, w["200"])
	}
	if hammersOK != 200 {
		t.Errorf("hammering client: %d of 200 GETs succeeded", hammersOK)
	}
	if w["429"] == 0 {
		t.Errorf("nginx logged no 429 for httpretry: the rate limit did not bite, the test shows nothing")
	}
	if h["429"] <= w["429"] {
		t.Errorf("the client that does not wait got %d × 429, httpretry %d: want more for the one that does not wait", h["429"], w["429"])
	}
}
