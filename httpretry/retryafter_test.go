package httpretry_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/httpretry"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	in2070 := time.Date(2070, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"000000000000000000000000000000", 0, true},
		// However long, a well-formed wait is returned (the Transport gives
		// up past MaxRetryAfter); past what a Duration holds, as the longest.
		{"31536000", 365 * 24 * time.Hour, true},
		{"31536001", 365*24*time.Hour + time.Second, true},
		{"40000000", 40000000 * time.Second, true},
		{"9223372036", 9223372036 * time.Second, true}, // the most whole seconds a Duration holds
		{"9223372037", math.MaxInt64, true},
		{"999999999999999999", math.MaxInt64, true},
		{"99999999999999999999999999", math.MaxInt64, true},
		{"00000000000000000000000000099999999999999999999", math.MaxInt64, true},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"soon", 0, false},
		{"5 s", 0, false},
		// The three HTTP-date forms of RFC 9110 §5.6.7.
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},               // IMF-fixdate
		{"Sunday, 01-Mar-26 12:00:30 GMT", 30 * time.Second, true},              // RFC 850
		{"Sun Mar  1 12:00:30 2026", 30 * time.Second, true},                    // asctime
		{"Thursday, 01-Jan-70 00:00:00 GMT", in2070, true},                      // RFC 850 two-digit year: 2070, not 1970
		{"Saturday, 01-Jan-77 00:00:00 GMT", 0, true},                           // 2077 is 51 years ahead: 1977, the past
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},                              // past: now
		{"Mon, 01 Mar 2027 12:00:01 GMT", 365*24*time.Hour + time.Second, true}, // more than a year ahead
		{"Fri, 31 Dec 9999 23:59:59 GMT", math.MaxInt64, true},                  // beyond a Duration
		{"Sun, 01 Mar 2026 12:00:30 PST", 0, false},                             // not GMT
		{"Sun, 32 Mar 2026 12:00:30 GMT", 0, false},                             // no such day
		{"2026-03-01T12:00:30Z", 0, false},                                      // RFC 3339 is not an HTTP-date
	}
	for _, c := range cases {
		got, ok := httpretry.ParseRetryAfter(c.v, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestRateLimitReset(t *testing.T) {
	epoch := now.Unix()
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"none", http.Header{}, 0, false},
		{"draft list", http.Header{"Ratelimit": {`"default";r=0;t=30`}}, 30 * time.Second, true},
		{"draft token name", http.Header{"Ratelimit": {`default;r=0;t=12`}}, 12 * time.Second, true},
		{"draft no r", http.Header{"Ratelimit": {`"burst";t=5`}}, 5 * time.Second, true},
		{"draft quota left", http.Header{"Ratelimit": {`"default";r=10;t=30`}}, 0, false},
		{"draft two policies", http.Header{"Ratelimit": {`"burst";r=0;t=2, "daily";r=0;t=3600`}}, time.Hour, true},
		{"draft one exhausted", http.Header{"Ratelimit": {`"burst";r=5;t=2`, `"daily";r=0;t=60`}}, time.Minute, true},
		{"draft other params", http.Header{"Ratelimit": {`"d";pk=:YWJj:;r=0;t=9;x="y";z=?1;w=1.5`}}, 9 * time.Second, true},
		{"draft malformed", http.Header{"Ratelimit": {`"default;r=0;t=30`}}, 0, false},
		{"draft trailing comma", http.Header{"Ratelimit": {`"d";r=0;t=7, `}}, 0, false},
		{"draft empty line", http.Header{"Ratelimit": {`"d";r=0;t=7`, ``}}, 0, false},
		{"draft negative t", http.Header{"Ratelimit": {`"d";r=0;t=-3`}}, 0, false},
		{"draft t over a year", http.Header{"Ratelimit": {`"d";r=0;t=40000000`}}, 40000000 * time.Second, true},
		{"draft t beyond a Duration", http.Header{"Ratelimit": {`"d";r=0;t=999999999999999`}}, math.MaxInt64, true},
		{"draft t over 15 digits", http.Header{"Ratelimit": {`"d";r=0;t=9999999999999999`}}, 0, false}, // not an sf-integer
		{"draft 07 reset beyond a Duration", http.Header{"Ratelimit": {`limit=1, remaining=0, reset=999999999999999`}}, math.MaxInt64, true},
		{"draft 07 dictionary", http.Header{"Ratelimit": {`limit=100, remaining=0, reset=45`}}, 45 * time.Second, true},
		{"draft 07 quota left", http.Header{"Ratelimit": {`limit=100, remaining=3, reset=45`}}, 0, false},
		{"RateLimit-Reset", http.Header{"Ratelimit-Reset": {"20"}}, 20 * time.Second, true},
		{"RateLimit-Reset quota left", http.Header{"Ratelimit-Reset": {"20"}, "Ratelimit-Remaining": {"4"}}, 0, false},
		{"RateLimit-Reset quota 0", http.Header{"Ratelimit-Reset": {"20"}, "Ratelimit-Remaining": {"0"}}, 20 * time.Second, true},
		{"X- seconds", http.Header{"X-Ratelimit-Reset": {"15"}}, 15 * time.Second, true},
		{"X- fraction", http.Header{"X-Ratelimit-Reset": {"1.25"}}, 1250 * time.Millisecond, true},
		{"X- Unix seconds", http.Header{"X-Ratelimit-Reset": {itoa64(epoch + 40)}}, 40 * time.Second, true},
		{"X- Unix seconds, fraction", http.Header{"X-Ratelimit-Reset": {itoa64(epoch+2) + ".5"}}, 2500 * time.Millisecond, true},
		{"X- Unix milliseconds", http.Header{"X-Ratelimit-Reset": {itoa64(epoch*1000 + 1500)}}, 1500 * time.Millisecond, true},
		{"X- Unix past", http.Header{"X-Ratelimit-Reset": {itoa64(epoch - 100)}}, 0, true},
		{"X- quota left", http.Header{"X-Ratelimit-Reset": {"15"}, "X-Ratelimit-Remaining": {"99"}}, 0, false},
		{"X- negative", http.Header{"X-Ratelimit-Reset": {"-15"}}, 0, false},
		{"X- seconds, years", http.Header{"X-Ratelimit-Reset": {"400000000"}}, 400000000 * time.Second, true},
		{"X- Unix milliseconds, far ahead", http.Header{"X-Ratelimit-Reset": {"9999999999999999"}}, time.UnixMilli(9999999999999999).Sub(now), true},
		{"X- beyond a Duration", http.Header{"X-Ratelimit-Reset": {"99999999999999999"}}, math.MaxInt64, true},
		{"X- beyond an int64", http.Header{"X-Ratelimit-Reset": {"99999999999999999999999.5"}}, math.MaxInt64, true},
		{"RateLimit-Reset beyond an int64", http.Header{"Ratelimit-Reset": {"99999999999999999999999"}}, math.MaxInt64, true},
		{"X- malformed", http.Header{"X-Ratelimit-Reset": {"soon"}}, 0, false},
		{"draft wins", http.Header{"Ratelimit": {`"d";r=0;t=3`}, "X-Ratelimit-Reset": {"50"}}, 3 * time.Second, true},
	}
	for _, c := range cases {
		got, ok := httpretry.RateLimitReset(c.h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: RateLimitReset(%v) = %v, %v; want %v, %v", c.name, c.h, got, ok, c.want, c.ok)
		}
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// isSeconds reports whether v is delta-seconds: digits only.
func isSeconds(v string) bool {
	return v != "" && strings.Trim(v, "0123456789") == ""
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "1.5", "Sun, 01 Mar 2026 12:00:30 GMT",
		"Sunday, 01-Mar-26 12:00:30 GMT", "Sunday, 01-Mar-26 12:00:30 PST", "Thursday, 01-Jan-70 00:00:00 GMT", "Sun Mar  1 12:00:30 2026", "99999999999999999999", " 7 ", "",
		"00000000000000000000000120", "+120", "-0", "120, 30", "120 (soon)", "Sun, 01 Mar 2026 12:00:10.5 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Sun, 01 Mar 2026 24:00:10 GMT", "Sun Mar 1 12:00:10 2026 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := httpretry.ParseRetryAfter(v, now)
		if isSeconds(strings.TrimSpace(v)) {
			// Delta-seconds are well-formed however many digits they
			// have, and a longer delay is never a shorter wait.
			if !ok {
				t.Fatalf("ParseRetryAfter(%q) = %v, false; want delta-seconds accepted, however long", v, d)
			}
			if d2, ok2 := httpretry.ParseRetryAfter(strings.TrimSpace(v)+"0", now); !ok2 || d2 < d || d2 == d && d != 0 && d != math.MaxInt64 {
				t.Fatalf("ParseRetryAfter(%q) = %v, but ten times as many seconds: %v, %v", v, d, d2, ok2)
			}
		}
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when not ok", v, d)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, true: a negative wait", v, d)
		}
		// A date is in GMT: an IMF-fixdate or RFC 850 date says so, an
		// asctime date (no zone) is read as GMT. No other zone is read,
		// so that the answer does not depend on the machine's zone.
		if v := strings.TrimSpace(v); !isSeconds(v) && !strings.HasSuffix(v, " GMT") {
			if _, err := time.Parse(time.ANSIC, v); err != nil {
				t.Fatalf("ParseRetryAfter(%q) = %v, true: a date neither in GMT nor in asctime form", v, d)
			}
		}
		// A delta in whole seconds reads back the same.
		if d2, ok2 := httpretry.ParseRetryAfter(itoa64(int64(d/time.Second)), now); !ok2 || d2 != d.Truncate(time.Second) {
			t.Fatalf("%v written as seconds reads back as %v, %v", d, d2, ok2)
		}
	})
}

func FuzzRateLimitReset(f *testing.F) {
	for _, s := range [][3]string{
		{`"default";r=0;t=30`, "", ""},
		{`"a";r=0;t=1, "b";r=0;t=2`, "", ""},
		{`limit=1, remaining=0, reset=3`, "", ""},
		{"", "20", "0"},
		{"", "", "1700000000.5"},
		{`x;y=?1;z=:AA==:;w="\""`, "9", "9"},
		{`0;t=0,`, "", ""}, // a trailing comma: malformed, as it is with a second line after it
		{`"d";r=0;t=30;t=5`, "", ""}, {`"d" ;r=0;t=30`, "", ""}, {`"d";r=?0;t=30`, "", ""},
		{`"d";r=0;t=30.5`, "", ""}, {`"d";r=0;t=9999999999999999`, "", ""}, {"", "030", "1772366410000"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, draft, reset, xreset string) {
		h := http.Header{}
		if draft != "" {
			h.Set("RateLimit", draft)
		}
		if reset != "" {
			h.Set("RateLimit-Reset", reset)
		}
		if xreset != "" {
			h.Set("X-RateLimit-Reset", xreset)
		}
		d, ok := httpretry.RateLimitReset(h, now)
		if !ok && d != 0 || ok && d < 0 {
			t.Fatalf("RateLimitReset(%v) = %v, %v", h, d, ok)
		}
		// A reset that is digits is well-formed however many it has.
		if draft == "" && reset == "" && isSeconds(strings.TrimSpace(xreset)) && !ok {
			t.Fatalf("X-RateLimit-Reset %q: %v, false; want it read, however large", xreset, d)
		}
		if draft == "" {
			return
		}
		// A policy that still has quota left says nothing about when to
		// come back: adding one, in a field line of its own or in the
		// same line, changes nothing.
		for _, more := range []http.Header{
			{"Ratelimit": {draft, `"zz";r=5;t=7`}},
			{"Ratelimit": {draft + `, "zz";r=5;t=99999`}},
		} {
			if d2, ok2 := httpretry.RateLimitReset(more, now); ok && (d2 != d || !ok2) {
				t.Fatalf("RateLimit %q: %v, %v; with a policy that has quota left, %v: %v, %v", draft, d, ok, more, d2, ok2)
			}
		}
	})
}

// TestRFC850ZoneOtherThanGMT: an HTTP-date is always in GMT (RFC 9110
// §5.6.7); an RFC 850 date that names another zone is malformed, as an
// IMF-fixdate that does is. Go's parser read the zone by the process's
// own time zone: "12:00:30 PST" was 30 s away on a machine in UTC, 8 h
// on one in Los Angeles (and given up at once as over MaxRetryAfter),
// and "CET" was in the past on one in Paris. A malformed Retry-After is
// ignored, whatever machine reads it, and so is a malformed Date: the
// hint is then read against the client's clock.
func TestRFC850ZoneOtherThanGMT(t *testing.T) {
	for _, zone := range []string{"PST", "EST", "CET", "UTC", "GMT+1", "GMT-10", "gmt"} {
		v := "Sunday, 01-Mar-26 12:00:30 " + zone
		if d, ok := httpretry.ParseRetryAfter(v, now); ok {
			t.Errorf("ParseRetryAfter(%q) = %v, true; want false (an HTTP-date is in GMT)", v, d)
		}
	}
	if d, ok := httpretry.ParseRetryAfter("Sunday, 01-Mar-26 12:00:30 GMT", now); !ok || d != 30*time.Second {
		t.Errorf("the GMT form: %v, %v; want 30s", d, ok)
	}
}
