package e2e

import (
	"strings"
	"testing"
)

// yaoki http --hedge-after: the first answer is slow (3 s), so a copy goes
// out after 100 ms and its answer is the one written; stderr says so, and
// the server saw the two attempts, numbered 1 and 2.
func TestHTTPHedge(t *testing.T) {
	s := startFlaky(t, "--script", "200:slow=3s,200")
	r := run(t, nil, "http", "-v", "--hedge-after", "100ms", s.url+"items")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "flaky: 200 OK") {
		t.Fatalf("exit %d, stdout %q; want 0 and the 200's body\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"hedging: no answer after", "attempt 2 sent beside the others", "hedge won: attempt 2 answered first"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	log := s.waitRequests(t, 2)
	if len(log) != 2 || field(log[0], "attempt") != "1" || field(log[1], "attempt") != "2" {
		t.Fatalf("flaky saw %q; want attempts 1 and 2", log)
	}
	// The flags are checked.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-hedges", "2"}, "needs --hedge-after"},
		{[]string{"--hedge-after", "0s"}, "want a duration > 0"},
		{[]string{"--hedge-after", "10ms", "--max-hedges", "11"}, "want 1 to 10"},
	} {
		r := run(t, nil, append(append([]string{"http"}, tc.args...), s.url)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("yaoki http %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
