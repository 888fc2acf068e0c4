package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/yaoki-go/yaoki/retry"
)

var sink error

// call is the function every benchmark calls; a package variable so that
// the compiler cannot inline it into the direct baseline either.
var call = func(context.Context) error { return nil }

// BenchmarkDoSuccess measures a call whose first attempt succeeds: direct is
// the function called by hand, Do the package function with a zero Policy,
// Retrier a prepared *Retrier.
func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = call(ctx)
		}
	})
	b.Run("Do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = retry.Do(ctx, retry.Policy{}, call)
		}
	})
	b.Run("Retrier", func(b *testing.B) {
		r, _ := retry.New(retry.Policy{})
		b.ReportAllocs()
		for b.Loop() {
			sink = r.Do(ctx, call)
		}
	})
}

func BenchmarkDoOneRetry(b *testing.B) {
	ctx := context.Background()
	e := errors.New("x")
	p := retry.Policy{Rand: func() float64 { return 0 }}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		sink = retry.Do(ctx, p, func(context.Context) error {
			n++
			if n == 1 {
				return e
			}
			return nil
		})
	}
}
