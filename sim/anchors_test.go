package sim

import (
	"testing"
	"time"
)

func TestRetryBucket(t *testing.T) {
	b := NewRetryBucket()
	t0 := instant(0)
	// Full (5): retries while more than 1 token is left: 5 → 4 → 3 → 2 → 1.
	for i := range 4 {
		if !b.AllowRetryAt(t0, false) {
			t.Fatalf("retry %d with %v tokens: refused, want allowed", i+1, b.Tokens()+1)
		}
	}
	if b.AllowRetryAt(t0, false) {
		t.Fatalf("retry with %v tokens: allowed, want refused (needs more than 1)", b.Tokens())
	}
	// Retries and their outcomes add nothing; 5 first tries add 0.5
	// token.
	b.RecordAt(t0, false, true)
	for range 5 {
		b.RecordAt(t0, true, false)
	}
	if got := b.Tokens(); got < 1.499 || got > 1.501 {
		t.Fatalf("after 5 first tries: %v tokens, want 1.5", got)
	}
	if !b.AllowRetryAt(t0, true) || b.AllowRetryAt(t0, true) {
		t.Fatal("with 1.5 tokens: want exactly one retry")
	}
	for range 100 {
		b.RecordAt(t0, true, true)
	}
	if b.Tokens() != 5 {
		t.Fatalf("after 100 first tries: %v tokens, want the capacity, 5", b.Tokens())
	}
}

func TestRetryBreaker(t *testing.T) {
	b := NewRetryBreaker()
	t0 := instant(time.Second)
	if b.AllowRetryAt(t0, false) {
		t.Fatal("no call yet: retry allowed, want refused")
	}
	// 10 calls, the last one failed: 1/10 ≤ 0.1, retries allowed.
	for i := range 10 {
		b.RecordAt(t0, true, i < 9)
	}
	if !b.AllowRetryAt(t0, false) {
		t.Fatal("1 failure in 10 calls: retry refused, want allowed")
	}
	// Its retry failed too: 2/10 > 0.1.
	b.RecordAt(t0, false, false)
	if b.AllowRetryAt(t0, false) {
		t.Fatal("2 failures in 10 calls: retry allowed, want refused")
	}
	// Ten more successful calls: 2/20, retries again.
	for range 10 {
		b.RecordAt(t0, true, true)
	}
	if !b.AllowRetryAt(t0, false) {
		t.Fatal("2 failures in 20 calls: retry refused, want allowed")
	}
}
