// Package metrictest compares the metric series that tests read (from an
// OpenTelemetry reader or a Prometheus scrape) with the series they want.
// A series is keyed by its attributes, "k=v" pairs sorted and joined by
// commas (Key), alone or after the metric's name in braces:
// "name{k=v,k2=v2}".
package metrictest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Key sorts the "k=v" pairs kv (in place) and joins them with commas.
func Key(kv []string) string {
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// normal returns k with its attributes sorted: those in its braces, or the
// whole of k when it has none.
func normal(k string) string {
	if name, attrs, ok := strings.Cut(k, "{"); ok {
		return name + "{" + Key(strings.Split(strings.TrimSuffix(attrs, "}"), ",")) + "}"
	}
	return Key(strings.Split(k, ","))
}

// Expect checks that got holds exactly the series of want, with their
// values; want's keys may list their attributes in any order. what names
// the metrics in the failure message.
func Expect(t testing.TB, what string, got, want map[string]float64) {
	t.Helper()
	norm := make(map[string]float64, len(want))
	for k, v := range want {
		norm[normal(k)] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(norm) {
		t.Errorf("%s:\n got  %v\n want %v", what, Lines(got), Lines(norm))
	}
}

// Lines writes m one series a line, in order, each line starting with a
// newline: for failure messages.
func Lines(m map[string]float64) string {
	l := make([]string, 0, len(m))
	for k, v := range m {
		l = append(l, fmt.Sprintf("\n   %s %v", k, v))
	}
	sort.Strings(l)
	return strings.Join(l, "")
}
