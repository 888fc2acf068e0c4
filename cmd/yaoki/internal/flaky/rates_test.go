package flaky

import (
	"math"
	"testing"
	"time"
)

// TestRatesMatchTheirFlags: over 100 000 draws, each fate's share is its
// flag's (within 0.6 points), 429s carry --retry-after and only they do,
// the 5xx answers have --status-5xx, and --rate-slow slows that share of
// every kind of answer, resets included, by --slow.
func TestRatesMatchTheirFlags(t *testing.T) {
	o := &flakyOptions{rate429: 0.2, rate5xx: 0.3, rateReset: 0.1, rateSlow: 0.25, status5xx: 502, retryAfter: "date+3", seed: 7}
	o.slow.D = 300 * time.Millisecond
	r, err := o.makeRates()
	if err != nil {
		t.Fatal(err)
	}
	const n = 100000
	count := map[string]int{}
	slowBy := map[string]int{}
	for range n {
		st := r.draw()
		kind := "200"
		switch {
		case st.reset:
			kind = "reset"
		case st.status == 429:
			kind = "429"
			if st.retryAfter != 3 || !st.dateAfter {
				t.Fatalf("a 429 with Retry-After %d (date %v); want date+3", st.retryAfter, st.dateAfter)
			}
		case st.status == 502:
			kind = "5xx"
		case st.status != 200:
			t.Fatalf("status %d; want 200, 429, 502 or a reset", st.status)
		}
		if kind != "429" && st.retryAfter != -1 {
			t.Fatalf("a %s with Retry-After %d", kind, st.retryAfter)
		}
		count[kind]++
		switch st.slow {
		case 0:
		case 300 * time.Millisecond:
			slowBy[kind]++
		default:
			t.Fatalf("slow %v; want 0 or --slow's 300ms", st.slow)
		}
	}
	for kind, want := range map[string]float64{"reset": 0.1, "429": 0.2, "5xx": 0.3, "200": 0.4} {
		if got := float64(count[kind]) / n; math.Abs(got-want) > 0.006 {
			t.Errorf("%s: share %.4f, want %.2f", kind, got, want)
		}
		if got := float64(slowBy[kind]) / float64(count[kind]); math.Abs(got-0.25) > 0.02 {
			t.Errorf("%s: %.4f of them slow, want 0.25", kind, got)
		}
	}
}
