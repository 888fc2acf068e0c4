package curl

import "testing"

func TestConfigLine(t *testing.T) {
	for _, tc := range []struct {
		line, opt, value string
		hasValue, bad    bool
	}{
		{line: ""}, {line: "   "}, {line: "# comment"}, {line: "  # indented"}, {line: "// slashes"},
		{line: "silent", opt: "silent"},
		{line: "  silent  \r", opt: "silent"},
		{line: "url = http://h/", opt: "url", value: "http://h/", hasValue: true},
		{line: "url=http://h/", opt: "url", value: "http://h/", hasValue: true},
		{line: "url: http://h/ trailing", opt: "url", value: "http://h/", hasValue: true},
		{line: `header = "X-A: a b"`, opt: "header", value: "X-A: a b", hasValue: true},
		{line: `header "a\"b\\c\td\ne\q"`, opt: "header", value: "a\"b\\c\td\neq", hasValue: true},
		{line: `-H "X: 1"`, opt: "-H", value: "X: 1", hasValue: true},
		{line: `--url=x`, opt: "--url=x"}, // a dashed option ends at a space only, as curl
		{line: `--url x`, opt: "--url", value: "x", hasValue: true},
		{line: `data ""`, opt: "data", value: "", hasValue: true},
		{line: `header "open`, bad: true},
	} {
		opt, value, hasValue, err := configLine(tc.line)
		if opt != tc.opt || value != tc.value || hasValue != tc.hasValue || (err != nil) != tc.bad {
			t.Errorf("configLine(%q) = %q, %q, %v, %v; want %q, %q, %v, error %v", tc.line, opt, value, hasValue, err, tc.opt, tc.value, tc.hasValue, tc.bad)
		}
	}
}

// FuzzConfigLine checks that configLine never panics and that a line it
// reads without error and with an option starts with that option.
func FuzzConfigLine(f *testing.F) {
	for _, s := range []string{"url = x", `header "a\"b"`, "-o f", `x "`, "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		opt, _, _, err := configLine(line)
		if err == nil && opt != "" && len(opt) > len(line) {
			t.Fatalf("configLine(%q): option %q longer than the line", line, opt)
		}
	})
}
