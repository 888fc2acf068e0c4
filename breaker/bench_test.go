package breaker

import (
	"context"
	"testing"
	"time"
)

// The breakers the benchmarks run: the default (a 30 s time window), a
// count window (the last 100 calls), and consecutive failures alone.
var benchConfigs = []struct {
	name string
	c    Config
}{
	{"time-window", Config{}},
	{"count-window", Config{WindowCalls: 100}},
	{"consecutive", Config{ConsecutiveFailures: 5, FailureRatio: Disabled, OpenTimeout: time.Hour}},
}

// The closed success path, as the retry loop drives it: AllowAt and DoneAt
// with the instant given, in a loop and on every P.
func BenchmarkBreakerSuccess(b *testing.B) {
	for _, w := range benchConfigs {
		br, _ := New(w.c)
		call := func() error {
			tk, err := br.AllowAt(t0, false)
			if err == nil {
				br.DoneAt(t0, tk, 0, nil)
			}
			return err
		}
		b.Run(w.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(w.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// Execute reads the clock once per call with a time window, not at all
// with a count window: these show the cost of the convenience form.
func BenchmarkBreakerExecute(b *testing.B) {
	ok := func(context.Context) error { return nil }
	ctx := context.Background()
	for _, c := range benchConfigs {
		br, _ := New(c.c)
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

// The two-step form while closed: Allow and Permit.Done, which disarms the
// Permit it is called on.
func BenchmarkBreakerPermit(b *testing.B) {
	for _, w := range benchConfigs {
		br, _ := New(w.c)
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := br.Allow()
					if err != nil {
						b.Fatal(err)
					}
					p.Done(nil)
				}
			})
		})
	}
}
