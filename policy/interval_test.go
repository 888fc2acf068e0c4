package policy_test

import (
	"testing"
	"time"
)

// IntervalSeconds 0 retries at once: Interval·BackoffRate^(n−1) is 0 for
// every retry, whatever the rate and the jitter.
func TestIntervalZeroRetriesAtOnce(t *testing.T) {
	for _, jitter := range []string{"NONE", "FULL", "EQUAL", "DECORRELATED"} {
		rate := `"BackoffRate": 2, `
		if jitter == "DECORRELATED" { // which takes no BackoffRate
			rate = ""
		}
		doc := mustParse(t, `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 0, "MaxAttempts": 70, `+rate+`"JitterStrategy": "`+jitter+`"}]`)
		errs := make([]error, 70)
		for i := range errs {
			errs[i] = named("E")
		}
		calls, waits, err := run(t, doc, errs...)
		if err != nil || calls != 71 {
			t.Fatalf("%s: %d calls, err %v; want success on the 71st", jitter, calls, err)
		}
		for i, w := range waits {
			if w > time.Nanosecond {
				t.Fatalf("%s: retry %d waits %v, want at once (IntervalSeconds 0)", jitter, i+1, w)
			}
		}
	}
}
