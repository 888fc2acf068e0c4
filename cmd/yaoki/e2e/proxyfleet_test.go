package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --redis with Redis hung mid-run (SIGSTOP: its connections stay open
// and nothing answers, the harder fault for a client than a refused
// connection): the proxies go on serving, each deciding alone (A's
// breaker trips on its own failures and refuses), and stderr says so;
// once Redis answers again (SIGCONT), the fleet's state reaches B, which
// refuses too without calling the dead upstream. (stderr said "redis:
// redis: budget ... sync: ...": the prefix twice.)
func TestProxyFleetRedisHung(t *testing.T) {
	rurl, redis := startRedisServer(t)
	up := startUpstream(t)
	dead := "http://" + freePort(t)
	cfg := func(consecutive int) string {
		return writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - path: /dead/
    upstream: %s
    policy:
      Retry:
        - ErrorEquals: [States.ALL]
          IntervalSeconds: 0.001
          MaxAttempts: 2
      Breaker: {ConsecutiveFailures: %d, OpenSeconds: 60}
  - upstream: %s
`, dead, consecutive, up.url))
	}
	a := startProxy(t, "--config", cfg(3), "--redis", rurl)
	b := startProxy(t, "--config", cfg(1000), "--redis", rurl)
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	if resp, _ := do(t, c, "GET", a.url+"/script/ok?s=200", nil); resp.StatusCode != 200 {
		t.Fatalf("before the fault: %d", resp.StatusCode)
	}

	if err := redis.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { redis.cmd.Process.Signal(syscall.SIGCONT) }
	defer cont()
	for i := range 5 {
		start := time.Now()
		resp, _ := do(t, c, "GET", a.url+"/script/ok?s=200", nil)
		if el := time.Since(start); resp.StatusCode != 200 || el > 2*time.Second {
			t.Errorf("request %d with Redis hung: %d after %v, want 200 at once (calls never wait for Redis)", i+1, resp.StatusCode, el)
		}
	}
	do(t, c, "GET", a.url+"/dead/x", nil) // two failures
	do(t, c, "GET", a.url+"/dead/x", nil) // the third trips A's breaker
	resp, body := do(t, c, "GET", a.url+"/dead/x", nil)
	if resp.StatusCode != 503 || !strings.Contains(body, `"reason":"breaker_open"`) {
		t.Fatalf("A with Redis hung, after 4 failures: %d %s; want its own breaker open", resp.StatusCode, body)
	}
	if line := a.waitLine(t, "yaoki proxy: redis: "); strings.Contains(line, "redis: redis:") || !strings.Contains(line, "decides alone") {
		t.Errorf("A's stderr: %q, want the sync's error said once, and that each proxy decides alone", line)
	}

	cont()
	var got string
	if !poll(15*time.Second, 100*time.Millisecond, func() bool {
		resp, body := do(t, c, "GET", b.url+"/dead/x", nil)
		got = fmt.Sprintf("%d %s", resp.StatusCode, body)
		return resp.StatusCode == 503 && strings.Contains(body, `"reason":"breaker_open"`)
	}) {
		t.Fatalf("B never refused once Redis answered again: %s", got)
	}
}

// SIGHUP while calls wait to retry, with the fleet's guards (--redis)
// and the metrics on: the calls finish on the routes they started with
// (their retry sent after the reload, to the old route's upstream, and its
// answer relayed), though the old routes' fleet syncs stop and their
// guards leave the metrics; the next calls take the new routes.
func TestProxySIGHUPDuringRetryWaits(t *testing.T) {
	rurl := startRedis(t)
	up := startUpstream(t)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("routes:\n  - path: /script/\n    upstream: %s\n", up.url))
	p := startProxy(t, "--config", cfg, "--redis", rurl, "--admin-addr", "127.0.0.1:0")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	type result struct {
		status int
		body   string
	}
	done := make(chan result, 3)
	for i := range 3 {
		go func() {
			resp, err := c.Get(fmt.Sprintf("%s/script/w%d?s=503:ra=2,200", p.url, i))
			if err != nil {
				done <- result{body: err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- result{resp.StatusCode, string(b)}
		}()
	}
	up.waitFor(t, 3, func(s upSeen) bool { return strings.HasPrefix(s.Path, "/script/w") && s.N == 1 })
	write(fmt.Sprintf("routes:\n  - path: /echo\n    upstream: %s\n", up.url))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "reloaded "+cfg+": 1 route")
	if resp, _ := do(t, c, "GET", p.url+"/script/new?s=200", nil); resp.StatusCode != 404 {
		t.Errorf("a new call after the reload: %d, want 404 (the new routes)", resp.StatusCode)
	}
	for range 3 {
		if r := <-done; r.status != 200 || !strings.Contains(r.body, "answer 2: 200") {
			t.Errorf("a call waiting to retry across the reload: %d %q, want the retry's 200", r.status, r.body)
		}
	}
	for i := range 3 {
		if got := up.requests(t, fmt.Sprintf("/script/w%d", i)); attempts(got) != "1,2" {
			t.Errorf("/script/w%d: the upstream saw attempts %q, want 1,2", i, attempts(got))
		}
	}
}
