package enum

import "testing"

type color uint8

const (
	red color = iota + 1
	green
	blue
)

var colorNames = [...]string{red: "red", green: "green", blue: "blue"}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		v       color
		unknown string
		want    string
	}{
		{red, "unknown", "red"},
		{blue, "unknown", "blue"},
		{0, "unknown", "unknown"}, // an empty entry has no name
		{4, "unknown", "unknown"}, // past the table
		{200, "color(%d)", "color(200)"},
		{0, "color_%d", "color_0"},
	} {
		if got := Name(colorNames[:], tc.v, tc.unknown); got != tc.want {
			t.Errorf("Name(%d, %q) = %q, want %q", tc.v, tc.unknown, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		s      string
		fold   bool
		want   color
		wantOK bool
	}{
		{"green", false, green, true},
		{"GREEN", false, 0, false},
		{"GREEN", true, green, true},
		{"Blue", true, blue, true},
		{"", false, 0, false}, // the empty entry at 0 is not a name
		{"purple", true, 0, false},
	} {
		parse := Parse[color]
		if tc.fold {
			parse = ParseFold[color]
		}
		if got, ok := parse(colorNames[:], tc.s); got != tc.want || ok != tc.wantOK {
			t.Errorf("parse(%q, fold %v) = %v, %v; want %v, %v", tc.s, tc.fold, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{colorNames[:], "red, green or blue"},
		{[]string{"off", "auto"}, "off or auto"},
		{[]string{"", "only"}, "only"},
		{nil, ""},
	} {
		if got := List(tc.names); got != tc.want {
			t.Errorf("List(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func BenchmarkName(b *testing.B) {
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(Name(colorNames[:], green, "unknown"))
	}
	_ = n
}
