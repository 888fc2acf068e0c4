package sim

import (
	"testing"
	"time"
)

// benchSweep runs sweep b.N times and reports, besides wall time, the CPU
// seconds per sweep (cpu-s/op), which a busy machine does not inflate.
func benchSweep(b *testing.B, sweep func() error) {
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if err := sweep(); err != nil {
			b.Fatal(err)
		}
	}
	if c := cpuTime() - start; c > 0 {
		b.ReportMetric(c.Seconds()/float64(b.N), "cpu-s/op")
	}
}

// BenchmarkHerdSweep runs the whole published herd sweep per iteration:
// 19 client counts × 100 runs × 5 strategies, on one goroutine.
func BenchmarkHerdSweep(b *testing.B) {
	policies := HerdStrategies(5*time.Millisecond, 2*time.Second)
	benchSweep(b, func() error {
		_, err := HerdSweep{}.Run(policies)
		return err
	})
}

// BenchmarkOutageSweep runs the default outage sweep (22 failure rates ×
// 3 runs × the post's 4 policies), on one goroutine.
func BenchmarkOutageSweep(b *testing.B) {
	benchSweep(b, func() error {
		_, err := OutageSweep{}.Run(OutageAnchors())
		return err
	})
}

// BenchmarkHerd is one run of the herd at 100 clients with full jitter.
func BenchmarkHerd(b *testing.B) {
	b.ReportAllocs()
	var w herdRun
	c := compile(HerdStrategies(5*time.Millisecond, 2*time.Second)[2])
	h := Herd{}.withDefaults()
	var calls int
	for i := 0; b.Loop(); i++ {
		calls += w.run(h, &c, uint64(i)).Calls
	}
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
}

// BenchmarkOutage is one run of the outage (100 clients × 10/s × 10 s,
// 10 000 calls) with 3 retries at p = 0.5.
func BenchmarkOutage(b *testing.B) {
	b.ReportAllocs()
	var w outageRun
	c := compile(Retries(3))
	o := Outage{FailureRate: 0.5}.withDefaults()
	for i := 0; b.Loop(); i++ {
		w.run(o, &c, uint64(i))
	}
}

// BenchmarkRateLimit is one run of the rate-limit scenario (10 clients,
// 110 calls/s against a limit of 100/s, 20 s: 2 200 calls) under yaoki's
// defaults.
func BenchmarkRateLimit(b *testing.B) {
	b.ReportAllocs()
	var w rateLimitRun
	c := compile(Yaoki())
	l := RateLimit{Load: 1.1}.withDefaults()
	for i := 0; b.Loop(); i++ {
		w.run(l, &c, uint64(i))
	}
}

// BenchmarkEngine measures one Add and one Pop on a queue holding 128
// events, the herd's usual size.
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	var e engine
	r := newRand(1, 1)
	for i := range 128 {
		e.Add(simEvent{At: r.Exp(10 * time.Millisecond), ID: int32(i)})
	}
	for b.Loop() {
		ev, _ := e.Pop()
		ev.At += r.Exp(10 * time.Millisecond)
		e.Add(ev)
	}
}

// BenchmarkCollapse is one run of the collapse scenario with a spike to
// 100/s for 10 s and clients that retry at once: the run collapses, and
// the server ends with some 2 500 attempts in service.
func BenchmarkCollapse(b *testing.B) {
	b.ReportAllocs()
	var w collapseRun
	c := compile(NoBackoff())
	s := Collapse{Trigger: Trigger{Peak: 100, Width: 10 * time.Second}}.withDefaults()
	for i := 0; b.Loop(); i++ {
		w.run(s, &c, uint64(i))
	}
}

// BenchmarkCollapseSweep runs the default collapse sweep (12 spikes × 20
// runs × the 2 anchors), on one goroutine.
func BenchmarkCollapseSweep(b *testing.B) {
	benchSweep(b, func() error {
		_, err := CollapseSweep{}.Run(CollapseAnchors())
		return err
	})
}
