package httpretry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxWait is the longest time.Duration (about 292 years): a server's wait
// longer than that is returned as it, which is still longer than any
// limit a caller can set.
const maxWait = time.Duration(math.MaxInt64)

// ParseRetryAfter parses the value of a Retry-After header (RFC 9110
// §10.2.3) received at now and returns how long the server asks to wait.
//
// It accepts delta-seconds ("120") and the three HTTP-date forms a recipient
// must accept (RFC 9110 §5.6.7: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT",
// the obsolete RFC 850 form "Sunday, 06-Nov-94 08:49:37 GMT" and ANSI C's
// asctime form "Sun Nov  6 08:49:37 1994"), with optional surrounding
// whitespace. An RFC 850 date's two-digit year is read as RFC 9110 says:
// the latest year with those digits that is not more than 50 years after
// now; a date in a zone other than GMT is malformed. A date in the past
// means "now" (0, true). It reports false for an empty, negative or
// malformed value (fractions of a second included: the grammar has none).
//
// A well-formed wait is returned however long it is, so that a caller
// that will not wait that long (the Transport, past Policy.MaxRetryAfter)
// gives up rather than ignore the server: one longer than a time.Duration
// holds (about 292 years: 9223372037 seconds or more, however many
// digits, or a date further ahead) is returned as the longest Duration,
// math.MaxInt64.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return seconds(v)
	}
	t, ok := parseDate(v, now)
	if !ok {
		return 0, false
	}
	return until(t, now)
}

// parseDate parses an HTTP-date (RFC 9110 §5.6.7) received at now, in
// any of its three forms; an RFC 850 date's two-digit year is put in its
// century by rfc850Year. It reports false for anything else, including an
// RFC 850 date in a zone other than GMT: Go's parser accepts any zone
// abbreviation there and reads it by the process's own time zone ("PST"
// is 8 h behind on a machine in Los Angeles, UTC on one in UTC), so the
// same answer would mean different waits on different machines.
func parseDate(v string, now time.Time) (time.Time, bool) {
	// The RFC 850 form is the one whose weekday, before the comma, is
	// written in full ("Sunday,"); an IMF-fixdate's has three letters
	// ("Sun,") and asctime's no comma. Telling them apart so, rather than
	// parsing v again, keeps a Date header free of allocations.
	rfc850 := strings.IndexByte(v, ',') > 3
	if rfc850 && !strings.HasSuffix(v, " GMT") {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	if rfc850 {
		t = rfc850Year(t, now)
	}
	return t, true
}

// rfc850Year puts a date read from the two-digit-year RFC 850 form in the
// century RFC 9110 §5.6.7 says: a timestamp that appears to be more than 50
// years in the future is in the most recent past year with the same last
// two digits. So the year is the latest one with those two digits that is
// at most 50 years after now. (Go's time.Parse puts 69-99 in the 1900s
// and 00-68 in the 2000s whatever the date, which is the rule of POSIX
// strptime, not HTTP's.)
func rfc850Year(t, now time.Time) time.Time {
	limit := now.AddDate(50, 0, 0)
	yy := t.Year() % 100
	year := limit.Year() - (limit.Year()%100+100-yy)%100 // ≤ limit's year, same last two digits
	c := time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	if c.After(limit) {
		c = c.AddDate(-100, 0, 0)
	}
	return c
}

// seconds parses delta-seconds that are all digits; a wait too long for
// a Duration is maxWait.
func seconds(v string) (time.Duration, bool) {
	// Leading zeros are allowed by the grammar; strip them so that a long
	// run of them is not mistaken for a long wait.
	v = strings.TrimLeft(v, "0")
	if v == "" {
		return 0, true
	}
	if len(v) > 18 { // ≥ 10¹⁸ s, far beyond maxWait (and an int64)
		return maxWait, true
	}
	n, _ := strconv.ParseInt(v, 10, 64) // digits only, at most 18: no error
	return secs(n), true
}

// secs returns n seconds (n ≥ 0), or maxWait if a Duration cannot hold
// them.
func secs(n int64) time.Duration {
	if n > int64(maxWait/time.Second) {
		return maxWait
	}
	return time.Duration(n) * time.Second
}

// until returns t − now: 0 for a t in the past, maxWait for one further
// ahead than a Duration holds.
func until(t, now time.Time) (time.Duration, bool) {
	if !t.After(now) {
		return 0, true
	}
	return t.Sub(now), true // Sub saturates at maxWait
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
