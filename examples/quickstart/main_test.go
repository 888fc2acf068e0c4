package main

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestQuickstart runs the program on virtual time: the function fails
// twice and succeeds at the third attempt, after two waits drawn from the
// default schedule, and the permanent error is not retried.
func TestQuickstart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out); err != nil {
			t.Fatalf("run: %v", err)
		}
		got := out.String()
		for _, want := range []string{
			"attempt 1 failed (partner: connection reset by peer, transient): waiting",
			"from backoff (full jitter in [0s, 50ms))",
			"attempt 2 failed (partner: connection reset by peer, transient): waiting",
			"from backoff (full jitter in [0s, 100ms))",
			"succeeded after 3 attempts",
			"retry 6: min 0s, mean 800ms, max 1.6s",
			"A permanent error after 1 attempt: retry: gave up after 1 attempt in 0s: permanent error: last error: partner: 400 bad request",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q; got:\n%s", want, got)
			}
		}
		if n := strings.Count(got, "failed ("); n != 2 {
			t.Errorf("got %d failed attempts, want 2:\n%s", n, got)
		}
	})
}
