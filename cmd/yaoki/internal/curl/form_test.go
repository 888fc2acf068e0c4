package curl

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseFormSpec(t *testing.T) {
	for spec, want := range map[string]formField{
		"a=1":                                {name: "a", value: "1"},
		"f=@dir/a.txt":                       {name: "f", value: "dir/a.txt", file: true, filename: "a.txt"},
		"f=@a;type=x/y;charset=u;filename=n": {name: "f", value: "a", file: true, filename: "n", ctype: "x/y;charset=u"},
		"h=<v;filename=x":                    {name: "h", value: "v", fromFile: true},
		`m="q;\"s\"";type=a/b `:              {name: "m", value: `q;"s"`, ctype: "a/b"},
		"p=a;b":                              {name: "p", value: "a"},
	} {
		got, err := parseFormSpec(spec, false)
		if err != nil || got != want {
			t.Errorf("parseFormSpec(%q) = %+v, %v; want %+v", spec, got, err, want)
		}
	}
	if got, _ := parseFormSpec("s=@x;type=y", true); got != (formField{name: "s", value: "@x;type=y"}) {
		t.Errorf("--form-string: got %+v, want the value as written", got)
	}
}

// FuzzParseFormSpec: any spec with '=' parses, and its form body holds
// the boundary only as delimiters.
func FuzzParseFormSpec(f *testing.F) {
	for _, s := range []string{"a=1", "f=@x;type=a/b;filename=\"n;m\"", "h=<v", `m="q\"`, "=x;;type=", "n\"\r\n=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ff, err := parseFormSpec(spec, false)
		if !strings.Contains(spec, "=") {
			if err == nil {
				t.Fatalf("parseFormSpec(%q) took a spec without '='", spec)
			}
			return
		}
		if err != nil {
			t.Fatalf("parseFormSpec(%q): %v", spec, err)
		}
		if ff.file || ff.fromFile {
			return // would read a file
		}
		boundary := strings.Repeat("-", 24) + "0123456789abcdef"
		body, _, err := formBody([]formPart{{spec: spec}}, boundary, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := bytes.Cut(body, []byte("\r\n\r\n"))
		if bytes.ContainsAny(bytes.TrimPrefix(head, []byte("--"+boundary+"\r\n")), "\"") && strings.Count(string(head), `"`)%2 != 0 {
			t.Fatalf("part head %q has unbalanced quotes", head)
		}
	})
}
