package breaker

import (
	"context"
	"testing"
	"time"
)

// The closed success path, as the retry loop drives it: AllowAt and DoneAt
// with the instant given (the default breaker: a 30 s time window).
func BenchmarkBreakerSuccessSerial(b *testing.B) {
	br, _ := New(Config{})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		tk, err := br.AllowAt(now, false)
		if err != nil {
			b.Fatal(err)
		}
		br.DoneAt(now, tk, 0, nil)
	}
}

func BenchmarkBreakerSuccessParallel(b *testing.B) {
	br, _ := New(Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			tk, err := br.AllowAt(now, false)
			if err != nil {
				b.Fatal(err)
			}
			br.DoneAt(now, tk, 0, nil)
		}
	})
}

// The same with a count window (the last 100 calls).
func BenchmarkBreakerSuccessCountWindowParallel(b *testing.B) {
	br, _ := New(Config{WindowCalls: 100})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			tk, _ := br.AllowAt(now, false)
			br.DoneAt(now, tk, 0, nil)
		}
	})
}

// Execute reads the clock once per call with a time window, not at all
// with a count window: these show the cost of the convenience form.
func BenchmarkBreakerExecute(b *testing.B) {
	ok := func(context.Context) error { return nil }
	ctx := context.Background()
	for _, c := range []struct {
		name string
		s    Config
	}{
		{"time-window", Config{}},
		{"count-window", Config{WindowCalls: 100}},
		{"consecutive", Config{ConsecutiveFailures: 5, FailureRatio: Disabled, OpenTimeout: time.Hour}},
	} {
		br, _ := New(c.s)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := br.Execute(ctx, ok); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// An open breaker refusing a call: a lock-free check of the open period and
// the *OpenError it returns.
func BenchmarkBreakerOpenReject(b *testing.B) {
	br, _ := New(Config{ConsecutiveFailures: 1, OpenTimeout: time.Hour})
	tk, _ := br.AllowAt(t0, false)
	br.DoneAt(t0, tk, 0, boom)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0.Add(time.Second)
		for pb.Next() {
			if _, err := br.AllowAt(now, false); err == nil {
				b.Fatal("allowed")
			}
		}
	})
}
