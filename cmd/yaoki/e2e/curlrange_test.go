package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTTPRangeLikeCurl compares, for -r, what the server receives from
// yaoki http and from curl 7.88 (method, Range and Content-Range of each
// request, -L's hops and --retry's attempts included), their stdout,
// exit codes, and whether they warn.
func TestHTTPRangeLikeCurl(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "up.txt")
	os.WriteFile(file, []byte("hello world"), 0o600)
	partial := answer{status: 206, headers: map[string]string{"Content-Range": "bytes 0-4/10", "Content-Type": "text/plain"}, body: "01234"}
	whole := ok("0123456789")
	unsatisfiable := answer{status: 416, headers: map[string]string{"Content-Range": "bytes */10", "Content-Type": "text/plain"}, body: "no\n"}
	redirect := func(code int) answer {
		return answer{status: code, headers: map[string]string{"Location": "/next"}, body: "moved\n"}
	}
	for _, tc := range []struct {
		name   string
		script []answer
		args   []string
		yaoki  []string // yaoki only
		curl   []string // curl only
		code   int
		warn   bool // both write a warning on stderr
		last   bool // curl writes every attempt's body: compare the end
	}{
		{name: "START-END", script: []answer{partial}, args: []string{"-r", "0-4"}},
		{name: "START-", script: []answer{partial}, args: []string{"-r", "5-"}},
		{name: "-SUFFIX", script: []answer{partial}, args: []string{"-r", "-3"}},
		{name: "several", script: []answer{partial}, args: []string{"-r", "0-1,3-4"}},
		{name: "empty", script: []answer{partial}, args: []string{"-r", ""}},
		{name: "no dash", script: []answer{partial}, args: []string{"-r", "500"}, warn: true},
		{name: "no dash, digits first", script: []answer{partial}, args: []string{"-r", "50x"}, warn: true},
		{name: "other characters", script: []answer{partial}, args: []string{"-r", "abc"}, warn: true},
		{name: "-s mutes the warning", script: []answer{partial}, args: []string{"-s", "-r", "500"}},
		{name: "start too large", script: []answer{partial}, args: []string{"-s", "-r", "99999999999999999999999"}, code: 2, warn: true},
		{name: "the server ignores it", script: []answer{whole}, args: []string{"-r", "0-4"}},
		{name: "416", script: []answer{unsatisfiable}, args: []string{"-r", "20-30"}},
		{name: "416 -f", script: []answer{unsatisfiable}, args: []string{"-sS", "-f", "-r", "20-30"}, code: 22, warn: true},
		{name: "-I", script: []answer{partial}, args: []string{"-I", "-r", "1-2"}},
		{name: "-d", script: []answer{partial}, args: []string{"-r", "1-2", "-d", "x=1"}},
		{name: "-X PUT -d", script: []answer{partial}, args: []string{"-r", "1-2", "-X", "PUT", "-d", "x"}},
		{name: "-G -d", script: []answer{partial}, args: []string{"-r", "1-2", "-G", "-d", "x=1"}},
		{name: "--json", script: []answer{partial}, args: []string{"-r", "1-2", "--json", "{}"}},
		{name: "-T", script: []answer{partial}, args: []string{"-r", "1-2", "-T", file}},
		{name: "-F", script: []answer{partial}, args: []string{"-r", "1-2", "-F", "a=1"}},
		{name: "-X DELETE", script: []answer{partial}, args: []string{"-r", "1-2", "-X", "DELETE"}},
		{name: "-H Range", script: []answer{partial}, args: []string{"-r", "1-2", "-H", "Range: bytes=3-4"}},
		{name: "-H Range:", script: []answer{partial}, args: []string{"-r", "1-2", "-H", "Range:"}},
		{name: "-H Content-Range", script: []answer{partial}, args: []string{"-r", "1-2", "-H", "Content-Range: x", "-d", "y"}},
		{name: "-L", script: []answer{redirect(302), partial}, args: []string{"-L", "-r", "1-2"}},
		{name: "-L -d 302", script: []answer{redirect(302), partial}, args: []string{"-L", "-r", "1-2", "-d", "x"}},
		{name: "-L -F 302", script: []answer{redirect(302), partial}, args: []string{"-L", "-r", "1-2", "-F", "a=1"}},
		{name: "-L -X PUT -d 302", script: []answer{redirect(302), partial}, args: []string{"-L", "-r", "1-2", "-X", "PUT", "-d", "x"}},
		{name: "-L -H Content-Range -d 302", script: []answer{redirect(302), partial}, args: []string{"-L", "-r", "1-2", "-H", "Content-Range: x", "-d", "x"}},
		{name: "-L -d 307", script: []answer{redirect(307), partial}, args: []string{"-L", "-r", "1-2", "-d", "x"}},
		{name: "--retry", script: []answer{status(503, "busy\n"), partial}, args: []string{"-sS", "--retry", "1", "-r", "0-4"}, yaoki: fastRetries, curl: []string{"--retry-delay", "1"}, last: true},
		{name: "a body cut short", script: []answer{{status: 206, headers: map[string]string{"Content-Range": "bytes 0-4/10", "Content-Length": "5"}, body: "01", cut: true}}, args: []string{"-sS", "--retry", "0", "-r", "0-4"}, code: 18, warn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.script...)
			var res [2]result
			var sent [2][]seen
			for i, who := range []string{"yaoki", "curl"} {
				extra := tc.yaoki
				if who == "curl" {
					extra = tc.curl
				}
				s.restart()
				res[i] = runAs(t, who, append(append(append([]string(nil), extra...), tc.args...), s.url+"r")...)
				sent[i] = s.requests()
			}
			y, c := res[0], res[1]
			if y.code != tc.code || c.code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d\nyaoki: %s\ncurl: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if tc.last && !strings.HasSuffix(c.stdout, y.stdout) || !tc.last && y.stdout != c.stdout {
				t.Errorf("stdout: yaoki %q, curl %q", y.stdout, c.stdout)
			}
			yw := strings.Contains(y.stderr, "yaoki")
			cw := strings.Contains(c.stderr, "Warning:") || strings.Contains(c.stderr, "curl:")
			if yw != tc.warn || cw != tc.warn {
				t.Errorf("stderr: yaoki %q, curl %q; want a warning from both: %v", y.stderr, c.stderr, tc.warn)
			}
			if tc.code == 2 {
				if len(sent[0]) != 0 || !strings.Contains(y.stderr, "-r") {
					t.Errorf("yaoki sent %d requests, stderr %q; want none and a message naming -r", len(sent[0]), y.stderr)
				}
				return
			}
			if len(sent[0]) != len(sent[1]) {
				t.Fatalf("yaoki sent %d requests, curl %d", len(sent[0]), len(sent[1]))
			}
			for i := range sent[0] {
				a, b := sent[0][i], sent[1][i]
				show := func(r seen) string {
					return fmt.Sprintf("%s %s Range %q Content-Range %q", r.method, r.uri, r.header.Values("Range"), r.header.Values("Content-Range"))
				}
				if show(a) != show(b) {
					t.Errorf("request %d: yaoki %s; curl %s", i+1, show(a), show(b))
				}
			}
		})
	}
}
