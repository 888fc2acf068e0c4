package execcli

import (
	"testing"
)

func TestParseCodes(t *testing.T) {
	got, err := parseCodes("1, 75,100-102")
	if err != nil || len(got) != 5 || !got[1] || !got[75] || !got[101] || got[2] {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "256", "5-3", "-1", "1,,2"} {
		if _, err := parseCodes(bad); err == nil {
			t.Errorf("parseCodes(%q) accepted it", bad)
		}
	}
}

func FuzzParseCodes(f *testing.F) {
	f.Add("1,75,100-110")
	f.Add("0-255")
	f.Fuzz(func(t *testing.T, s string) {
		codes, err := parseCodes(s)
		if err != nil {
			return
		}
		for c := range codes {
			if c < 0 || c > 255 {
				t.Fatalf("%q gave code %d", s, c)
			}
		}
	})
}
