package idempotency_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
)

func BenchmarkMiddlewareMemory(b *testing.B) {
	s, _ := idempotency.NewMemoryStore(idempotency.MemoryConfig{})
	idempotencytest.Benchmark(b, s)
}

func BenchmarkParseKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := idempotency.ParseKey(`"8e03978e-40d5-43e8-bc93-6894a57f9324"`); err != nil {
			b.Fatal(err)
		}
	}
}
