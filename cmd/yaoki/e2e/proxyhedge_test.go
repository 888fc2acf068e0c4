package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/metrictest"
)

// A route with hedge: {delay: 200ms}: of six GETs, the first attempt of
// every other one hangs for 60 s. For those the proxy sends a copy after
// 200 ms, the client gets the copy's fast answer, the upstream saw both
// attempts (1 and 2), and the hanging one's request is cancelled: the
// proxy closed its connection rather than leave it waiting. The fast GETs
// are sent once (when they answer within the delay). /metrics counts the
// hedges and their wins.
func TestProxyHedgeConfig(t *testing.T) {
	up := startUpstream(t)
	cfg := writeConfig(t, "proxy.yaml", fmt.Sprintf(`routes:
  - path: /
    upstream: %s
    hedge: {delay: 200ms, budget: off}
`, up.url))
	p := startProxy(t, "--config", cfg, "--admin-addr", "127.0.0.1:0")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()

	copies, late := 0, 0
	for i := range 6 {
		slow := i%2 == 1
		path := fmt.Sprintf("/script/h%d", i)
		script := "200"
		if slow {
			script = "200:slow=60s,200"
		}
		start := time.Now()
		resp, body := do(t, c, "GET", p.url+path+"?s="+script, nil)
		took := time.Since(start)
		got := up.requests(t, path)
		copies += len(got) - 1
		if !slow {
			// On a loaded machine a fast answer may still take longer
			// than the delay, and then a copy is due.
			if took >= 200*time.Millisecond && len(got) == 1 {
				// A copy was due, and may have been started and then
				// cancelled by the first answer before it left: counted
				// as a hedge, never seen by the upstream.
				late++
			}
			if resp.StatusCode != 200 || len(got) > 1 && took < 200*time.Millisecond || len(got) == 1 && body != "answer 1: 200\n" {
				t.Fatalf("%s, a fast answer: client got %d %q after %v, upstream saw attempts %q; want a 200, sent once when it came within the 200 ms delay",
					path, resp.StatusCode, body, took.Round(time.Millisecond), attempts(got))
			}
			continue
		}
		if resp.StatusCode != 200 || body != "answer 2: 200\n" || attempts(got) != "1,2" || took > 10*time.Second {
			t.Fatalf("%s, a first attempt that hangs: client got %d %q after %v, upstream saw attempts %q; want the copy's 200 (answer 2) well before the 60 s of the first, attempts 1,2",
				path, resp.StatusCode, body, took.Round(time.Millisecond), attempts(got))
		}
		if gap := got[1].Ms - got[0].Ms; gap < 200 {
			t.Errorf("%s: the copy came %d ms after the first attempt; want at least the 200 ms delay", path, gap)
		}
		cancelled := up.waitFor(t, 1, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == path })
		if len(cancelled) != 1 || cancelled[0].N != 1 {
			t.Fatalf("%s: the upstream saw %d cancellations %v; want the losing first attempt's request cancelled (its connection closed by the proxy)", path, len(cancelled), cancelled)
		}
	}

	got := scrape(t, p.metricsURL(t))
	sum := func(name string) (n float64) {
		for _, v := range only(got, name) {
			n += v
		}
		return n
	}
	if h, w := sum("yaoki_hedges_total"), sum("yaoki_hedges_won_total"); h < float64(copies) || h > float64(copies+late) || w < 3 {
		t.Errorf("/metrics: %v hedges, %v won; want %d (the copies the upstream saw; up to %d more for fast answers that came after the delay), at least 3 won (one per hanging first attempt)%s",
			h, w, copies, late, metrictest.Lines(got))
	}
}

// yaoki proxy --upstream --hedge-after: the hedge package's default budget
// allows this hedge; a POST without Idempotency-Key is not safe to send
// twice and waits for its slow answer; with a key it is hedged, each copy
// carrying the same key. The flags are checked.
func TestProxyHedgeFlags(t *testing.T) {
	up := startUpstream(t)
	p := startProxy(t, "--upstream", up.url, "--hedge-after", "200ms", "--max-hedges", "1")
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()

	resp, body := do(t, c, "GET", p.url+"/script/g?s=200:slow=60s,200", nil)
	if got := up.requests(t, "/script/g"); resp.StatusCode != 200 || body != "answer 2: 200\n" || attempts(got) != "1,2" {
		t.Fatalf("GET, first attempt hangs: client got %d %q, upstream saw attempts %q; want the copy's 200, attempts 1,2", resp.StatusCode, body, attempts(got))
	}
	if got := up.waitFor(t, 1, func(s upSeen) bool { return s.Event == "cancelled" && s.Path == "/script/g" }); len(got) != 1 {
		t.Fatalf("GET: the hanging first attempt was not cancelled (%d cancellations)", len(got))
	}

	resp, body = do(t, c, "POST", p.url+"/script/p?s=200:slow=1s,200", strings.NewReader("{}"))
	if got := up.requests(t, "/script/p"); resp.StatusCode != 200 || body != "answer 1: 200\n" || len(got) != 1 {
		t.Fatalf("POST without key, slow answer: client got %d %q, upstream saw %d requests; want the one slow answer, no copy", resp.StatusCode, body, len(got))
	}

	resp, body = do(t, c, "POST", p.url+"/script/k?s=200:slow=60s,200", strings.NewReader("{}"), "Idempotency-Key", "order-7")
	got := up.requests(t, "/script/k")
	if resp.StatusCode != 200 || body != "answer 2: 200\n" || attempts(got) != "1,2" || got[0].Key != "order-7" || got[1].Key != "order-7" || got[1].Body != 2 {
		t.Fatalf("POST with key, first attempt hangs: client got %d %q, upstream saw %+v; want the copy's 200, attempts 1,2 with key order-7 and the body on both", resp.StatusCode, body, got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", up.url, "--max-hedges", "2"}, "needs --hedge-after"},
		{[]string{"--upstream", up.url, "--hedge-after", "0s"}, "want a duration > 0"},
		{[]string{"--config", "proxy.yaml", "--hedge-after", "50ms"}, "--hedge-after cannot be combined with --config"},
	} {
		r := run(t, nil, append([]string{"proxy", "--listen", "127.0.0.1:0"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki proxy %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
