package idempotency

import "testing"

// TestAccepts: Accept-Encoding as RFC 9110 §12.5.3 reads it: a coding
// named with a weight above 0, or "*" when it is not named; names in any
// case, x-gzip for gzip, whitespace around names and parameters; no field
// accepts none (see accepts).
func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		ae     []string
		coding string
		want   bool
	}{
		{nil, "gzip", false},
		{[]string{""}, "gzip", false},
		{[]string{"gzip"}, "gzip", true},
		{[]string{"GZip"}, "gzip", true},
		{[]string{"x-gzip"}, "gzip", true},
		{[]string{"deflate, gzip;q=0"}, "gzip", false},
		{[]string{"deflate, gzip;q=0"}, "deflate", true},
		{[]string{" gzip ; q = 0.5 "}, "gzip", true},
		{[]string{"gzip;q=0.000"}, "gzip", false},
		{[]string{"gzip;q=bad"}, "gzip", false},
		{[]string{"gzip;level=1;q=0"}, "gzip", false},
		{[]string{"*"}, "gzip", true},
		{[]string{"*;q=0"}, "gzip", false},
		{[]string{"*;q=0", "gzip"}, "gzip", true}, // two fields, as one list
		{[]string{"gzip;q=0, *"}, "gzip", false},
		{[]string{"identity"}, "gzip", false},
		{[]string{"br, zstd"}, "gzip", false},
		{[]string{"gzipper"}, "gzip", false},
	} {
		if got := accepts(tc.ae, tc.coding); got != tc.want {
			t.Errorf("accepts(%q, %s) = %v, want %v", tc.ae, tc.coding, got, tc.want)
		}
	}
}

func FuzzAccepts(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0.5, *;q=0", "x-gzip;q=", ";;,,", "*;q=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := accepts([]string{s}, "gzip")
		if b := accepts([]string{s + ","}, "gzip"); a != b {
			t.Errorf("accepts(%q) = %v, with an empty element after it %v", s, a, b)
		}
	})
}
