package sim

import (
	"cmp"
	"math"
	"time"
)

// Outage is the partial-outage scenario of Marc Brooker's "Fixing retries
// with token buckets and circuit breakers" (2022). Clients send first tries
// as independent Poisson processes of Rate per second each, for Duration;
// then no new first tries start and the calls in flight drain. Every hop
// takes Exp(mean HopMean). The server has no capacity limit and fails each
// attempt independently with probability FailureRate, so retries cost load
// but never cause failures: the scenario shows what a policy buys (success)
// for what it costs (amplification).
//
// The zero Outage is the post's set-up with a healthy server: 100 clients,
// 10 first tries per second each, 10 s, hops of 10 ms on average. An Outage
// is a value; Run is safe for concurrent use.
type Outage struct {
	// Clients is the number of clients. Zero: 100.
	Clients int
	// Rate is each client's first tries per second. Zero: 10.
	Rate float64
	// Duration is how long first tries keep coming (the post's max_t).
	// Zero: 10 s.
	Duration time.Duration
	// HopMean is the mean of one network hop. Zero: 10 ms.
	HopMean time.Duration
	// FailureRate is the probability that the server fails an attempt,
	// in [0, 1].
	FailureRate float64
	// Overload makes the failures overload answers (think 503 or 429)
	// rather than plain server errors: throttles count them, and a retry
	// after one waits from Policy.ThrottleBase.
	Overload bool
}

func (o Outage) withDefaults() Outage {
	o.Clients = cmp.Or(o.Clients, 100)
	o.Rate = cmp.Or(o.Rate, 10)
	o.Duration = cmp.Or(o.Duration, 10*time.Second)
	o.HopMean = cmp.Or(o.HopMean, 10*time.Millisecond)
	return o
}

// Validate reports the first field out of range.
func (o Outage) Validate() error {
	c := checks{scenario: "Outage"}
	c.need(o.Clients >= 0 && o.Clients <= 1e6, "Clients", o.Clients, "1 to 1e6 (0 means 100)")
	c.need(o.Rate >= 0 && o.Rate <= 1e6, "Rate", o.Rate, "0 < Rate ≤ 1e6 per second (0 means 10)")
	c.need(o.Duration >= 0 && o.Duration <= 24*time.Hour, "Duration", o.Duration, "0 < Duration ≤ 24h (0 means 10s)")
	d := o.withDefaults()
	c.need(float64(d.Clients)*d.Rate*d.Duration.Seconds() <= 1e9, "Rate", o.Rate, "at most 1e9 calls per run (Clients × Rate × Duration)")
	c.need(o.HopMean >= 0, "HopMean", o.HopMean, "≥ 0 (0 means 10ms)")
	c.need(o.FailureRate >= 0 && o.FailureRate <= 1, "FailureRate", o.FailureRate, "a probability in [0, 1]")
	return c.err
}

// OutageResult is what one run of the outage scenario measured.
type OutageResult struct {
	FirstTries int    // calls started (first attempts sent or refused)
	Attempts   int    // attempts that reached the server
	Refused    int    // calls refused locally (a breaker, a throttle) before any attempt
	Succeeded  int    // calls that eventually succeeded
	GaveUp     GaveUp // calls that did not, by reason
}

// Success returns the share of calls that eventually succeeded.
func (r OutageResult) Success() float64 { return ratio(r.Succeeded, r.FirstTries) }

// Amplification returns attempts per call: the load the server sees for
// the load the callers meant to send.
func (r OutageResult) Amplification() float64 { return ratio(r.Attempts, r.FirstTries) }

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Event kinds of the outage scenario. The server keeps no state, so its
// answer is drawn when an attempt is sent and the attempt costs one event:
// its answer coming back.
const (
	outArrive uint8 = iota // a client starts a call (ID: client)
	outBegin               // a call is about to send an attempt (ID: call)
	outReply               // an attempt's answer comes back (ID: call, Arg: Outcome)
)

// outCall is a call in flight.
type outCall struct {
	loop
	client int32
	// The first attempt's answer and round trip, drawn when the call
	// arrives (see run).
	first outcome
	trip  time.Duration
}

// outageRun holds what one run needs; it is reused across runs.
type outageRun struct {
	runBase
	retry rng // retries' answers, round trips and jitter
	calls []outCall
	free  []int32
}

// Run simulates the scenario once under policy p with the given seed.
func (o Outage) Run(p Policy, seed uint64) (OutageResult, error) {
	return runOnce[Outage, OutageResult, outageRun](o, p, seed)
}

func (w *outageRun) run(o Outage, c *compiled, seed uint64) OutageResult {
	var res OutageResult
	e, r := &w.eng, &w.rnd
	// Arrivals and first attempts draw from r, in arrival order, and
	// retries from another source: every policy's first attempts meet the
	// same answers (common random numbers), so that a policy that never
	// refuses a first attempt succeeds on at least the calls that no
	// retries does, run by run, not just on average.
	w.retry.Seed(seed, uint64(o.Clients)|1<<40)
	rr := &w.retry
	w.start(c, o.Clients, seed, uint64(o.Clients), rr) // jitter: a retry's draw
	w.calls, w.free = w.calls[:0], w.free[:0]
	gap := time.Duration(float64(time.Second) / o.Rate)
	fail := failed
	if o.Overload {
		fail = overloaded
	}
	for i := range o.Clients {
		e.Add(simEvent{At: r.Exp(gap), Kind: outArrive, ID: int32(i)})
	}
	// draw draws an attempt's answer and round trip (two hops) from src.
	draw := func(src *rng) (outcome, time.Duration) {
		out := succeeded
		if src.Float64() < o.FailureRate {
			out = fail
		}
		return out, src.Exp(o.HopMean) + src.Exp(o.HopMean)
	}
	// send sends call id's attempt at now: its answer arrives a round
	// trip later.
	send := func(id int32, now time.Duration) {
		res.Attempts++
		call := &w.calls[id]
		out, trip := call.first, call.trip
		if call.m.Attempts() > 1 {
			out, trip = draw(rr)
		}
		e.Add(simEvent{At: now + trip, Kind: outReply, ID: id, Arg: int64(out)})
	}
	// begin asks the guards and sends, retries later or gives up.
	begin := func(id int32, now time.Duration) {
		call := &w.calls[id]
		ok, refused := w.ask(&call.loop, call.client, id, outBegin, now, &res.GaveUp)
		switch {
		case refused != 0:
			if call.m.Attempts() == 0 {
				res.Refused++
			}
			w.free = append(w.free, id)
		case ok:
			send(id, now)
		}
	}
	for ev := range e.Events() {
		now := ev.At
		switch ev.Kind {
		case outArrive:
			if now >= o.Duration {
				break // draining: no more first tries
			}
			e.Add(simEvent{At: now + r.Exp(gap), Kind: outArrive, ID: ev.ID})
			res.FirstTries++
			id := take(&w.free, &w.calls)
			out, trip := draw(r)
			w.calls[id] = outCall{client: ev.ID, first: out, trip: trip}
			begin(id, now)
		case outBegin:
			begin(ev.ID, now)
		case outReply:
			call := &w.calls[ev.ID]
			out := outcome(ev.Arg)
			wait, stop := w.guards.end(&call.loop, now, out)
			switch {
			case out == succeeded:
				res.Succeeded++
				w.free = append(w.free, ev.ID)
			case stop != 0:
				res.GaveUp[stop]++
				w.free = append(w.free, ev.ID)
			case wait > 0 || w.guards.before:
				e.Add(simEvent{At: now + wait, Kind: outBegin, ID: ev.ID})
			default:
				begin(ev.ID, now)
			}
		}
	}
	return res
}

// DefaultFailureRates are the failure rates of the outage sweep: the
// post's, from 0 to 0.5, and on to 1.
func DefaultFailureRates() []float64 {
	return []float64{0, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.0325, 0.05,
		0.075, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
}

// OutageSweep runs the outage scenario for several failure rates and
// policies, several seeded runs each, and averages them. The zero
// OutageSweep runs the post's set-up at DefaultFailureRates, 3 runs per
// point, on one goroutine.
type OutageSweep struct {
	// Outage sets everything but the failure rate.
	Outage Outage
	// FailureRates are the failure rates to run. Nil:
	// DefaultFailureRates.
	FailureRates []float64
	// Runs is the number of runs per point. Zero: 3.
	Runs int
	// Seed makes the sweep repeatable; every policy sees the same seeds.
	Seed uint64
	// Workers is the number of goroutines. Zero: 1. Results do not
	// depend on it.
	Workers int
	// Progress, if set, is told after each point.
	Progress Progress
}

// OutagePoint is one policy at one failure rate, averaged over runs.
type OutagePoint struct {
	Policy        string                 // the policy's name
	Clients       int                    // the clients of this point
	FailureRate   float64                // p, the share of attempts the server fails
	Runs          int                    // the runs averaged
	Success       Stat                   // share of calls that succeeded
	Amplification Stat                   // attempts per call (that reached the server)
	Refused       Stat                   // calls refused locally, before any attempt, per call
	GaveUp        [len(GaveUp{})]float64 // calls per run that gave up, by retry.Reason
}

// Run runs the sweep for each policy and returns one point per policy and
// failure rate, policy by policy in the order given.
func (s OutageSweep) Run(policies []Policy) ([]OutagePoint, error) {
	if err := s.Outage.Validate(); err != nil {
		return nil, err
	}
	sw := sweep{runs: cmp.Or(max(s.Runs, 0), 3), seed: s.Seed, workers: s.Workers, progress: s.Progress}
	return sweepPoints[outageRun](s.Outage, orDefault(s.FailureRates, DefaultFailureRates), func(o *Outage, p float64) { o.FailureRate = p },
		func(o Outage) uint64 { return pointKey(math.Float64bits(o.FailureRate)) }, sw, policies,
		func(o Outage, pi int, runs []OutageResult) OutagePoint {
			var succ, amp, refused stat
			var gave GaveUp
			for _, r := range runs {
				succ.add(r.Success())
				amp.add(r.Amplification())
				refused.add(ratio(r.Refused, r.FirstTries))
				gave.add(&r.GaveUp)
			}
			pt := OutagePoint{Policy: policies[pi].Name, Clients: o.Clients, FailureRate: o.FailureRate, Runs: len(runs),
				Success: succ.result(), Amplification: amp.result(), Refused: refused.result()}
			for k, v := range gave {
				pt.GaveUp[k] = float64(v) / float64(len(runs))
			}
			return pt
		})
}
