package flags

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// errNames fails t unless err's message quotes the input and says what is
// accepted.
func errNames(t *testing.T, err error, quoted string) {
	t.Helper()
	if msg := err.Error(); !strings.Contains(msg, strconv.Quote(quoted)) || !strings.Contains(msg, "want ") {
		t.Fatalf("error %q: want the input %q quoted and what is accepted", msg, quoted)
	}
}

func FuzzParseSeconds(f *testing.F) {
	for _, s := range []string{"0", "1.5", " 2 ", "250ms", "1h2m3.5s", "1e3", "0x1p-2", "-0", "-1", "-1s", "NaN", "+Inf", "1e400",
		"9223372036", "9223372036.854775807", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "", "soon"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseSeconds(s)
		if err != nil {
			errNames(t, err, strings.TrimSpace(s))
			return
		}
		if d < 0 {
			t.Fatalf("%q gave %v, want ≥ 0", s, d)
		}
		if back, err := ParseSeconds(d.String()); err != nil || back != d {
			t.Fatalf("%q gave %v, which parses back to %v, %v", s, d, back, err)
		}
	})
}

// Waits are written the same way whatever their size; the loop's 1 ns "at
// once" (a cap of 0) reads as 0, as a wait of 0 does: yaoki exec --base 0
// wrote "retrying in 0.000s" and then "retrying in 0s".
func TestSecondsText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0.000s",
		time.Nanosecond:         "0.000s",
		499 * time.Nanosecond:   "0.000s",
		500 * time.Nanosecond:   "0.000001s",
		412 * time.Microsecond:  "0.000412s",
		time.Millisecond:        "0.001s",
		1204 * time.Millisecond: "1.204s",
		90 * time.Second:        "90.000s",
	} {
		if got := SecondsText(d); got != want {
			t.Errorf("SecondsText(%v) = %q, want %q", d, got, want)
		}
	}
}
