package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// -n reads $HOME/.netrc, --netrc-file FILE another, --netrc-optional
// either if there: the login and password of the URL's host (or the
// default entry) are sent as basic authentication, as curl 7.88, unless
// -u gives them; a file that is not there sends none. CI jobs keep their
// credentials out of the command line this way.
func TestHTTPNetrcLikeCurl(t *testing.T) {
	if _, err := os.Stat(curlPath); err != nil {
		t.Skipf("no curl at %s to compare with", curlPath)
	}
	s := startScripted(t, false, ok("ok\n"))
	home, other := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine example.test login x password y\nmachine 127.0.0.1\nlogin ann\npassword \"s3 cret\"\n\ndefault login dflt password dp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dflt := filepath.Join(other, "netrc")
	if err := os.WriteFile(dflt, []byte("machine elsewhere login a password b\ndefault\n  login dflt\n  password dp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home}
	for _, args := range [][]string{
		{"-n"},
		{"--netrc"},
		{"--netrc-optional"},
		{"--netrc-file", dflt},
		{"-n", "-u", "bob:x"},
		{"--netrc-file", filepath.Join(other, "missing")},
	} {
		s.restart()
		all := append(append([]string{"-sS"}, args...), s.url)
		y := run(t, env, append([]string{"http"}, all...)...)
		ys := s.requests()
		s.restart()
		c := runProgram(t, curlPath, env, all...)
		cs := s.requests()
		if y.code != 0 || c.code != 0 || len(ys) != 1 || len(cs) != 1 {
			t.Fatalf("%q: yaoki exit %d (%d requests), curl exit %d (%d requests)\n%s", args, y.code, len(ys), c.code, len(cs), y.stderr)
		}
		if got, want := ys[0].header.Values("Authorization"), cs[0].header.Values("Authorization"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: Authorization: yaoki %q, curl %q", args, got, want)
		}
	}
}
