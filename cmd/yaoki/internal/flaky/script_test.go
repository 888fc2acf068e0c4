package flaky

import (
	"testing"
	"time"
)

func TestParseScript(t *testing.T) {
	got, err := parseScript("503, 429:retry-after=2 ,reset:slow=10ms,429:retry-after=date+3,200,200:slow=1s:cut")
	if err != nil {
		t.Fatal(err)
	}
	want := []step{
		{status: 503, retryAfter: -1},
		{status: 429, retryAfter: 2},
		{reset: true, retryAfter: -1, slow: 10 * time.Millisecond},
		{status: 429, retryAfter: 3, dateAfter: true},
		{status: 200, retryAfter: -1},
		{status: 200, retryAfter: -1, slow: time.Second, cut: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: got %+v, want %+v", i+1, got[i], want[i])
		}
		if back, err := parseStep(got[i].String()); err != nil || back != got[i] {
			t.Errorf("step %d: String %q does not parse back: %+v, %v", i+1, got[i].String(), back, err)
		}
	}
	for _, bad := range []string{"", "99", "100", "101", "199", "600", "abc", "503:retry-after=-1", "503:retry-after=x", "503:slow=soon", "503:color=red", "503,,200", "reset:cut", "200:cut=3", "200:cut:cut"} {
		if _, err := parseScript(bad); err == nil {
			t.Errorf("parseScript(%q) accepted it", bad)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{"503,429:retry-after=2,200", "reset:slow=1s", "429:retry-after=date+1", ",", ":", "200:cut"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := parseScript(s)
		if err != nil {
			return
		}
		for _, st := range steps {
			if !st.reset && (st.status < 100 || st.status > 599) || st.slow < 0 {
				t.Fatalf("%q gave step %+v", s, st)
			}
			if back, err := parseStep(st.String()); err != nil || back != st {
				t.Fatalf("%q: step %+v prints as %q, which parses to %+v, %v", s, st, st.String(), back, err)
			}
		}
	})
}
