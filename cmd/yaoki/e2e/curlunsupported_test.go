package e2e

import (
	"strings"
	"testing"
)

// A curl flag that yaoki http does not take is refused before anything is
// sent (exit 2, curl's for an option it does not know), with a message that
// names the flag as given, what it is in curl, and the curl flags yaoki
// http takes: a script moved from curl learns at once what to change,
// rather than seeing a run that silently ignored -R's file time or -y's speed limit.
func TestHTTPUnsupportedCurlFlagsRefused(t *testing.T) {
	s := startScripted(t, false, ok("hello\n"))
	for _, tc := range []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"-R"}, []string{"-R", "curl's --remote-time", "Set the remote file's time on the local output"}},
		{[]string{"--post301", "-L"}, []string{"--post301", "Do not switch to GET after following a 301"}},
		{[]string{"-sSa"}, []string{"-a", "curl's --append"}},
		{[]string{"-sSZ"}, []string{"-Z", "curl's --parallel"}},
		{[]string{"--digest", "-u", "a:b"}, []string{"--digest", "Use HTTP Digest Authentication"}},
		{[]string{"--limit-rate", "1k"}, []string{"--limit-rate"}},
		{[]string{"--http2-prior-knowledge"}, []string{"--http2-prior-knowledge"}},
		{[]string{"--ntlm", "-u", "a:b"}, []string{"--ntlm", "Use HTTP NTLM authentication"}},
		{[]string{"--no-sessionid"}, []string{"--no-sessionid", "Disable SSL session-ID reusing"}},
		{[]string{"--bogus-flag"}, []string{"--bogus-flag", "not a curl flag"}},
		{[]string{"--max-atempts", "2"}, []string{"did you mean --max-attempts?"}},
	} {
		r := run(t, nil, append(append([]string{"http"}, tc.args...), s.url)...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("yaoki http %q: exit %d, stdout %q; want 2 and nothing\n%s", tc.args, r.code, r.stdout, r.stderr)
		}
		for _, w := range append(tc.want, "yaoki http takes these curl flags:", "--location (-L)", "--retry-all-errors") {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("yaoki http %q: stderr %q; want it to say %q", tc.args, r.stderr, w)
			}
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
