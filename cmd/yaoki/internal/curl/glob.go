package curl

import (
	"fmt"
	"net"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// unglob reads a URL as curl 7.88 reads it without -g: "{a,b}" and
// "[1-3]" ("[a-c]", "[01-10:2]") are globs that make several URLs, a
// lone or unmatched brace or bracket is a malformed URL, and "\{", "\}",
// "\[", "\]" are the character alone; "[]" and an IPv6 address in
// brackets are written as they are. yaoki http sends one URL: a glob is
// refused as bad usage (exit 2, as several URLs are), naming it and -g;
// a malformed one exits 3, as in curl. It returns the URL to send, with
// the escapes' backslashes removed.
func unglob(raw string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '\\':
			if i+1 < len(raw) && strings.IndexByte("{}[]", raw[i+1]) >= 0 {
				i++
				c = raw[i]
			}
		case '[':
			if n := literalBrackets(raw[i:]); n > 0 {
				b.WriteString(raw[i : i+n])
				i += n - 1
				continue
			}
			end := strings.IndexByte(raw[i:], ']')
			if end < 0 || !globRange(raw[i+1:i+end]) {
				return "", globError(raw, i, "bad range")
			}
			return "", several(raw, raw[i:i+end+1])
		case '{':
			end := strings.IndexByte(raw[i:], '}')
			if end < 0 {
				return "", globError(raw, i, "unmatched brace")
			}
			if j := strings.IndexByte(raw[i+1:i+end], '{'); j >= 0 {
				return "", globError(raw, i+1+j, "nested brace")
			}
			if end == 1 {
				return "", globError(raw, i, "empty string within braces")
			}
			return "", several(raw, raw[i:i+end+1])
		case '}', ']':
			return "", globError(raw, i, "unmatched close brace/bracket")
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// literalBrackets returns the length of "[]" or of an IPv6 address in
// brackets at the start of s (curl's peek_ipv6), 0 for a glob.
func literalBrackets(s string) int {
	if strings.HasPrefix(s, "[]") {
		return 2
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0
	}
	host := s[1:end]
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i] // a zone: fe80::1%25eth0
	}
	if strings.Contains(host, ":") && net.ParseIP(host) != nil {
		return end + 1
	}
	return 0
}

// globRange reports whether r (between the brackets) is one of curl's
// ranges: a letter to a letter of the same case, or a number to a number,
// not backwards, with an optional ":STEP" of 1 or more. (curl also refuses
// a step longer than the range; yaoki http refuses the glob all the same.)
func globRange(r string) bool {
	r, step, hasStep := strings.Cut(r, ":")
	if hasStep && (!digits(step) || strings.Trim(step, "0") == "") {
		return false
	}
	from, to, ok := strings.Cut(r, "-")
	if !ok {
		return false
	}
	if digits(from) && digits(to) {
		f, t := strings.TrimLeft(from, "0"), strings.TrimLeft(to, "0")
		return len(f) < len(t) || len(f) == len(t) && f <= t
	}
	lower := func(s string) bool { return len(s) == 1 && s[0] >= 'a' && s[0] <= 'z' }
	upper := func(s string) bool { return len(s) == 1 && s[0] >= 'A' && s[0] <= 'Z' }
	return (lower(from) && lower(to) || upper(from) && upper(to)) && from <= to
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// several refuses a URL that curl would expand into several (or into one
// that differs from what is written).
func several(raw, glob string) error {
	return cli.Usagef("%s: curl expands the glob %s into the URLs it makes (one transfer each); yaoki http sends one URL: write it without the glob, or add -g (--globoff) to send {} and [] as written, or \\%c to send %c alone", raw, glob, glob[0], glob[0])
}

// globError is curl's exit 3 for a glob it cannot read, at byte i.
func globError(raw string, i int, what string) error {
	return cli.Exit(curlBadURL, fmt.Sprintf("(%d) %s in URL position %d: %s (-g sends {} and [] as written; \\%c sends %c alone)", curlBadURL, what, i+1, raw, raw[i], raw[i]))
}
