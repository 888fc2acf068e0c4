package idempotencytest_test

import (
	"fmt"
	"strings"
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

// NewKeys gives a benchmark (or a load test) its keys: one prefix per
// call, stamped with the time, then the request's number, so that a second
// run against a shared store sends keys it has not seen.
func ExampleNewKeys() {
	key := idempotencytest.NewKeys("bench-")
	first, second := key(0), key(1)
	fmt.Println(strings.HasPrefix(first, "bench-"), first != second)
	fmt.Println(strings.TrimSuffix(first, "0") == strings.TrimSuffix(second, "1"))
	// Output:
	// true true
	// true
}
