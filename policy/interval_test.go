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

// MaxDelaySeconds below IntervalSeconds caps every wait, the first one
// too, as Step Functions reads it: the cap binds from the first retry on.
// Retry numbers far past 63 (BackoffRate 2 would overflow) stay capped.
func TestMaxDelayBelowInterval(t *testing.T) {
	for _, jitter := range []string{"NONE", "FULL", "EQUAL", "DECORRELATED"} {
		rate := `"BackoffRate": 2, `
		if jitter == "DECORRELATED" {
			rate = ""
		}
		doc := mustParse(t, `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 5, "MaxDelaySeconds": 0.5, "MaxAttempts": 100, `+rate+`"JitterStrategy": "`+jitter+`"}]`)
		errs := make([]error, 100)
		for i := range errs {
			errs[i] = named("E")
		}
		_, waits, err := run(t, doc, errs...)
		if err != nil || len(waits) != 100 {
			t.Fatalf("%s: %d waits, err %v; want 100 and success", jitter, len(waits), err)
		}
		for i, w := range waits {
			lo := time.Duration(0)
			switch jitter {
			case "NONE", "DECORRELATED":
				lo = 500 * time.Millisecond
			case "EQUAL":
				lo = 250 * time.Millisecond
			}
			if w < lo || w > 500*time.Millisecond {
				t.Fatalf("%s: retry %d waits %v, want [%v, 500ms] (MaxDelaySeconds 0.5 below IntervalSeconds 5)", jitter, i+1, w, lo)
			}
		}
	}
}
