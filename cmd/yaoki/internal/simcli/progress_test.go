package simcli

import (
	"strings"
	"testing"
	"time"
)

// A long sweep with its bar off writes a line after 5 s and then every
// 10 s, and its last count; a short one writes nothing.
func TestQuietProgress(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var clock time.Time
	now := func() time.Time { return clock }
	var b strings.Builder
	p := quietProgress(&b, "herd", now)
	for i, at := range []time.Duration{0, time.Second, 6 * time.Second, 7 * time.Second, 16 * time.Second, 17 * time.Second, 18 * time.Second} {
		clock = t0.Add(at)
		p(i+1, 7)
	}
	want := "herd: 3/7 after 6 s\nherd: 5/7 after 16 s\nherd: 7/7 after 18 s\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	p = quietProgress(&b, "outage", now)
	for i := range 3 {
		clock = t0.Add(time.Duration(i) * time.Second)
		p(i+1, 3)
	}
	if b.String() != "" {
		t.Errorf("a 2 s sweep wrote %q, want nothing", b.String())
	}
}
