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

// BenchmarkDoOneRetry measures a call that fails once and succeeds on the
// second attempt, with a zero wait (the draw is 0 under full jitter), so the
// loop's own work is measured, not a timer.
func BenchmarkDoOneRetry(b *testing.B) {
	ctx := context.Background()
	e := errors.New("transient")
	p := retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0 }}}
	n := 0
	fn := func(context.Context) error {
		n++
		if n%2 == 1 {
			return e
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = retry.Do(ctx, p, fn)
	}
}
