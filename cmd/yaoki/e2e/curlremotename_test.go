package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -OJ names the file from the answer's Content-Disposition filename, as
// curl 7.88: its last path segment only (a server cannot write outside
// the folder), the URL's name when there is none, never over a file that
// is there (exit 23, the file left as it was). -J without -O writes to
// stdout; with -i it is refused.
func TestHTTPRemoteHeaderNameLikeCurl(t *testing.T) {
	cd := func(v, body string) answer {
		return answer{status: 200, headers: map[string]string{"Content-Type": "text/plain", "Content-Disposition": v}, body: body}
	}
	for _, tc := range []struct {
		name   string
		answer answer
		args   []string
		file   string // the file both write in their folder ("" none)
		exists bool   // the file is there before, with "old"
		code   int
	}{
		{"quoted", cd(`attachment; filename="named.txt"`, "body\n"), []string{"-OJ"}, "named.txt", false, 0},
		{"unquoted with more", cd(`attachment; filename=plain.bin; size=5`, "body\n"), []string{"-O", "-J"}, "plain.bin", false, 0},
		{"a path", cd(`attachment; filename="../../up/evil.txt"`, "body\n"), []string{"-OJ"}, "evil.txt", false, 0},
		{"no filename", cd(`inline`, "body\n"), []string{"-OJ"}, "f.txt", false, 0},
		{"no header", ok("body\n"), []string{"-OJ"}, "f.txt", false, 0},
		{"there already", cd(`attachment; filename="named.txt"`, "new\n"), []string{"-OJ"}, "named.txt", true, 23},
		{"-J alone", cd(`attachment; filename="named.txt"`, "body\n"), []string{"-J"}, "", false, 0},
		{"-J -i", cd(`attachment; filename="named.txt"`, "body\n"), []string{"-OJi"}, "", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScripted(t, false, tc.answer)
			dy, dc := t.TempDir(), t.TempDir()
			if tc.exists {
				for _, d := range []string{dy, dc} {
					if err := os.WriteFile(filepath.Join(d, tc.file), []byte("old\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			args := func(dir string) []string {
				return append(append([]string{"-s", "--retry", "0", "--output-dir", dir, "-w", "|%{filename_effective}"}, tc.args...), s.url+"dir/f.txt")
			}
			y := run(t, nil, append([]string{"http"}, args(dy)...)...)
			s.restart()
			c := runCurl(t, args(dc)...)
			if y.code != tc.code || c.code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d\nyaoki: %s\ncurl: %s", y.code, c.code, tc.code, y.stderr, c.stderr)
			}
			if tc.code == 2 {
				return
			}
			// %{filename_effective}: curl's has --output-dir for -O's name,
			// not for -J's.
			if yw, cw := strings.ReplaceAll(y.stdout, dy, "DIR"), strings.ReplaceAll(c.stdout, dc, "DIR"); yw != cw {
				t.Errorf("stdout: yaoki %q, curl %q", yw, cw)
			}
			ey, _ := os.ReadDir(dy)
			ec, _ := os.ReadDir(dc)
			if len(ey) != len(ec) {
				t.Errorf("yaoki wrote %v, curl %v", ey, ec)
			}
			if tc.file == "" {
				return
			}
			a, erra := os.ReadFile(filepath.Join(dy, tc.file))
			b, errb := os.ReadFile(filepath.Join(dc, tc.file))
			if erra != nil || errb != nil || string(a) != string(b) {
				t.Errorf("%s: yaoki wrote %q (%v), curl %q (%v)", tc.file, a, erra, b, errb)
			}
		})
	}
}
