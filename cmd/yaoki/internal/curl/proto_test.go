package curl

import "testing"

func TestParseProto(t *testing.T) {
	all := protoSet{true, true}
	for _, tc := range []struct {
		v    string
		want protoSet
	}{
		{"=https", protoSet{https: true}},
		{"-http", protoSet{https: true}},
		{"=http,https", all},
		{"all,-https", protoSet{http: true}},
		{"+https", all},
		{"https", all},
		{"=bogus", protoSet{}},
		{"=ftp,https", protoSet{https: true}},
		{"-all,+http", protoSet{http: true}},
		{"=HTTPS", protoSet{https: true}},
		{"", all},
	} {
		if got := parseProto(tc.v, all); got != tc.want {
			t.Errorf("parseProto(%q) = %+v, want %+v", tc.v, got, tc.want)
		}
	}
}
