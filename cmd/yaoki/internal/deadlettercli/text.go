package deadlettercli

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Letters hold text from elsewhere (a remote server's error message, a
// request body): before it reaches a terminal, control characters (an
// escape sequence's ESC, a carriage return that hides a line) and bidi
// controls (which reorder what is shown) are neutralised.

// hidden reports whether r must not reach a terminal as is: C0 and C1
// control characters, DEL, and the bidi embedding, override and isolate
// controls.
func hidden(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// oneLine returns s for one line of output: tabs and line breaks become
// spaces, other hidden characters are written as Go escapes (\x1b,
// \u202e), as safeText writes them, and invalid UTF-8 bytes are U+FFFD.
func oneLine(s string) string { return escapeHidden(s, true) }

// safeText returns s (valid UTF-8) for a terminal, lines kept: newlines and
// tabs stay, other hidden characters are written as Go escapes (\r, \x1b,
// \u202e), so that what the letter holds is shown, not obeyed.
func safeText(s string) string { return escapeHidden(s, false) }

func escapeHidden(s string, line bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case line && (r == '\n' || r == '\t' || r == '\r'):
			b.WriteByte(' ')
		case r == '\n' || r == '\t' || !hidden(r):
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// cutRunes returns s cut to at most n runes, its last "…" when cut (n ≥ 1).
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n-1 {
			break
		}
		k++
	}
	return s[:i] + "…"
}

// relative says when t is from now: "in 4m30s", "2h ago", "now" (to the
// second).
func relative(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + shortDuration(d)
	}
	return shortDuration(-d) + " ago"
}

// shortDuration is d's String without zero minutes and seconds: 2h, 1h5m,
// 90s as 1m30s; days are hours (50h).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// shellQuote returns s as one word a shell reads back as s, to be pasted
// into the next command (list's --after): as is when it is plain, else in
// single quotes, and in ANSI-C quotes ($'...', read by bash, zsh, ksh and
// POSIX sh since 2024) when it holds hidden characters or bytes that are
// not UTF-8, each written as an escape (\t, \x1b, \xe2\x80\xae), so that the word
// is the ID itself, not a likeness: a tab shown as a space is another ID,
// and --after it skips letters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@%+=,", r))
	}) < 0 {
		return s
	}
	if utf8.ValidString(s) && !strings.ContainsFunc(s, hidden) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case !hidden(r):
			b.WriteRune(r)
		default:
			// Its UTF-8 bytes, two hex digits each (\x1b followed by a
			// digit stays one escape): \u would depend on the shell's
			// locale.
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
