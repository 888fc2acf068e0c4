package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/metrictest"
)

// startProxy starts `yaoki proxy --listen 127.0.0.1:0 args...` and returns
// once it printed its URL (without the final slash).
func startProxy(t *testing.T, args ...string) *server {
	t.Helper()
	return startProxyEnv(t, nil, args...)
}

// startProxyEnv is startProxy with env added to the environment.
func startProxyEnv(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s := serveEnv(t, env, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)
	s.url = strings.TrimSuffix(s.url, "/")
	return s
}

// writeConfig writes a proxy config into the test's directory.
func writeConfig(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func do(t *testing.T, c *http.Client, method, url string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, string(b)
}

func attempts(s []upSeen) string {
	var a []string
	for _, x := range s {
		a = append(a, x.Attempt)
	}
	return strings.Join(a, ",")
}

// Go's http.Client through the proxy: 503, 503, 200 becomes one 200, the
// upstream sees three numbered attempts; 429 with Retry-After: 1 is
// waited out; a POST without a key is sent once and its 503 relayed.
func TestProxyGoClient(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()

	resp, body := do(t, c, "GET", p.url+"/script/a?s=503,503,200", nil)
	got := up.requests(t, "/script/a")
	if resp.StatusCode != 200 || body != "answer 3: 200\n" || len(got) != 3 || attempts(got) != "1,2,3" {
		t.Fatalf("503,503,200: client got %d %q, upstream saw %d requests (attempts %s); want 200 from the third attempt, attempts 1,2,3",
			resp.StatusCode, body, len(got), attempts(got))
	}
	if v := resp.Header.Values("Via"); len(v) != 1 || v[0] != "1.1 yaoki" {
		t.Errorf("Via %q, want [1.1 yaoki]", v)
	}
	if v := got[0].Header["Via"]; v != "1.1 yaoki" {
		t.Errorf("the upstream saw Via %q, want 1.1 yaoki", v)
	}

	resp, _ = do(t, c, "GET", p.url+"/script/b?s=429:ra=1,200", nil)
	got = up.requests(t, "/script/b")
	if resp.StatusCode != 200 || len(got) != 2 {
		t.Fatalf("429 Retry-After 1, 200: client got %d, upstream saw %d; want 200 after 2", resp.StatusCode, len(got))
	}
	if gap := got[1].Ms - got[0].Ms; gap < 1000 || gap > 3000 {
		t.Errorf("the retry came %d ms after the 429; want at least the 1 s asked (plus at most 20 %% jitter)", gap)
	}

	resp, body = do(t, c, "POST", p.url+"/script/c?s=503,200", strings.NewReader(`{"sku":42}`), "Content-Type", "application/json")
	got = up.requests(t, "/script/c")
	if resp.StatusCode != 503 || len(got) != 1 || got[0].Body != 10 || resp.Header.Get("Do-Not-Retry") != "" {
		t.Fatalf("POST without key: client got %d (Do-Not-Retry %q), upstream saw %d; want the 503 relayed from one attempt, without Do-Not-Retry (a client with a key may retry)",
			resp.StatusCode, resp.Header.Get("Do-Not-Retry"), len(got))
	}

	// The proxy's retries ended on a retryable status: the layers above
	// are told not to retry again. (A proxy of its own: the failures
	// above have spent the default budget's retries for this upstream.)
	p = startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)
	resp, _ = do(t, c, "GET", p.url+"/script/d?s=503", nil)
	if resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "true" || len(up.requests(t, "/script/d")) != 3 {
		t.Fatalf("503 for ever: client got %d, Do-Not-Retry %q, upstream saw %d; want 503 with Do-Not-Retry: true after 3 attempts",
			resp.StatusCode, resp.Header.Get("Do-Not-Retry"), len(up.requests(t, "/script/d")))
	}
	// A client that retries itself (Attempt-Count) gets one attempt per request.
	resp, _ = do(t, c, "GET", p.url+"/script/e?s=503,200", nil, "Attempt-Count", "1")
	if resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "" || len(up.requests(t, "/script/e")) != 1 {
		t.Fatalf("from a retrying client: got %d (Do-Not-Retry %q), upstream saw %d; want 503 from one attempt, without Do-Not-Retry",
			resp.StatusCode, resp.Header.Get("Do-Not-Retry"), len(up.requests(t, "/script/e")))
	}
}

// idempotency_key: auto on a route: a POST gets one key, the same on every
// attempt; a body over max_buffered_body is streamed once, not retried.
func TestProxyKeysAndBodies(t *testing.T) {
	up := startUpstream(t)
	cfg := writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - path: /script/
    upstream: %s
    idempotency_key: auto
    max_buffered_body: 64KiB
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
          MaxAttempts: 2
      Budget: {MinPerSecond: 100} # every retry of the test granted
`, up.url))
	p := startProxy(t, "--config", cfg)
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()

	small := bytes.Repeat([]byte("x"), 10_000)
	resp, _ := do(t, c, "POST", p.url+"/script/small?s=503,500,201", bytes.NewReader(small))
	got := up.requests(t, "/script/small")
	if resp.StatusCode != 201 || len(got) != 3 {
		t.Fatalf("keyed POST: got %d, upstream saw %d; want 201 after 3", resp.StatusCode, len(got))
	}
	for _, s := range got {
		if len(s.Key) != 36 || s.Key != got[0].Key || s.Body != len(small) {
			t.Errorf("attempt %s: key %q, body %d bytes; want one UUID on every attempt and the whole body (%d)", s.Attempt, s.Key, s.Body, len(small))
		}
	}

	big := make([]byte, 1<<20)
	rand.Read(big)
	// No GetBody and no length: the body cannot be sent again.
	resp, _ = do(t, c, "POST", p.url+"/script/big?s=503,201", io.MultiReader(bytes.NewReader(big)))
	got = up.requests(t, "/script/big")
	if resp.StatusCode != 503 || len(got) != 1 || got[0].Body != len(big) || resp.Header.Get("Do-Not-Retry") != "" {
		t.Fatalf("1 MiB POST over a 64 KiB buffer: got %d (Do-Not-Retry %q), upstream saw %d requests; want the 503 of one attempt with the whole body, without Do-Not-Retry (the proxy could not retry it, the client can)",
			resp.StatusCode, resp.Header.Get("Do-Not-Retry"), len(got))
	}
	// The small one's last answer was retried by the proxy: its 503 would
	// carry Do-Not-Retry.
	resp, _ = do(t, c, "POST", p.url+"/script/small503?s=503", bytes.NewReader(small))
	if resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "true" || len(up.requests(t, "/script/small503")) != 3 {
		t.Fatalf("keyed POST, 503 for ever: %d, Do-Not-Retry %q; want 503 with Do-Not-Retry: true after 3 attempts", resp.StatusCode, resp.Header.Get("Do-Not-Retry"))
	}
}

// curl through the proxy: retries, hop-by-hop headers dropped both ways,
// and server-sent events arriving as they are sent.
func TestProxyCurl(t *testing.T) {
	curl := needProgram(t, "curl")
	up := startUpstream(t)
	p := startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)

	out, err := exec.Command(curl, "-sS", "-i", p.url+"/script/a?s=502,200").Output()
	if err != nil || !strings.HasPrefix(string(out), "HTTP/1.1 200") || len(up.requests(t, "/script/a")) != 2 {
		t.Fatalf("curl 502,200: %v\n%s\nupstream saw %d", err, out, len(up.requests(t, "/script/a")))
	}

	out, err = exec.Command(curl, "-sS", "-i", "-H", "Connection: X-Private", "-H", "X-Private: secret",
		"-H", "Keep-Alive: timeout=5", "-H", "Proxy-Authorization: Basic eDp5", "-H", "X-Public: kept", p.url+"/echo").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := up.requests(t, "/echo")
	if len(got) != 1 {
		t.Fatalf("upstream saw %d echo requests", len(got))
	}
	for _, h := range []string{"X-Private", "Keep-Alive", "Proxy-Authorization", "Connection"} {
		if v, ok := got[0].Header[h]; ok {
			t.Errorf("the upstream got the hop-by-hop header %s: %q", h, v)
		}
	}
	if got[0].Header["X-Public"] != "kept" || got[0].Header["X-Forwarded-For"] != "127.0.0.1" {
		t.Errorf("end-to-end headers: X-Public %q, X-Forwarded-For %q; want kept, 127.0.0.1", got[0].Header["X-Public"], got[0].Header["X-Forwarded-For"])
	}
	if s := string(out); strings.Contains(s, "X-Upstream-Private") || !strings.Contains(s, "X-Upstream-Public: end-to-end") {
		t.Errorf("response headers: want X-Upstream-Private (named by the upstream's Connection) dropped and X-Upstream-Public kept:\n%s", s)
	}

	// Server-sent events: 4 events 300 ms apart; curl prints each as it
	// comes (-N), so the first is out long before the stream ends.
	cmd := exec.Command(curl, "-sS", "-N", p.url+"/stream?n=4&every=300ms")
	stdout, _ := cmd.StdoutPipe()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	first, _ := rd.ReadString('\n')
	firstAt := time.Since(start)
	rest, _ := io.ReadAll(rd)
	cmd.Wait()
	total := time.Since(start)
	if first != "data: event 1\n" || strings.Count(string(rest), "data: event") != 3 {
		t.Fatalf("stream: first line %q, then %q", first, rest)
	}
	if total < 900*time.Millisecond || firstAt > total-600*time.Millisecond {
		t.Errorf("first event after %v of %v: want it flushed at once, not when the stream ends", firstAt, total)
	}
}

// Python's urllib (standard library) through the proxy: a POST with its
// own Idempotency-Key is retried with that key and body.
func TestProxyPythonUrllib(t *testing.T) {
	py := needProgram(t, "python3")
	up := startUpstream(t)
	p := startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)
	script := `
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], data=b'{"amount": 100}', method="POST",
    headers={"Idempotency-Key": "order-7", "Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=20) as r:
    print(r.status, r.read().decode().strip())
try:
    urllib.request.urlopen(sys.argv[2], timeout=20)
except urllib.error.HTTPError as e:
    print(e.code, e.headers.get("Content-Type"), e.read().decode())
`
	dead := freePort(t)
	p2 := startProxy(t, append([]string{"--upstream", "http://" + dead}, fastRetries...)...)
	out, err := exec.Command(py, "-c", script, p.url+"/script/pay?s=500,503,200", p2.url+"/anything").CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)
	got := up.requests(t, "/script/pay")
	if lines[0] != "200 answer 3: 200" || len(got) != 3 {
		t.Fatalf("python POST with key: %q, upstream saw %d; want 200 after 3 attempts", lines[0], len(got))
	}
	for _, s := range got {
		if s.Key != "order-7" || s.Body != 15 {
			t.Errorf("attempt %s: key %q, body %d; want order-7 and the 15-byte body", s.Attempt, s.Key, s.Body)
		}
	}
	// No upstream at all: the proxy's own answer.
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "502 application/problem+json ") {
		t.Fatalf("dead upstream: %q; want 502 application/problem+json", lines)
	}
	var prob map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "502 application/problem+json ")), &prob); err != nil ||
		prob["reason"] != "attempts_exhausted" || prob["status"] != float64(502) || prob["attempts"] != float64(3) {
		t.Fatalf("problem %v (%v); want reason attempts_exhausted, status 502, attempts 3", prob, err)
	}
}

// Fault: the upstream is killed (SIGKILL) in the middle of a stream. The
// client's read ends with an error at once (the proxy aborts the response
// rather than end it cleanly), and the next request gets the proxy's own
// 502 answer, since nothing listens any more.
func TestProxyUpstreamKilledMidStream(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(p.url + "/stream?n=1000&every=50ms")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i := 0; i < 4; i++ { // two events: data line and blank line each
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatalf("reading the stream before the kill: %v", err)
		}
	}
	up.kill()
	killed := time.Now()
	_, err = io.ReadAll(rd)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the kill the read ended with %v; want io.ErrUnexpectedEOF (a cut stream, not a complete one)", err)
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("the cut reached the client after %v", d)
	}
	resp2, body := do(t, c, "GET", p.url+"/script/x?s=200", nil)
	if resp2.StatusCode != 502 || resp2.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"reason":"attempts_exhausted"`) {
		t.Fatalf("after the kill: %d %s %s; want 502 problem+json, attempts_exhausted", resp2.StatusCode, resp2.Header.Get("Content-Type"), body)
	}
}

// The client's cancellation reaches the upstream: a client that gives up
// after 300 ms ends the upstream's request too.
func TestProxyClientCancels(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, "--upstream", up.url)
	c := &http.Client{Timeout: 300 * time.Millisecond}
	defer c.CloseIdleConnections()
	if _, err := c.Get(p.url + "/slow?d=30s"); err == nil {
		t.Fatal("the request did not time out")
	}
	got := up.waitFor(t, 1, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == "/slow" })
	if len(got) != 1 || len(up.requests(t, "/slow")) != 1 {
		t.Fatalf("upstream: %d cancellations, %d requests; want the one request cancelled and not retried", len(got), len(up.requests(t, "/slow")))
	}
	if got[0].Ms-up.requests(t, "/slow")[0].Ms > 3000 {
		t.Errorf("the upstream saw the cancellation %d ms after the request", got[0].Ms-up.requests(t, "/slow")[0].Ms)
	}
}

// An Upgrade is passed through once: the client talks to the upstream over
// the upgraded connection; a refused upgrade (503) is not retried.
func TestProxyUpgrade(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, append([]string{"--upstream", up.url}, fastRetries...)...)
	upgrade := func(proto string) (string, *bufio.Reader, net.Conn) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", proto)
		rd := bufio.NewReader(conn)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status, rd, conn
	}
	status, rd, conn := upgrade("yaoki-echo")
	defer conn.Close()
	if status != "101 Switching Protocols" {
		t.Fatalf("upgrade: %s", status)
	}
	fmt.Fprint(conn, "hello\n")
	if line, err := rd.ReadString('\n'); err != nil || line != "echo: hello\n" {
		t.Fatalf("over the upgraded connection: %q, %v", line, err)
	}
	status, _, conn2 := upgrade("other")
	conn2.Close()
	if status != "503 Service Unavailable" || len(up.requests(t, "/ws")) != 2 {
		t.Fatalf("refused upgrade: %s, upstream saw %d /ws requests; want 503 after one attempt each (2)", status, len(up.requests(t, "/ws")))
	}
}

// SIGTERM with calls in flight: the proxy stops accepting, and the calls,
// including retries that start after the signal, all finish.
func TestProxySIGTERMFinishesCalls(t *testing.T) {
	up := startUpstream(t)
	// A budget that grants every retry: under the default one (a bucket
	// of 10 that starts at 8, retries stop at 5), three first attempts
	// that fail before the three others succeed leave the third no retry,
	// and this test is about the shutdown, not the budget.
	cfg := writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - path: /
    upstream: %s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
          MaxAttempts: 2
      Budget: {MinPerSecond: 100}
`, up.url))
	p := startProxy(t, "--config", cfg, "--grace", "20s")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	type result struct {
		status int
		body   string
		err    error
	}
	const n = 6
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		url := fmt.Sprintf("%s/slow?d=800ms", p.url)
		if i%2 == 1 { // a first attempt in flight, its retry after the signal
			url = fmt.Sprintf("%s/script/r%d?s=503:slow=800ms,200", p.url, i)
		}
		go func() {
			resp, err := c.Get(url)
			if err != nil {
				results <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, string(b), err}
		}()
	}
	up.waitFor(t, n, func(s upSeen) bool { return s.Event == "" })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil || r.status != 200 {
			t.Errorf("call in flight at SIGTERM: %d %q %v; want 200", r.status, r.body, r.err)
		}
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, strings.Join(p.log, "\n"))
	}
	if got := up.waitFor(t, n+3, func(s upSeen) bool { return s.Event == "" }); len(got) != n+3 {
		t.Errorf("upstream saw %d requests, want %d (3 retries)", len(got), n+3)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(p.url, "http://"), time.Second); err == nil {
		t.Error("the proxy still accepts connections after SIGTERM")
	}
}

// A signal sent as soon as yaoki proxy (or yaoki flaky) has printed its
// address, by an orchestrator that starts it and stops or reloads it at
// once, reaches the reload or the graceful shutdown, not Go's default
// action for an unhandled SIGHUP or SIGTERM, which ends the process.
func TestSignalAtStart(t *testing.T) {
	up := startUpstream(t)
	cfg := writeConfig(t, "proxy.yaml", fmt.Sprintf("routes:\n  - path: /script/\n    upstream: %s\n", up.url))
	p := startProxy(t, "--config", cfg)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "reloaded "+cfg)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d after SIGHUP then SIGTERM, want 0 (a reload, then a graceful shutdown)\n%s", code, strings.Join(p.log, "\n"))
	}
	q := startProxy(t, "--upstream", up.url)
	if err := q.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := q.wait(t); code != 0 {
		t.Errorf("exit %d after SIGTERM at start, want 0 (a graceful shutdown)\n%s", code, strings.Join(q.log, "\n"))
	}
	f := startFlaky(t)
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := f.wait(t); code != 0 {
		t.Errorf("yaoki flaky: exit %d after SIGTERM at start, want 0\n%s", code, strings.Join(f.log, "\n"))
	}
}

// SIGHUP reloads the config file on the same connections; a broken file is
// refused, with its position, and the routes loaded before stay.
func TestProxySIGHUPReload(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "proxy.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("routes:\n  - path: /script/\n    upstream: %s\n", up.url))
	p := startProxy(t, "--config", cfg, "--admin-addr", "127.0.0.1:0")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	var reused []bool
	get := func(path string) int {
		req, _ := http.NewRequest("GET", p.url+path, nil)
		req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	hup := func(want string) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		p.waitLine(t, want)
	}
	if s := get("/script/a?s=200"); s != 200 {
		t.Fatalf("before reload: %d", s)
	}
	write(fmt.Sprintf("routes:\n  - path: /script/\n    upstream: %s\n    policy:\n      Retry:\n        - ErrorEquals: [HTTP.503]\n          BackoffRate: 0.5\n", up.url))
	hup(cfg + ":7:24: routes[0].policy.Retry[0].BackoffRate")
	if s := get("/script/b?s=200"); s != 200 {
		t.Fatalf("after a broken reload: %d, want the old route's 200", s)
	}
	write(fmt.Sprintf("routes:\n  - path: /echo\n    upstream: %s\n", up.url))
	hup("reloaded " + cfg + ": 1 route")
	if s := get("/script/c?s=200"); s != 404 {
		t.Errorf("after reload, a path of no route: %d, want 404", s)
	}
	if s := get("/echo"); s != 200 {
		t.Errorf("after reload, the new route: %d, want 200", s)
	}
	if len(reused) != 4 || reused[1] != true || reused[2] != true || reused[3] != true {
		t.Errorf("connection reused per request: %v; want the first connection kept across both reloads", reused)
	}
	resp, err := http.Get(strings.TrimSuffix(p.metricsURL(t), "/metrics") + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
}

// The proxy's own answers when its guards refuse: breaker open (with
// Retry-After) and budget exhausted, as application/problem+json; and the
// retries on /metrics of the admin listener, with /healthz.
func TestProxyGuardsAndMetrics(t *testing.T) {
	up := startUpstream(t)
	dead := "http://" + freePort(t)
	cfg := writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - path: /breaker/
    upstream: %[1]s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
          MaxAttempts: 2
      Breaker: {ConsecutiveFailures: 3, OpenSeconds: 30}
  - path: /budget/
    upstream: %[1]s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
      Budget: {Ratio: 0.1, MinPerSecond: -1}
  - path: /
    upstream: %[2]s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
`, dead, up.url))
	p := startProxy(t, "--config", cfg, "--admin-addr", "127.0.0.1:0", "--log-format", "text")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	problem := func(resp *http.Response, body string) map[string]any {
		t.Helper()
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%d with Content-Type %q: %s; want application/problem+json", resp.StatusCode, ct, body)
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("problem %q: %v", body, err)
		}
		return m
	}

	resp, body := do(t, c, "GET", p.url+"/breaker/x", nil)
	if m := problem(resp, body); resp.StatusCode != 502 || m["reason"] != "attempts_exhausted" || m["attempts"] != float64(3) {
		t.Fatalf("dead upstream: %d %v; want 502 attempts_exhausted after 3 attempts", resp.StatusCode, m)
	}
	resp, body = do(t, c, "GET", p.url+"/breaker/x", nil)
	m := problem(resp, body)
	if resp.StatusCode != 503 || m["reason"] != "breaker_open" || resp.Header.Get("Do-Not-Retry") != "true" {
		t.Fatalf("after 3 failures: %d %v (Do-Not-Retry %q); want 503 breaker_open with Do-Not-Retry", resp.StatusCode, m, resp.Header.Get("Do-Not-Retry"))
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" || len(ra) > 2 {
		t.Errorf("breaker open: Retry-After %q, want the seconds until its probe (≤ 30 plus jitter)", ra)
	}
	p.waitLine(t, "breaker state changed")

	resp, body = do(t, c, "GET", p.url+"/budget/x", nil)
	if m := problem(resp, body); resp.StatusCode != 503 || m["reason"] != "budget_exhausted" || m["attempts"] != float64(1) || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("no budget: %d %v Retry-After %q; want 503 budget_exhausted after 1 attempt, without Retry-After", resp.StatusCode, m, resp.Header.Get("Retry-After"))
	}

	resp, _ = do(t, c, "GET", p.url+"/script/m?s=503,500,200", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("503,500,200: %d", resp.StatusCode)
	}
	metrics := p.metricsURL(t)
	got := scrape(t, metrics)
	var retries float64
	for k, v := range only(got, "yaoki_retries_total") {
		if strings.Contains(k, "server_address=127.0.0.1") && (strings.Contains(k, "http_response_status_code=503") || strings.Contains(k, "http_response_status_code=500")) {
			retries += v
		}
	}
	if retries != 2 {
		t.Errorf("yaoki_retries_total for the 503 and the 500: %v, want 2%s", retries, metrictest.Lines(only(got, "yaoki_retries_total")))
	}
	if len(only(got, "yaoki_breaker_state")) == 0 || len(only(got, "yaoki_budget_level")) == 0 {
		t.Errorf("no breaker state or budget level on /metrics:%s", metrictest.Lines(got))
	}
	// The route's breaker is reported under its upstream's host: open
	// (2), and its trip counted.
	deadHost := strings.TrimPrefix(dead, "http://")
	var open, trips float64 = -1, 0
	for k, v := range only(got, "yaoki_breaker_state") {
		if strings.Contains(k, "yaoki_name="+deadHost+"}") || strings.Contains(k, "yaoki_name="+deadHost+",") {
			open = v
		}
	}
	for k, v := range only(got, "yaoki_breaker_transitions_total") {
		if strings.Contains(k, "yaoki_name="+deadHost+",") && strings.Contains(k, "yaoki_state_to=open") {
			trips += v
		}
	}
	if open != 2 || trips != 1 {
		t.Errorf("breaker of %s: state %v, %v trips; want 2 (open) and 1%s%s", deadHost, open, trips,
			metrictest.Lines(only(got, "yaoki_breaker_state")), metrictest.Lines(only(got, "yaoki_breaker_transitions_total")))
	}
	resp, err := http.Get(strings.TrimSuffix(metrics, "/metrics") + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}

// startRedis runs redis-server on a free loopback port until the test
// ends, or skips the test when it is not installed.
func startRedis(t *testing.T) string {
	t.Helper()
	url, _ := startRedisServer(t)
	return url
}

// startRedisServer is startRedis, which also returns the redis-server
// process.
func startRedisServer(t *testing.T) (string, *server) {
	t.Helper()
	bin := needProgram(t, "redis-server")
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	s := startProgram(t, bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	t.Cleanup(s.kill)
	var err error
	if !poll(10*time.Second, 10*time.Millisecond, func() bool {
		var conn net.Conn
		if conn, err = net.Dial("tcp", addr); err == nil {
			conn.Close()
		}
		return err == nil
	}) {
		t.Fatalf("redis-server did not listen on %s: %v", addr, err)
	}
	return "redis://" + addr + "/0", s
}

// --redis: two proxies in front of the same dead upstream share its
// breaker. A trips after its own three failures; B, whose breaker alone
// would not trip for 1000, refuses too within a few syncs, without
// calling the upstream.
func TestProxyFleetBreaker(t *testing.T) {
	rurl := startRedis(t)
	dead := "http://" + freePort(t)
	route := func(consecutive int) string {
		return writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - upstream: %s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
          MaxAttempts: 2
      Breaker: {ConsecutiveFailures: %d, OpenSeconds: 60}
`, dead, consecutive))
	}
	a := startProxy(t, "--config", route(3), "--redis", rurl)
	b := startProxy(t, "--config", route(1000), "--redis", rurl)
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	do(t, c, "GET", a.url+"/x", nil) // three failures: A's breaker trips
	resp, body := do(t, c, "GET", a.url+"/x", nil)
	if resp.StatusCode != 503 || !strings.Contains(body, `"reason":"breaker_open"`) {
		t.Fatalf("A after tripping: %d %s", resp.StatusCode, body)
	}
	if !poll(10*time.Second, 100*time.Millisecond, func() bool {
		resp, body = do(t, c, "GET", b.url+"/x", nil)
		return resp.StatusCode == 503 && strings.Contains(body, `"reason":"breaker_open"`)
	}) {
		t.Fatalf("B never refused: %d %s", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("B's refusal: Retry-After %q, want the fleet's open period left", ra)
	}
}

// An https upstream, the case the proxy is for (a partner's API): the
// proxy verifies the upstream's certificate against the roots it is given
// (SSL_CERT_FILE, which Go reads on Linux), retries over TLS as over TCP,
// and answers an upstream it cannot verify with a 502 that says why,
// without sending the request there or retrying.
func TestProxyHTTPSUpstream(t *testing.T) {
	up := startScripted(t, true, answer{status: 503}, answer{status: 200, body: "secure\n"})
	roots := func(der []byte) string {
		path := filepath.Join(t.TempDir(), "roots.pem")
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		// SSL_CERT_DIR too: no root from the machine's directory.
		return "SSL_CERT_FILE=" + path
	}
	noDir := "SSL_CERT_DIR=" + t.TempDir()
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	upstream := strings.TrimSuffix(up.url, "/")

	p := startProxyEnv(t, []string{roots(up.cert), noDir}, append([]string{"--upstream", upstream}, fastRetries...)...)
	resp, body := do(t, c, "GET", p.url+"/pay?id=7", nil)
	got := up.requests()
	if resp.StatusCode != 200 || body != "secure\n" || len(got) != 2 {
		t.Fatalf("through the proxy to an https upstream answering 503, 200: %d %q, upstream saw %d requests; want 200 \"secure\" after 2", resp.StatusCode, body, len(got))
	}
	for i, s := range got {
		if s.uri != "/pay?id=7" || s.header.Get("Attempt-Count") != fmt.Sprint(i+1) {
			t.Errorf("attempt %d: %s with Attempt-Count %q; want /pay?id=7 with %d", i+1, s.uri, s.header.Get("Attempt-Count"), i+1)
		}
	}

	up.restart()
	other := selfSigned(t) // a root that did not sign the upstream's certificate
	p = startProxyEnv(t, []string{roots(other.Certificate[0]), noDir}, append([]string{"--upstream", upstream}, fastRetries...)...)
	resp, body = do(t, c, "GET", p.url+"/pay", nil)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"reason":"permanent_error"`) || !strings.Contains(body, "certificate") {
		t.Errorf("an upstream whose certificate the proxy cannot verify: %d %s %s; want 502 problem+json, permanent_error, about the certificate", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the unverified upstream got %d requests, want none", n)
	}
}
