package httpretry

import (
	"net/http"
	"testing"
	"time"
)

// The RFC 850 form's two-digit year, as RFC 9110 §5.6.7 reads it: the
// latest year with those digits at most 50 years ahead of now.
func TestRFC850Year(t *testing.T) {
	at := func(y int) time.Time { return time.Date(y, 6, 1, 12, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		now    int
		parsed int // the year time.Parse gave (its 69/70 pivot)
		want   int
	}{
		{2026, 2026, 2026},
		{2026, 1970, 2070}, // 44 years ahead: believed ahead (Go says 1970)
		{2026, 1976, 2076}, // 50 years ahead, to the day: still ahead
		{2026, 1977, 1977}, // 51 years ahead: the past
		{2026, 2068, 2068},
		{2026, 1999, 1999},
		{2099, 2000, 2100}, // a year ahead, not 99 years back
		{2099, 2049, 2149},
		{2099, 2050, 2050}, // 2150 would be 51 years ahead
		{1990, 2010, 2010},
		{1990, 2041, 1941},
	} {
		got := rfc850Year(at(c.parsed), at(c.now))
		if got.Year() != c.want {
			t.Errorf("now %d, two digits %02d: year %d, want %d", c.now, c.parsed%100, got.Year(), c.want)
		}
	}
}

func FuzzRFC850Year(f *testing.F) {
	f.Add(int64(1772366400), uint8(70), int64(0))
	f.Add(int64(4102444800), uint8(0), int64(86399))
	f.Fuzz(func(t *testing.T, nowSec int64, yy uint8, secOfYear int64) {
		now := time.Unix(nowSec%(1<<35), 0).UTC()
		if now.Year() < 100 {
			return
		}
		parsed := time.Date(1969+int(yy%100), 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(secOfYear%(364*86400)) * time.Second)
		got := rfc850Year(parsed, now)
		limit := now.AddDate(50, 0, 0)
		if got.Year()%100 != parsed.Year()%100 || got.After(limit) || !got.AddDate(100, 0, 0).After(limit) {
			t.Fatalf("now %v, parsed %v: got %v; want the latest year ending in %02d not after %v", now, parsed, got, parsed.Year()%100, limit)
		}
	})
}

// TestHintAllocations: reading a retried answer's hint, with its Date
// header, allocates nothing (docs/http-client.md counts the allocations
// of a GET answered 503 then 200): telling the RFC 850 form from the
// others by parsing the Date a second time allocated a parse error for
// every IMF-fixdate.
func TestHintAllocations(t *testing.T) {
	resp := &http.Response{StatusCode: 503, Header: http.Header{
		"Date":        {"Sun, 01 Mar 2026 12:00:00 GMT"},
		"Retry-After": {"Sun, 01 Mar 2026 12:00:30 GMT"},
	}}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if d := hint(resp, now); d != 30*time.Second {
		t.Fatalf("hint = %v, want 30s", d)
	}
	if n := testing.AllocsPerRun(100, func() { hint(resp, now) }); n != 0 {
		t.Errorf("hint allocates %v times per answer, want 0", n)
	}
	plain := &http.Response{StatusCode: 500, Header: http.Header{"Date": {"Sun, 01 Mar 2026 12:00:00 GMT"}}}
	if n := testing.AllocsPerRun(100, func() { hint(plain, now) }); n != 0 || hint(plain, now) != -1 {
		t.Errorf("hint of a 500 without hint fields: %v, %v allocations; want -1 and none", hint(plain, now), n)
	}
}
