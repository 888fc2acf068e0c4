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
