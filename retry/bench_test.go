package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

var sink error

// call is the function every benchmark calls; a package variable so that
// the compiler cannot inline it into the direct baseline either.
var call = func(context.Context) error { return nil }

// callValue is call for DoValue; sinkN keeps its result.
var (
	callValue = func(context.Context) (int, error) { return 1, nil }
	sinkN     int
)

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
	b.Run("DoValue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, err := retry.DoValue(ctx, retry.Policy{}, callValue)
			sink, sinkN = err, n
		}
	})
	b.Run("ratio", doSuccessRatio)
}

// wrapper is the least a retry function can do on the success path: call
// fn once, from a function of its own, and return nil when it succeeds. Its
// failure branch does something with the error (any retry function must),
// so that ctx and fn stay live across the call as they do in Do.
//
//go:noinline
func wrapper(ctx context.Context, fn func(context.Context) error) error {
	if err := fn(ctx); err != nil {
		return errors.Join(err, errors.ErrUnsupported)
	}
	return nil
}

// doSuccessRatio runs the forms of BenchmarkDoSuccess in alternation, a
// block of calls of each per op, in a rotating order, so that all of them
// see the same machine: on a shared VM whose speed drifts by tens of
// percent within seconds, ratios taken from separate runs are mostly noise.
// It reports each form's time over the direct call's, and the time per
// call of the first three. The fourth form, wrapper, is the floor of any
// retry function that is not inlined: a function that calls fn and does
// more only if it fails. The fifth is DoValue, whose fn returns an int too.
func doSuccessRatio(b *testing.B) {
	const block = 1024
	ctx := context.Background()
	r, _ := retry.New(retry.Policy{})
	forms := [5]func(){
		func() {
			for range block {
				sink = call(ctx)
			}
		},
		func() {
			for range block {
				sink = retry.Do(ctx, retry.Policy{}, call)
			}
		},
		func() {
			for range block {
				sink = r.Do(ctx, call)
			}
		},
		func() {
			for range block {
				sink = wrapper(ctx, call)
			}
		},
		func() {
			for range block {
				sinkN, sink = retry.DoValue(ctx, retry.Policy{}, callValue)
			}
		},
	}
	var spent [len(forms)]time.Duration
	blocks := 0
	b.ReportAllocs()
	for b.Loop() {
		for k := range len(forms) {
			i := (blocks + k) % len(forms)
			t0 := time.Now()
			forms[i]()
			spent[i] += time.Since(t0)
		}
		blocks++
	}
	calls := float64(blocks * block)
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "Do/direct")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "Retrier/direct")
	b.ReportMetric(float64(spent[3])/float64(spent[0]), "wrapper/direct")
	b.ReportMetric(float64(spent[4])/float64(spent[0]), "DoValue/direct")
	b.ReportMetric(float64(spent[0].Nanoseconds())/calls, "direct-ns/call")
	b.ReportMetric(float64(spent[1].Nanoseconds())/calls, "Do-ns/call")
	b.ReportMetric(float64(spent[2].Nanoseconds())/calls, "Retrier-ns/call")
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
