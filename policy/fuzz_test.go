package policy_test

import (
	"errors"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// FuzzParse feeds the loader arbitrary bytes: it must never panic, every
// error must be a positioned *policy.Error, and every document it accepts
// must validate and compile to a usable retry policy.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2}]}`,
		`"Retry": [ {"ErrorEquals": [ "States.Timeout" ], "IntervalSeconds": 3, "MaxAttempts": 2, "BackoffRate": 1.5} ],`,
		`[{"ErrorEquals": ["HTTP.5XX", "Net.Reset"], "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}]`,
		`{"Type": "Task", "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F"}], "TimeoutSeconds": 5, "RetryMode": "off"}`,
		`{"Retry": [], "DeadlineSeconds": 1e3, "MaxTotalAttempts": 2, "IdempotencyKey": "auto"}`,
		`{"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1e400}]}`,
		`[{"ErrorEquals": [" HTTP.503"]}]`, `[{"ErrorEquals": ["Net.Reset\t"]}]`,
		`{"Breaker": {"OpenSeconds": 1e12}, "Budget": {"WindowSeconds": -1e300}}`,
		`[{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 100000000000000000000}]`,
		`[{"ErrorEquals": ["States.ALL"], "BackoffRate": 1.5, "JitterStrategy": "DECORRELATED"}]`,
		`[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1e-400, "MaxAttempts": -0}]`,
		`[[[[[[[[`, `{"a":`, `"`, "\xff", ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := policy.ParseFile("f.json", data)
		if err != nil {
			var pe *policy.Error
			if !errors.As(err, &pe) || !errors.Is(err, policy.ErrInvalidDocument) || pe.Msg == "" {
				t.Fatalf("error %v (%T) is not a *policy.Error", err, err)
			}
			if pe.Line < 0 || pe.Column < 0 || pe.Offset < 0 || pe.Offset > int64(len(data)) {
				t.Fatalf("error %v: position %d:%d offset %d outside the input of %d bytes", err, pe.Line, pe.Column, pe.Offset, len(data))
			}
			if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 101 {
				t.Fatalf("%d errors joined, want at most 100 and the count of the others", len(j.Unwrap()))
			}
			return
		}
		if err := doc.Validate(); err != nil {
			t.Fatalf("Parse accepted %q but Validate says %v", data, err)
		}
		p := doc.Policy(policy.Options{})
		if err := p.Validate(); err != nil {
			t.Fatalf("document %q compiles to an invalid retry.Policy: %v", data, err)
		}
		if doc.Attempts() < 1 {
			t.Fatalf("document %q: Attempts() = %d", data, doc.Attempts())
		}
	})
}
