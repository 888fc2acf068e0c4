package policy_test

import (
	"context"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

var sink error

const benchDoc = `{"Retry": [
  {"ErrorEquals": ["HTTP.429", "HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 4, "JitterStrategy": "FULL"},
  {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 0.05, "MaxAttempts": 2, "MaxDelaySeconds": 20}]}`

// BenchmarkPolicySuccess: a call whose first attempt succeeds, through a
// document's policy built once: no allocation, as with a plain retry.Policy.
func BenchmarkPolicySuccess(b *testing.B) {
	doc, err := policy.Parse([]byte(benchDoc))
	if err != nil {
		b.Fatal(err)
	}
	r, err := retry.New(doc.Policy(policy.Options{}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		sink = r.Do(ctx, fn)
	}
}

// BenchmarkPolicyRetry503: two 503s then success, waits skipped: the cost
// of choosing retriers and keeping per-call counts.
func BenchmarkPolicyRetry503(b *testing.B) {
	doc, _ := policy.Parse([]byte(benchDoc))
	p, _ := retrytest.NoWait(doc.Policy(policy.Options{}))
	r, _ := retry.New(p)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		sink = r.Do(ctx, func(context.Context) error {
			n++
			if n <= 2 {
				return status(503)
			}
			return nil
		})
	}
}

// BenchmarkParse: loading a two-retrier document.
func BenchmarkParse(b *testing.B) {
	data := []byte(benchDoc)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseManyKeys: a 1 MiB object of distinct keys (115 000 of
// them), refused for its unknown fields.
func BenchmarkParseManyKeys(b *testing.B) {
	doc := manyKeys(policy.MaxDocumentSize-100, "x")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.Parse(doc); err == nil {
			b.Fatal("accepted")
		}
	}
}
