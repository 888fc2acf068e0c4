package idempotencytest_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
)

// newStore stands for the constructor of your own store; here, the
// in-memory one.
func newStore(tb testing.TB) idempotency.Store {
	s, err := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// A store of your own keeps the middleware's contract when a test of its
// package calls TestStore (every transition on stepped time), ExactlyOnce
// (500 concurrent retrying clients with one key, over a real loopback
// server) and Scoped, and its benchmark calls Benchmark. The functions below
// are what you write in a _test.go file as TestMyStore and BenchmarkMyStore.
// (This example is compiled, not run: the checks need the *testing.T and
// *testing.B that go test gives a test.)
func Example() {
	testMyStore := func(t *testing.T) {
		idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store { return newStore(t) })
		idempotencytest.ExactlyOnce(t, newStore(t), 500)
		idempotencytest.Scoped(t, newStore(t))
	}
	benchmarkMyStore := func(b *testing.B) {
		idempotencytest.Benchmark(b, newStore(b))
	}
	_, _ = testMyStore, benchmarkMyStore
}
