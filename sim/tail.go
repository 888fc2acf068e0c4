package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// Tail is the tail-at-scale scenario of Dean and Barroso ("The Tail at
// Scale", CACM 2013): requests that fan out to many backends, each of
// which is slow once in a while, so that the request, which waits for the
// slowest, is slow most of the time; and what hedged requests do to it.
//
// Requests arrive as an open-loop Poisson process (Rate per second). Each
// sends Fanout backend calls at once and ends when the last of them has
// answered. A backend attempt's latency is drawn when it is sent
// (per-request bad luck, independent across attempts and backends; the
// backends have no queue, so load does not change latencies): with
// probability SlowShare it is slow, of mean Slow, otherwise fast, of mean
// Fast. Both shapes are half their mean plus an exponential of the other
// half. A call is hedged as its policy's hedge.Hedger decides (the same
// Hedger that production code uses, on virtual instants): the first answer
// wins and the call's other attempts are cancelled, but each sent attempt
// counts as load.
//
// The run has three phases: Duration healthy (its first Warmup not
// measured), then a Brownout during which
// every attempt has mean latency BrownoutLatency (a dependency that is
// struggling as a whole: hedging cannot help, and naive hedging adds up to
// MaxHedges copies of every call), then Recovery healthy again. Each
// phase's requests (by their start) are measured apart.
//
// The zero Tail is the published shape: fan-out 100, 1 % of answers slow
// (mean 1 s against 5 ms), 100 requests/s for 60 s, then 30 s of brownout
// at 100 ms and 20 s of recovery. A Tail is a value; Run is safe for
// concurrent use.
type Tail struct {
	// Fanout is the number of backend calls per request. Zero: 100.
	Fanout int
	// Rate is requests per second. Zero: 100.
	Rate float64
	// Duration is the healthy phase's length. Zero: 60 s.
	Duration time.Duration
	// Fast is the mean latency of a fast answer. Zero: 5 ms.
	Fast time.Duration
	// Slow is the mean latency of a slow answer. Zero: 1 s.
	Slow time.Duration
	// SlowShare is the probability that an answer is slow, in [0, 1].
	// Zero: 0.01. NoSlow (-1): none.
	SlowShare float64
	// Brownout is the brownout phase's length. Zero: 30 s. Negative: none.
	Brownout time.Duration
	// BrownoutLatency is the mean latency of every answer during the
	// brownout. Zero: 100 ms.
	BrownoutLatency time.Duration
	// Recovery is the healthy phase after the brownout. Zero: 20 s.
	// Negative: none.
	Recovery time.Duration
	// Warmup is the start of the healthy phase whose requests are not
	// measured: an adaptive Hedger hedges only once it knows
	// hedge.MinSamples latencies, and the first requests of a run would
	// measure that rather than the steady state. Zero: 1 s. Negative:
	// none.
	Warmup time.Duration
}

// NoSlow as Tail.SlowShare makes every healthy answer fast.
const NoSlow = -1.0

func (t Tail) withDefaults() Tail {
	t.Fanout = cmp.Or(t.Fanout, 100)
	t.Rate = cmp.Or(t.Rate, 100)
	t.Duration = cmp.Or(t.Duration, 60*time.Second)
	t.Fast = cmp.Or(t.Fast, 5*time.Millisecond)
	t.Slow = cmp.Or(t.Slow, time.Second)
	switch t.SlowShare {
	case 0:
		t.SlowShare = 0.01
	case NoSlow:
		t.SlowShare = 0
	}
	t.Brownout = cmp.Or(t.Brownout, 30*time.Second)
	t.BrownoutLatency = cmp.Or(t.BrownoutLatency, 100*time.Millisecond)
	t.Recovery = cmp.Or(t.Recovery, 20*time.Second)
	t.Warmup = cmp.Or(t.Warmup, time.Second)
	t.Brownout, t.Recovery, t.Warmup = max(t.Brownout, 0), max(t.Recovery, 0), max(t.Warmup, 0)
	return t
}

// Validate reports the first field out of range.
func (t Tail) Validate() error {
	c := checks{scenario: "Tail"}
	c.need(t.Fanout >= 0 && t.Fanout <= 10000, "Fanout", t.Fanout, "1 to 10000 (0 means 100)")
	c.need(t.Rate >= 0 && t.Rate <= 1e5, "Rate", t.Rate, "0 < Rate ≤ 100000 per second (0 means 100)")
	c.need(t.Duration >= 0, "Duration", t.Duration, "> 0 (0 means 60s)")
	c.need(t.Fast >= 0, "Fast", t.Fast, "> 0 (0 means 5ms)")
	c.need(t.Slow >= 0, "Slow", t.Slow, "> 0 (0 means 1s)")
	c.need(t.SlowShare == NoSlow || t.SlowShare >= 0 && t.SlowShare <= 1, "SlowShare", t.SlowShare, "a probability in [0, 1] (0 means 0.01, NoSlow (-1) none)")
	c.need(t.BrownoutLatency >= 0, "BrownoutLatency", t.BrownoutLatency, "> 0 (0 means 100ms)")
	d := t.withDefaults()
	c.need(d.Warmup < d.Duration, "Warmup", t.Warmup, "shorter than Duration (0 means 1s, negative none)")
	c.need(float64(d.Fanout)*d.Rate*(d.Duration+d.Brownout+d.Recovery).Seconds() <= 2e9, "Rate", t.Rate, "fewer than 2e9 backend calls per run (Fanout × Rate × the phases' length)")
	return c.err
}

// TailPolicy is how the backend calls of the tail scenario are hedged.
type TailPolicy struct {
	// Name labels the policy in results, tables and plots.
	Name string
	// Description says in words what the policy does, for reports.
	Description string
	// Hedge configures the hedge.Hedger of a run (one per run: the
	// backends are one dependency). Nil: no hedging.
	Hedge *hedge.Config
}

// Validate reports a hedge configuration out of range.
func (p TailPolicy) Validate() error {
	if p.Hedge == nil {
		return nil
	}
	return p.Hedge.Validate()
}

// TailPolicies are the policies the tail scenario compares: no hedging;
// naive hedging after a fixed delay (fixed, at the 95th percentile of the
// healthy latencies, twice at most, with no budget nor brownout stop, as
// failsafe-go's and Polly's hedge policies do); the same fixed delay with
// yaoki's budget and brownout stop; and yaoki's defaults (adaptive).
func TailPolicies(fixed time.Duration) []TailPolicy {
	return []TailPolicy{
		{Name: "none", Description: "no hedging"},
		{Name: "fixed", Description: "hedge after " + fixed.String() + ", 2 hedges at most, no budget, no brownout stop",
			Hedge: &hedge.Config{Delay: fixed, Budget: hedge.Off, Brownout: hedge.Off}},
		{Name: "fixed+budget", Description: "hedge after " + fixed.String() + ", within yaoki's budget (5 %) and brownout stop",
			Hedge: &hedge.Config{Delay: fixed}},
		{Name: "yaoki", Description: "yaoki's default: hedge after the 97th percentile of the last 10 s, budget 5 %, brownout stop",
			Hedge: &hedge.Config{}},
	}
}

// TailPhase is what one phase of a tail run measured.
type TailPhase struct {
	Requests int // requests started in the phase that completed
	Calls    int // their backend calls
	Hedges   int // hedges sent for those calls
	// Latencies of whole requests: the median, 99th and 99.9th
	// percentiles.
	P50, P99, P999 time.Duration
}

// Extra returns the hedges per backend call: the load hedging added.
func (p TailPhase) Extra() float64 { return ratio(p.Hedges, p.Calls) }

// TailBin is one second of a tail run, by the requests that started in it.
type TailBin struct {
	Calls, Hedges int           // the backend calls, and the hedges among them
	P99           time.Duration // of the bin's request latencies
}

// TailResult is what one run of the tail scenario measured.
type TailResult struct {
	Healthy, Brownout, Recovery TailPhase // each phase's latencies and load
	// Seconds are the run's seconds, one bin each, from t = 0.
	Seconds []TailBin
}

// Event kinds of the tail scenario.
const (
	tailArrive uint8 = iota // a request starts
	tailHedge               // a call's next hedge is due (ID: call, Arg: its token)
	tailDone                // a call's first answer arrives (ID: call, Arg: its token)
)

// tailCall is a backend call in flight.
type tailCall struct {
	req     int32
	start   time.Duration
	delay   time.Duration // the hedge delay planned at its start (0: none known)
	primary time.Duration // when the first attempt answers
	finish  time.Duration // when the first answer arrives
	// The tokens of the call's pending events: an event whose token is
	// not the call's is stale (an answer a hedge beat, or an event of an
	// earlier call that had the same index).
	done, next int64
	hedges     int
}

// tailReq is a request in flight.
type tailReq struct {
	start time.Duration
	left  int
	calls int
	hedge int
}

// tailRun holds what one run needs; it is reused across runs.
type tailRun struct {
	eng   engine
	rnd   rng // arrivals and first attempts: the same for every policy
	extra rng // hedges' latencies
	calls []tailCall
	free  []int32
	reqs  []tailReq
	rfree []int32
	lat   [3][]time.Duration
	bins  [][]time.Duration
	tok   int64 // the last event token handed out
}

// Run simulates the scenario once under policy p with the given seed.
func (t Tail) Run(p TailPolicy, seed uint64) (TailResult, error) {
	if err := t.Validate(); err != nil {
		return TailResult{}, err
	}
	if err := p.Validate(); err != nil {
		return TailResult{}, err
	}
	var w tailRun
	return w.run(t.withDefaults(), p, seed), nil
}

func (w *tailRun) run(t Tail, p TailPolicy, seed uint64) TailResult {
	var res TailResult
	var h *hedge.Hedger
	if p.Hedge != nil {
		h, _ = hedge.New(*p.Hedge) // validated by the caller
	}
	maxHedges := 0
	if h != nil {
		maxHedges = h.MaxHedges()
	}
	e := &w.eng
	e.Reset()
	w.rnd.Seed(seed, 1)
	w.extra.Seed(seed, 2)
	w.calls, w.free, w.reqs, w.rfree, w.tok = w.calls[:0], w.free[:0], w.reqs[:0], w.rfree[:0], 0
	for i := range w.lat {
		w.lat[i] = w.lat[i][:0]
	}
	end := t.Duration + t.Brownout + t.Recovery
	nbins := int((end + time.Second - 1) / time.Second)
	for len(w.bins) < nbins {
		w.bins = append(w.bins, nil)
	}
	for i := range nbins {
		w.bins[i] = w.bins[i][:0]
	}
	res.Seconds = make([]TailBin, nbins)
	phaseOf := func(at time.Duration) int {
		switch {
		case at < t.Warmup:
			return -1
		case at < t.Duration:
			return 0
		case at < t.Duration+t.Brownout:
			return 1
		}
		return 2
	}
	phases := [3]*TailPhase{&res.Healthy, &res.Brownout, &res.Recovery}
	// latency draws an attempt's latency at now from r.
	latency := func(r *rng, now time.Duration) time.Duration {
		mean := t.Fast
		if phaseOf(now) == 1 { // the brownout
			mean = t.BrownoutLatency
		} else if r.Float64() < t.SlowShare {
			mean = t.Slow
		}
		return mean/2 + r.Exp(mean/2)
	}
	gap := time.Duration(float64(time.Second) / t.Rate)
	e.Add(simEvent{At: w.rnd.Exp(gap), Kind: tailArrive})
	for ev := range e.Events() {
		now := ev.At
		switch ev.Kind {
		case tailArrive:
			if now >= end {
				break
			}
			e.Add(simEvent{At: now + w.rnd.Exp(gap), Kind: tailArrive})
			rid := take(&w.rfree, &w.reqs)
			w.reqs[rid] = tailReq{start: now, left: t.Fanout, calls: t.Fanout}
			at := instant(now)
			for range t.Fanout {
				id := take(&w.free, &w.calls)
				l := latency(&w.rnd, now)
				w.tok += 2
				c := tailCall{req: rid, start: now, primary: now + l, finish: now + l, done: w.tok - 1, next: w.tok}
				if h != nil {
					d, ok := h.PlanAt(at)
					c.delay = d
					if ok && d < l {
						e.Add(simEvent{At: now + d, Kind: tailHedge, ID: id, Arg: c.next})
					}
				}
				w.calls[id] = c
				e.Add(simEvent{At: c.finish, Kind: tailDone, ID: id, Arg: c.done})
			}
		case tailHedge:
			c := &w.calls[ev.ID]
			if ev.Arg != c.next || c.finish <= now {
				break
			}
			if h.AllowAt(instant(now)) != nil {
				break // refused: the call is not hedged further
			}
			c.hedges++
			w.reqs[c.req].hedge++
			if f := now + latency(&w.extra, now); f < c.finish {
				c.finish = f
				w.tok++
				c.done = w.tok
				e.Add(simEvent{At: f, Kind: tailDone, ID: ev.ID, Arg: c.done})
			}
			if c.hedges < maxHedges && now+c.delay < c.finish {
				w.tok++
				c.next = w.tok
				e.Add(simEvent{At: now + c.delay, Kind: tailHedge, ID: ev.ID, Arg: c.next})
			}
		case tailDone:
			c := &w.calls[ev.ID]
			if ev.Arg != c.done {
				break // an answer that a hedge's beat, or an earlier call's
			}
			if h != nil {
				// The first attempt's latency, or how long it had run when
				// a hedge's answer cancelled it.
				ran := min(c.primary, now) - c.start
				h.ObserveAt(instant(now), ran, c.delay > 0 && ran > c.delay)
			}
			rid := c.req
			w.free = append(w.free, ev.ID)
			r := &w.reqs[rid]
			r.left--
			if r.left > 0 {
				break
			}
			lat := now - r.start
			if ph := phaseOf(r.start); ph >= 0 {
				w.lat[ph] = append(w.lat[ph], lat)
				phases[ph].Requests++
				phases[ph].Calls += r.calls
				phases[ph].Hedges += r.hedge
			}
			b := int(r.start / time.Second)
			res.Seconds[b].Calls += r.calls
			res.Seconds[b].Hedges += r.hedge
			w.bins[b] = append(w.bins[b], lat)
			w.rfree = append(w.rfree, rid)
		}
	}
	for i, ph := range phases {
		ph.P50, ph.P99, ph.P999 = quantile(w.lat[i], 0.5), quantile(w.lat[i], 0.99), quantile(w.lat[i], 0.999)
	}
	for i := range nbins {
		res.Seconds[i].P99 = quantile(w.bins[i], 0.99)
	}
	return res
}

// quantile returns the q-quantile of xs by rank (0 for none); it sorts xs.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(int(q*float64(len(xs))), len(xs)-1)]
}

// TailSweep runs the tail scenario for several policies, several seeded
// runs each, and averages them. The zero TailSweep runs the zero Tail, 3
// runs per policy, on one goroutine.
type TailSweep struct {
	// Tail is the scenario each run plays.
	Tail Tail
	// Runs is the number of runs per policy. Zero: 3.
	Runs int
	// Seed makes the sweep repeatable; every policy sees the same seeds,
	// and the same first attempts.
	Seed uint64
	// Workers is the number of goroutines. Zero: 1. Results do not depend
	// on it.
	Workers int
	// Progress, if set, is told after each run.
	Progress Progress
}

// TailPhaseStats is one phase of one policy, averaged over runs.
type TailPhaseStats struct {
	P50, P99, P999 Stat // seconds
	Extra          Stat // hedges per backend call
}

// TailPoint is one policy, averaged over runs.
type TailPoint struct {
	Policy                      string         // the policy's name
	Runs                        int            // the runs averaged
	Healthy, Brownout, Recovery TailPhaseStats // each phase's latencies and load, over the runs
	// Seconds are the run's seconds: hedges per call and the p99 of the
	// requests started in each, averaged over runs.
	Seconds []TailSecond
}

// TailSecond is one second of a tail run, averaged over runs.
type TailSecond struct {
	Extra float64 // hedges per backend call
	P99   float64 // seconds
}

// Run runs the sweep for each policy and returns one point per policy, in
// the order given.
func (s TailSweep) Run(policies []TailPolicy) ([]TailPoint, error) {
	if err := s.Tail.Validate(); err != nil {
		return nil, err
	}
	for _, p := range policies {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	runs := s.Runs
	if runs <= 0 {
		runs = 3
	}
	t := s.Tail.withDefaults()
	results := make([]TailResult, len(policies)*runs)
	workers := max(s.Workers, 1)
	state := make([]tailRun, workers)
	key := pointKey(uint64(t.Fanout), math.Float64bits(t.Rate), math.Float64bits(t.SlowShare), uint64(t.Fast), uint64(t.Slow))
	forEach(len(results), workers, s.Progress, func(w, i int) {
		results[i] = state[w].run(t, policies[i/runs], seedOf(s.Seed, key, i%runs))
	})
	points := make([]TailPoint, len(policies))
	for pi, p := range policies {
		var acc [3][4]stat
		pt := TailPoint{Policy: p.Name, Runs: runs}
		for r := range runs {
			res := &results[pi*runs+r]
			for k, ph := range [3]*TailPhase{&res.Healthy, &res.Brownout, &res.Recovery} {
				acc[k][0].add(ph.P50.Seconds())
				acc[k][1].add(ph.P99.Seconds())
				acc[k][2].add(ph.P999.Seconds())
				acc[k][3].add(ph.Extra())
			}
			if pt.Seconds == nil {
				pt.Seconds = make([]TailSecond, len(res.Seconds))
			}
			for b, bin := range res.Seconds {
				if bin.Calls > 0 {
					pt.Seconds[b].Extra += ratio(bin.Hedges, bin.Calls) / float64(runs)
				}
				pt.Seconds[b].P99 += bin.P99.Seconds() / float64(runs)
			}
		}
		for k, ph := range [3]*TailPhaseStats{&pt.Healthy, &pt.Brownout, &pt.Recovery} {
			*ph = TailPhaseStats{P50: acc[k][0].result(), P99: acc[k][1].result(), P999: acc[k][2].result(), Extra: acc[k][3].result()}
		}
		points[pi] = pt
	}
	return points, nil
}
