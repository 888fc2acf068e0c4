package curl

import (
	"errors"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

func TestUnglob(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		code      int // 0: sent as want
	}{
		{"http://h/a", "http://h/a", 0},
		{"http://h/?a[]=1", "http://h/?a[]=1", 0},                   // [] is no glob
		{"http://[::1]:8080/x", "http://[::1]:8080/x", 0},           // an IPv6 host
		{"http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]/", 0}, // with its zone
		{`http://h/a\{b\}\[c\]`, "http://h/a{b}[c]", 0},             // escapes
		{`http://h/a\x`, `http://h/a\x`, 0},                         // a backslash before another byte stays
		{"http://h/{a,b}", "", cli.ExitUsage},
		{"http://h/{a}", "", cli.ExitUsage},
		{"http://h/[1-3]", "", cli.ExitUsage},
		{"http://h/[01-10:2]", "", cli.ExitUsage},
		{"http://h/[a-c]", "", cli.ExitUsage},
		{"http://h/[A-C]", "", cli.ExitUsage},
		{"http://h/{", "", curlBadURL},
		{"http://h/}", "", curlBadURL},
		{"http://h/]", "", curlBadURL},
		{"http://h/{}", "", curlBadURL},
		{"http://h/{a,{b}", "", curlBadURL},
		{"http://h/[", "", curlBadURL},
		{"http://h/[1]", "", curlBadURL},
		{"http://h/[2-1]", "", curlBadURL},
		{"http://h/[a-Z]", "", curlBadURL},
		{"http://h/[1-2:0]", "", curlBadURL},
		{"http://h/[1-2:x]", "", curlBadURL},
	} {
		got, err := unglob(tc.raw)
		code := 0
		if ee := (*cli.ExitError)(nil); errors.As(err, &ee) {
			code = ee.Code
		} else if err != nil {
			t.Fatalf("unglob(%q): %v is no exit error", tc.raw, err)
		}
		if code != tc.code || got != tc.want {
			t.Errorf("unglob(%q) = %q, exit %d; want %q, exit %d (%v)", tc.raw, got, code, tc.want, tc.code, err)
		}
	}
}

// FuzzUnglob checks that unglob never panics, refuses with a usage error
// or curl's 3 only, and that a URL it sends has no brace or bracket left
// but those of "[]" and an IPv6 host.
func FuzzUnglob(f *testing.F) {
	for _, s := range []string{"http://h/{a,b}", "http://[::1]/", `a\{`, "[]]", "[1-2:3]", "{,}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := unglob(raw)
		if err != nil {
			var ee *cli.ExitError
			if !errors.As(err, &ee) || ee.Code != cli.ExitUsage && ee.Code != curlBadURL {
				t.Fatalf("unglob(%q): %v", raw, err)
			}
			return
		}
		if strings.ContainsAny(raw, "{}") && !strings.Contains(raw, `\`) {
			t.Fatalf("unglob(%q) = %q: a brace was sent", raw, got)
		}
	})
}
