package curl

import (
	"strings"
	"testing"
)

func TestDispositionName(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{`attachment; filename="a.txt"`, "a.txt"},
		{`attachment; filename=a.txt`, "a.txt"},
		{`attachment; filename=a.txt; size=3`, "a.txt"},
		{`attachment;filename="a b;c.txt"`, "a b;c.txt"},
		{`attachment; filename="../../etc/passwd"`, "passwd"},
		{`attachment; filename="C:\dir\x.bin"`, "x.bin"},
		{`attachment; filename="dir/"`, ""},
		{`attachment; filename*=UTF-8''a.txt`, ""}, // not read, as curl 7.88
		{`attachment; FILENAME=a.txt`, ""},         // curl matches the name as written
		{`inline`, ""},
		{``, ""},
		{`attachment; filename="open`, "open"},
	} {
		if got := dispositionName(tc.v); got != tc.want {
			t.Errorf("dispositionName(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// FuzzDispositionName checks that a name -J takes never holds a path
// separator: a server names a file in the folder only.
func FuzzDispositionName(f *testing.F) {
	for _, s := range []string{`attachment; filename="a.txt"`, `filename=../x`, `x; filename="a\b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if name := dispositionName(v); strings.ContainsAny(name, `/\`) {
			t.Fatalf("dispositionName(%q) = %q: a path", v, name)
		}
	})
}
