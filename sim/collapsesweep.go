package sim

import (
	"cmp"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
)

// NoBackoff is the collapse scenario's client without backoff: 3 attempts,
// each retry sent as soon as the previous attempt has timed out.
func NoBackoff() Policy {
	return Policy{Name: "no backoff", MaxAttempts: 3, Immediate: true, Description: "3 attempts, each retry sent when the previous attempt times out"}
}

// BackoffJitter is the collapse scenario's client with backoff and jitter:
// 3 attempts, retry n after a full-jitter wait drawn from
// [0, min(60 s, base·2^n)), as the reference simulation writes it (it
// doubles its base before drawing, so its first retry waits up to
// 2·base). Package backoff computes Base·2^(n−1) for retry n, so this is
// the Schedule with Base = 2·base, the mapping HerdStrategies applies to
// the 2015 post. Backoff pulls a server out of this collapse only when its
// waits are as long as the server needs to drain (seconds here, as service
// takes 1 to 3 s): from a 10 s base it recovers within seconds in nearly
// every run, from yaoki's default 50 ms it changes almost nothing. It only
// delays retries; a budget bounds them.
func BackoffJitter(base time.Duration) Policy {
	return Policy{Name: "backoff + jitter", MaxAttempts: 3,
		Backoff:     backoff.Schedule{Base: 2 * base, Multiplier: 2, Cap: time.Minute, Jitter: backoff.Full},
		Description: "3 attempts, retry n after U[0, min(1m, " + base.String() + "·2^n)) (full jitter) after each timeout"}
}

// CollapseAnchors returns the clients the collapse scenario is checked
// with: NoBackoff and BackoffJitter(10 s).
func CollapseAnchors() []Policy {
	return []Policy{NoBackoff(), BackoffJitter(10 * time.Second)}
}

// DefaultTriggers are the triggers of the collapse sweep: spikes to 50,
// 60, … 100 requests per second, for 5 s and for 10 s, from t = 20 s.
func DefaultTriggers() []Trigger {
	var out []Trigger
	for _, w := range []time.Duration{5 * time.Second, 10 * time.Second} {
		for peak := 50.0; peak <= 100; peak += 10 {
			out = append(out, Trigger{Kind: Spike, At: 20 * time.Second, Width: w, Peak: peak})
		}
	}
	return out
}

// CollapseSweep runs the collapse scenario for several triggers and
// policies, several seeded runs each. The zero CollapseSweep runs
// DefaultTriggers, 20 runs per point, on one goroutine.
type CollapseSweep struct {
	// Collapse sets everything but the trigger.
	Collapse Collapse
	// Triggers are the triggers to run. Nil: DefaultTriggers.
	Triggers []Trigger
	// Runs is the number of runs per point. Zero: 20.
	Runs int
	// Seed makes the sweep repeatable; every policy sees the same seeds.
	Seed uint64
	// Workers is the number of goroutines. Zero: 1. Results do not
	// depend on it.
	Workers int
	// Progress, if set, is told after each point.
	Progress Progress
}

// CollapsePoint is one policy under one trigger, over runs.
type CollapsePoint struct {
	Policy  string  // the policy's name
	Trigger Trigger // the disturbance of this point
	Runs    int     // the runs averaged
	// Collapsed is the share of runs still collapsed at the end.
	Collapsed float64
	// Recovery is the recovery time in seconds over the runs that
	// recovered (NaN if none did).
	Recovery Stat
	// Amplification is attempts per request.
	Amplification Stat
	// Goodput and InFlight are, second by second, the mean answers that
	// counted and the mean attempts in service.
	Goodput, InFlight []float64
}

// Run runs the sweep for each policy and returns one point per policy and
// trigger, policy by policy in the order given.
func (s CollapseSweep) Run(policies []Policy) ([]CollapsePoint, error) {
	sw := sweep{runs: cmp.Or(max(s.Runs, 0), 20), seed: s.Seed, workers: s.Workers, progress: s.Progress}
	key := func(c Collapse) uint64 {
		tr := c.Trigger
		return pointKey(uint64(tr.Kind), uint64(tr.At), uint64(tr.Width), math.Float64bits(tr.Peak), math.Float64bits(tr.Factor))
	}
	return sweepPoints[collapseRun](s.Collapse, orDefault(s.Triggers, DefaultTriggers), func(c *Collapse, tr Trigger) { c.Trigger = tr }, key, sw, policies,
		func(c Collapse, pi int, rs []CollapseResult) CollapsePoint {
			var rec, amp stat
			collapsed := 0
			var good, busy []float64
			runs := len(rs)
			for _, r := range rs {
				if r.Collapsed {
					collapsed++
				} else {
					rec.add(r.Recovery.Seconds())
				}
				amp.add(r.Amplification())
				if good == nil {
					good, busy = make([]float64, len(r.Goodput)), make([]float64, len(r.InFlight))
				}
				for k := range r.Goodput {
					good[k] += float64(r.Goodput[k]) / float64(runs)
					busy[k] += float64(r.InFlight[k]) / float64(runs)
				}
			}
			return CollapsePoint{Policy: policies[pi].Name, Trigger: c.Trigger, Runs: runs,
				Collapsed: float64(collapsed) / float64(runs), Recovery: rec.result(), Amplification: amp.result(),
				Goodput: good, InFlight: busy}
		})
}
