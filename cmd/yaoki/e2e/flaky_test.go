package e2e

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func get(t *testing.T, c *http.Client, method, url, key string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader("{}"))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Attempt-Count", "1")
	resp, err := c.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestFlakyScript(t *testing.T) {
	s := startFlaky(t, "--script", "503,429:retry-after=2,reset,200:slow=10ms,201")
	// No keep-alive: net/http itself resends a GET whose reused connection
	// was reset, which would hide the reset.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer c.CloseIdleConnections()
	resp, err := get(t, c, "GET", s.url, "")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("1st: %v %v, want 503", resp, err)
	}
	resp, err = get(t, c, "GET", s.url, "")
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("2nd: %v %v, want 429 with Retry-After: 2", resp, err)
	}
	_, err = get(t, c, "GET", s.url, "")
	if !errors.Is(err, syscall.ECONNRESET) && (err == nil || !strings.Contains(err.Error(), "EOF")) {
		t.Fatalf("3rd: err %v, want a connection reset", err)
	}
	resp, err = get(t, c, "GET", s.url, "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("4th: %v %v, want 200", resp, err)
	}
	for i := 0; i < 2; i++ { // the last answer repeats
		if resp, err = get(t, c, "GET", s.url, ""); err != nil || resp.StatusCode != 201 {
			t.Fatalf("after the script: %v %v, want 201", resp, err)
		}
	}
	log := s.waitRequests(t, 6)
	want := []string{"503", "429:retry-after=2", "reset", "200:slow=10ms", "201", "201"}
	for i, l := range log {
		if field(l, "answer") != want[i] || field(l, "attempt") != "1" || field(l, "key") != "-" {
			t.Errorf("log line %d %q: want answer=%s attempt=1 key=-", i, l, want[i])
		}
	}
}

// Each Idempotency-Key walks the script on its own, and a key that got a
// 2xx gets it replayed.
func TestFlakyIdempotencyKeys(t *testing.T) {
	s := startFlaky(t, "--script", "503,200")
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		key    string
		status int
		replay bool
	}{{"a", 503, false}, {"b", 503, false}, {"a", 200, false}, {"a", 200, true}, {"b", 200, false}} {
		resp, err := get(t, c, "POST", s.url, tc.key)
		if err != nil || resp.StatusCode != tc.status || (resp.Header.Get("Idempotent-Replayed") == "true") != tc.replay {
			t.Fatalf("key %s: %v %v; want %d, replayed %v", tc.key, resp, err, tc.status, tc.replay)
		}
	}
	log := s.waitRequests(t, 5)
	if field(log[0], "op") != "1" || field(log[1], "op") != "2" || field(log[3], "answer") != "200" || !strings.Contains(log[3], "(replay)") {
		t.Errorf("log:\n%s", strings.Join(log, "\n"))
	}
}

// TestFlakyCut: "cut" announces the whole body and sends half of it
// before closing the connection. A keyed operation cut so ran: the retry
// with its key gets the answer replayed whole (the lost reply). A client
// that retries a cut (yaoki http --retry-all-errors) gets the next answer.
func TestFlakyCut(t *testing.T) {
	s := startFlaky(t, "--script", "200:cut,201")
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		key    string
		status int
		cut    bool
		replay bool
	}{{"", 200, true, false}, {"k", 200, true, false}, {"k", 200, false, true}, {"", 201, false, false}} {
		req, _ := http.NewRequest("POST", s.url, strings.NewReader("{}"))
		if tc.key != "" {
			req.Header.Set("Idempotency-Key", tc.key)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("key %q: %v", tc.key, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || errors.Is(err, io.ErrUnexpectedEOF) != tc.cut || int64(len(b)) == resp.ContentLength == tc.cut ||
			(resp.Header.Get("Idempotent-Replayed") == "true") != tc.replay {
			t.Errorf("key %q: %d, %d of %d bytes, %v, replayed %q; want %d, cut %v, replayed %v", tc.key, resp.StatusCode, len(b), resp.ContentLength, err, resp.Header.Get("Idempotent-Replayed"), tc.status, tc.cut, tc.replay)
		}
	}
	log := s.waitRequests(t, 4)
	if field(log[0], "answer") != "200:cut" || field(log[2], "answer") != "200" || !strings.Contains(log[2], "(replay)") {
		t.Errorf("log:\n%s", strings.Join(log, "\n"))
	}

	s = startFlaky(t, "--script", "200:cut,200")
	r := run(t, nil, append([]string{"http", "-sS", "--retry", "2", "--retry-all-errors"}, append(fastRetries, s.url)...)...)
	if r.code != 0 || r.stdout != "flaky: 200 OK (request 2, step 2)\n" {
		t.Errorf("yaoki http: exit %d, stdout %q, stderr %q; want 0 and the second answer", r.code, r.stdout, r.stderr)
	}
}

func TestFlakyRatesAreSeeded(t *testing.T) {
	answers := func() []string {
		s := startFlaky(t, "--rate-429", "0.4", "--rate-5xx", "0.3", "--retry-after", "date+1", "--seed", "42", "--max-requests", "20")
		c := &http.Client{Timeout: 5 * time.Second}
		defer c.CloseIdleConnections()
		for i := 0; i < 20; i++ {
			resp, err := get(t, c, "GET", s.url, "")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == 429 {
				if _, err := http.ParseTime(resp.Header.Get("Retry-After")); err != nil {
					t.Errorf("Retry-After %q is not an HTTP date", resp.Header.Get("Retry-After"))
				}
			}
		}
		s.wait(t) // --max-requests stops it
		var out []string
		for _, l := range s.requests() {
			out = append(out, field(l, "answer"))
		}
		return out
	}
	a, b := answers(), answers()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("the same seed gave different answers:\n%v\n%v", a, b)
	}
	joined := strings.Join(a, ",")
	if !strings.Contains(joined, "429") || !strings.Contains(joined, "503") || !strings.Contains(joined, "200") {
		t.Fatalf("20 draws at 40%% 429 and 30%% 503: %v", a)
	}
}

func TestFlakyBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"flaky", "--script", "503,abc"}, `step 2 "abc": "abc" is not a status`},
		{[]string{"flaky", "--script", "429:retry-after=soon"}, "want whole seconds"},
		{[]string{"flaky", "--script", "503", "--rate-429", "0.5"}, "cannot be combined"},
		{[]string{"flaky", "--rate-429", "1.5"}, "--rate-429 1.5: want a share from 0 to 1"},
		{[]string{"flaky", "--addr", "0.0.0.0:0"}, "loopback only"},
		// A reset sends no header: a Retry-After on it would be lost.
		{[]string{"flaky", "--script", "503,reset:retry-after=2"}, `step 2 "reset:retry-after=2": reset sends no answer, so no Retry-After: want reset or reset:slow=DURATION`},
		// An option given twice: which one counts is not for flaky to guess.
		{[]string{"flaky", "--script", "429:retry-after=1:retry-after=2"}, `step 1 "429:retry-after=1:retry-after=2": retry-after given twice`},
		// The date would be past what a time can hold (about 292 years).
		{[]string{"flaky", "--script", "429:retry-after=date+99999999999"}, "retry-after=date+99999999999: want at most date+9223372035"},
		{[]string{"flaky", "--rate-429", "0.5", "--retry-after", "date+99999999999"}, "--retry-after \"date+99999999999\""},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki %v: exit %d, %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// SIGTERM stops the server at once, though a slow answer is under way: the
// client waiting for it sees its connection closed, and the summary is
// written.
func TestFlakyStopsDuringSlowAnswer(t *testing.T) {
	s := startFlaky(t, "--script", "200:slow=1h")
	c := &http.Client{Timeout: time.Minute}
	defer c.CloseIdleConnections()
	got := make(chan error, 1)
	go func() {
		_, err := get(t, c, "GET", s.url, "")
		got <- err
	}()
	s.waitRequests(t, 1) // the answer is under way
	stop := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit %d; want 0", code)
	}
	// The server's own bound on a graceful stop is 5 s.
	if d := time.Since(stop); d > 2*time.Second {
		t.Errorf("stopped %v after SIGTERM: want at once", d)
	}
	if err := <-got; err == nil {
		t.Error("the slow answer came as if scripted: want the connection closed")
	}
	if l := s.lines(); len(l) == 0 || !strings.Contains(l[len(l)-1], "flaky: 1 request") {
		t.Errorf("no summary last:\n%s", strings.Join(l, "\n"))
	}
}
