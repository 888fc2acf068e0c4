package policy_test

import (
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// A positive number of seconds too small for a nanosecond must not
// become 0, which means "none" or "default" (no cap, no timeout, no
// deadline, 60 s): it is refused.
func TestParseSecondsBelowOneNanosecond(t *testing.T) {
	for _, tc := range []struct{ doc, path string }{
		{`[{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 1e-10}]`, "Retry[0].MaxDelaySeconds"},
		{`{"TimeoutSeconds": 1e-10}`, "TimeoutSeconds"},
		{`{"DeadlineSeconds": 4e-10}`, "DeadlineSeconds"},
		{`{"MaxRetryAfterSeconds": 1e-12}`, "MaxRetryAfterSeconds"},
		{`{"Budget": {"WindowSeconds": 1e-12}}`, "Budget.WindowSeconds"},
		{`{"Breaker": {"OpenSeconds": 1e-12}}`, "Breaker.OpenSeconds"},
	} {
		_, err := policy.ParseFile("p.json", []byte(tc.doc))
		if err == nil {
			t.Errorf("%s: accepted, want an error", tc.doc)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "p.json:1:") || !strings.Contains(msg, tc.path+": ") || !strings.Contains(msg, "nanosecond") {
			t.Errorf("%s: error %q, want the position, %s and the smallest value accepted", tc.doc, msg, tc.path)
		}
	}
	// Half a nanosecond and more rounds to 1 ns: accepted.
	if _, err := policy.Parse([]byte(`[{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 1e-9}]`)); err != nil {
		t.Errorf("MaxDelaySeconds 1e-9 refused: %v", err)
	}
}

// A number written other than 0 but too small for a float64 (1e-400)
// parses as 0: it must be refused as any value below a nanosecond is, not
// read as 0, which means "at once" (IntervalSeconds), "never retry"
// (MaxAttempts) or a default (a breaker open 30 s, a budget's 20 %).
func TestParseNumberUnderflowRefused(t *testing.T) {
	for _, tc := range []struct{ doc, path string }{
		{`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1e-400}]`, "Retry[0].IntervalSeconds"},
		{`[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1e-400}]`, "Retry[0].MaxAttempts"},
		{`[{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 0.0000e-999}]`, ""},
		{`{"Breaker": {"OpenSeconds": 1e-400}}`, "Breaker.OpenSeconds"},
		{`{"Breaker": {"WindowSeconds": 7E-1000}}`, "Breaker.WindowSeconds"},
		{`{"Breaker": {"FailureRatio": 1e-400}}`, "Breaker.FailureRatio"},
		{`{"Budget": {"WindowSeconds": -1e-400}}`, "Budget.WindowSeconds"},
		{`{"Budget": {"Ratio": 0.5e-330}}`, "Budget.Ratio"},
	} {
		_, err := policy.ParseFile("p.json", []byte(tc.doc))
		if tc.path == "" { // 0 written as 0: refused as 0 is, for MaxDelaySeconds
			if err == nil || strings.Contains(err.Error(), "too small") {
				t.Errorf("%s: %v, want the out-of-range error of 0", tc.doc, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want an error", tc.doc)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "p.json:1:") || !strings.Contains(msg, tc.path+": ") || !strings.Contains(msg, "too small") {
			t.Errorf("%s: error %q, want the position, %s and \"too small\"", tc.doc, msg, tc.path)
		}
	}
	// Zero however written is zero.
	for _, z := range []string{"0", "-0", "0.0", "0e-400", "0.000E+5"} {
		if _, err := policy.Parse([]byte(`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": ` + z + `}]`)); err != nil {
			t.Errorf("IntervalSeconds %s refused: %v", z, err)
		}
	}
}
