package deadlettercli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/deadletter"
)

func TestParseState(t *testing.T) {
	for in, want := range map[string]string{"waiting": "waiting", "due": "due", " Held ": "held", "PARKED": "parked"} {
		if got, err := parseState(in); err != nil || got != want {
			t.Errorf("parseState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lost", "dead", "park", "due,parked"} {
		_, err := parseState(bad)
		if err == nil || !strings.Contains(err.Error(), "waiting, due, held, parked") {
			t.Errorf("parseState(%q): %v; want a refusal naming the states", bad, err)
		}
	}
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"waiting", "Due", " held", "parked\n", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseState(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(strings.TrimSpace(s), got) {
			t.Fatalf("parseState(%q) = %q", s, got)
		}
		if _, err := parseState(got); err != nil {
			t.Fatalf("parseState(%q) refuses its own result %q", s, got)
		}
	})
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at, in string
		want   time.Time
	}{
		{"", "", now},
		{"", "90s", now.Add(90 * time.Second)},
		{"", "1.5", now.Add(1500 * time.Millisecond)},
		{"", "0", now},
		{"2030-01-02T03:04:05+01:00", "", time.Date(2030, 1, 2, 2, 4, 5, 0, time.UTC)},
		{"2030-01-02T03:04:05.25Z", "", time.Date(2030, 1, 2, 3, 4, 5, 250e6, time.UTC)},
		{"2020-01-01T00:00:00Z", "", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}, // the past: due at once
	} {
		got, err := parseWhen(tc.at, tc.in, now)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("parseWhen(%q, %q) = %v, %v; want %v in UTC", tc.at, tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ at, in, says string }{
		{"2030-01-02T03:04:05Z", "1h", "cannot be combined"},
		{"2030-01-02", "", "RFC 3339"},
		{"2030-01-02T03:04:05", "", "RFC 3339"},
		{"tomorrow", "", "RFC 3339"},
		{"", "-5m", "≥ 0"},
		{"", "soon", "duration"},
	} {
		if _, err := parseWhen(tc.at, tc.in, now); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("parseWhen(%q, %q): %v; want an error saying %q", tc.at, tc.in, err, tc.says)
		}
	}
}

func FuzzParseWhen(f *testing.F) {
	f.Add("2030-01-02T03:04:05+01:00", "")
	f.Add("", "5m")
	f.Add("", "0.5")
	f.Add("x", "y")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, at, in string) {
		got, err := parseWhen(at, in, now)
		if err != nil {
			if at == "" && in == "" {
				t.Fatalf("parseWhen refuses neither flag: %v", err)
			}
			return
		}
		if at != "" && in != "" {
			t.Fatalf("parseWhen(%q, %q) accepted both", at, in)
		}
		if got.Location() != time.UTC {
			t.Fatalf("parseWhen(%q, %q) = %v, not in UTC", at, in, got)
		}
		if in != "" && got.Before(now) {
			t.Fatalf("parseWhen(\"\", %q) = %v, before now", in, got)
		}
		if at != "" {
			back, err := parseWhen(got.Format(time.RFC3339Nano), "", now)
			if err != nil || !back.Equal(got) {
				t.Fatalf("parseWhen(%q) = %v, which does not parse back: %v, %v", at, got, back, err)
			}
		}
	})
}

// letterState classifies as the stores count: over random letters, claims
// and instants, the states of Memory's letters tally to its Count.
func TestLetterStateMatchesCount(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		m, _ := deadletter.NewMemory(0)
		for i := range 40 {
			l := deadletter.Letter{ID: fmt.Sprintf("%02d-%03d", round, i), Queue: "q", Created: t0,
				Due: t0.Add(time.Duration(rng.IntN(20)) * time.Minute), Parked: rng.IntN(5) == 0}
			if err := m.Put(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		// Claims at several instants, with leases that end before or after
		// the instant counted.
		for k := range 4 {
			at := t0.Add(time.Duration(5*k) * time.Minute)
			if _, err := m.Claim(ctx, "q", at, 1+rng.IntN(4), time.Duration(1+rng.IntN(12))*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		for _, now := range []time.Time{t0, t0.Add(7 * time.Minute), t0.Add(12 * time.Minute), t0.Add(30 * time.Minute)} {
			want, _ := m.Count(ctx, "", now)
			ls, _ := m.List(ctx, "", "", 1000)
			var got deadletter.Counts
			for i := range ls {
				switch letterState(&ls[i], now) {
				case "waiting":
					got.Waiting++
				case "due":
					got.Due++
				case "held":
					got.Held++
				case "parked":
					got.Parked++
				}
			}
			if got != want {
				t.Fatalf("round %d at %v: states tally %+v, Count %+v", round, now, got, want)
			}
		}
	}
}

func TestOneLineAndSafeText(t *testing.T) {
	in := "503\r\nbody\t\x1b[31mred\x1b[0m \u202egnp.exe\u0085 ok é"
	if got, want := oneLine(in), "503  body \\x1b[31mred\\x1b[0m \\u202egnp.exe\\u0085 ok é"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
	if got, want := safeText(in), "503\\r\nbody\t\\x1b[31mred\\x1b[0m \\u202egnp.exe\\u0085 ok é"; got != want {
		t.Errorf("safeText = %q, want %q", got, want)
	}
	if got := oneLine("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("oneLine of invalid UTF-8 = %q", got)
	}
}

func FuzzTerminalText(f *testing.F) {
	for _, s := range []string{"plain", "a\nb\tc\r", "\x1b]0;title\x07", "\u202e\u2066x\u2069", "\xff\xfe", "é…"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		one := oneLine(s)
		if !utf8.ValidString(one) || strings.ContainsFunc(one, hidden) {
			t.Fatalf("oneLine(%q) = %q keeps hidden characters", s, one)
		}
		if utf8.ValidString(s) {
			st := safeText(s)
			if strings.ContainsFunc(st, func(r rune) bool { return hidden(r) && r != '\n' && r != '\t' }) {
				t.Fatalf("safeText(%q) = %q keeps hidden characters", s, st)
			}
			if !strings.ContainsFunc(s, hidden) && st != s {
				t.Fatalf("safeText changed plain text %q to %q", s, st)
			}
		}
		n = 1 + abs(n)%50
		c := cutRunes(one, n)
		if k := utf8.RuneCountInString(c); k > n || !strings.HasPrefix(one, strings.TrimSuffix(c, "…")) || (k < utf8.RuneCountInString(one) && !strings.HasSuffix(c, "…")) {
			t.Fatalf("cutRunes(%q, %d) = %q", one, n, c)
		}
		if c == one && utf8.RuneCountInString(one) > n {
			t.Fatalf("cutRunes(%q, %d) did not cut", one, n)
		}
		for _, w := range []string{one, s} {
			q := shellQuote(w)
			if unquote(t, q) != w {
				t.Fatalf("shellQuote(%q) = %s, which a shell reads as %q", w, q, unquote(t, q))
			}
			if !utf8.ValidString(q) || strings.ContainsFunc(q, hidden) {
				t.Fatalf("shellQuote(%q) = %q, not for a terminal", w, q)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

// unquote reads a word as a POSIX shell does, for the words shellQuote
// makes: plain characters, '...', \' and $'...' with the escapes \\, \',
// \t, \n, \r and \xHH.
func unquote(t *testing.T, w string) string {
	var b strings.Builder
	for i := 0; i < len(w); {
		switch {
		case strings.HasPrefix(w[i:], "$'"):
			i += 2
			for ; i < len(w) && w[i] != '\''; i++ {
				if w[i] != '\\' {
					b.WriteByte(w[i])
					continue
				}
				if i+1 >= len(w) {
					t.Fatalf("%s: a backslash at the end", w)
				}
				i++
				switch w[i] {
				case '\\', '\'':
					b.WriteByte(w[i])
				case 't':
					b.WriteByte('\t')
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 'x':
					if i+2 >= len(w) {
						t.Fatalf("%s: a short \\x", w)
					}
					n, err := strconv.ParseUint(w[i+1:i+3], 16, 8)
					if err != nil {
						t.Fatalf("%s: %v", w, err)
					}
					b.WriteByte(byte(n))
					i += 2
				default:
					t.Fatalf("%s: the escape \\%c, which shellQuote does not make", w, w[i])
				}
			}
			if i >= len(w) {
				t.Fatalf("%s: unterminated $'", w)
			}
			i++
		case w[i] == '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				t.Fatalf("%s: unterminated quote", w)
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 2
		case w[i] == '\\' && i+1 < len(w):
			b.WriteByte(w[i+1])
			i += 2
		case strings.IndexByte(" \t\n\"$`\\|&;<>()*?[#~", w[i]) >= 0:
			t.Fatalf("%s: unquoted shell character %q", w, w[i])
		default:
			b.WriteByte(w[i])
			i++
		}
	}
	return b.String()
}

func TestRelative(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "now", 400 * time.Millisecond: "now", 10 * time.Second: "in 10s", 90 * time.Second: "in 1m30s",
		-5 * time.Minute: "5m ago", 2 * time.Hour: "in 2h", 2*time.Hour + 5*time.Minute: "in 2h5m", -50 * time.Hour: "50h ago",
		time.Hour + 7*time.Second: "in 1h0m7s",
	} {
		if got := relative(now.Add(d), now); got != want {
			t.Errorf("relative(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestPrintTableFitsWidth(t *testing.T) {
	rows := [][]string{
		{"0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a", "payments", "parked", "2026-01-01T00:00:00Z", "5", "8", "redrives exhausted", strings.Repeat("é", 300)},
		{"b", "q", "due", "2026-01-01T00:00:00Z", "0", "1", "failed", "short"},
	}
	var out bytes.Buffer
	printTable(&out, rows, 160)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  ") || !strings.HasSuffix(lines[2], "short") {
		t.Fatalf("table:\n%s", out.String())
	}
	if n := utf8.RuneCountInString(lines[1]); n != 160 || !strings.HasSuffix(lines[1], "é…") {
		t.Errorf("the long row has %d runes, want 160 ending in …:\n%s", n, lines[1])
	}
	// Columns line up.
	col := strings.Index(lines[0], "STATE")
	if utf8.RuneCountInString(lines[1][:strings.Index(lines[1], "parked")]) != col || strings.Index(lines[2], "due") != col {
		t.Errorf("STATE is not one column:\n%s", out.String())
	}
	// A narrow terminal still shows 24 runes of the error.
	out.Reset()
	printTable(&out, rows[:1], 40)
	if !strings.HasSuffix(strings.Split(out.String(), "\n")[1], strings.Repeat("é", 23)+"…") {
		t.Errorf("narrow table:\n%s", out.String())
	}
}

// Each deadletter subcommand's --help has examples that run it.
func TestDeadLetterHelpHasExamples(t *testing.T) {
	for _, sub := range NewCommand().Commands() {
		path := "yaoki deadletter " + sub.Name()
		var out bytes.Buffer
		r := NewCommand()
		r.SetOut(&out)
		r.SetErr(&out)
		r.SetArgs([]string{sub.Name(), "--help"})
		if err := r.Execute(); err != nil {
			t.Fatalf("%s --help: %v", path, err)
		}
		help := out.String()
		_, examples, ok := strings.Cut(help, "Examples:\n")
		if !ok || !strings.Contains(examples, path) {
			t.Errorf("%s --help: no example runs %s:\n%s", path, path, help)
		}
		if !strings.Contains(help, "Exit codes:") || !strings.Contains(help, "--postgres") {
			t.Errorf("%s --help does not give the exit codes and --postgres:\n%s", path, help)
		}
	}
}
