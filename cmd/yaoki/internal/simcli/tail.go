package simcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/sim"
)

// tailParams are the flags of `yaoki sim tail`.
type tailParams struct {
	base  sim.Tail
	fixed time.Duration
}

func defaultTailParams() *tailParams {
	return &tailParams{base: sim.Tail{Fanout: 100, Rate: 100, Duration: 60 * time.Second, Fast: 5 * time.Millisecond,
		Slow: time.Second, SlowShare: 0.01, Brownout: 30 * time.Second, BrownoutLatency: 100 * time.Millisecond,
		Recovery: 20 * time.Second, Warmup: time.Second}, fixed: 10 * time.Millisecond}
}

func newSimTailCmd(o *simOptions) *cobra.Command {
	p := defaultTailParams()
	cmd := o.command("tail", "Requests that fan out to 100 backends, a 1 % slow tail, and hedged requests (Dean and Barroso, 2013)", `The tail at scale (Dean and Barroso, "The Tail at Scale", CACM 2013). Requests
arrive as a Poisson process of --rate per second; each fans out to --fanout
backend calls and waits for the last. A backend answer is slow (mean --slow)
with probability --slow-share, fast (mean --fast) otherwise, drawn afresh for
every attempt. With a fan-out of 100 and 1 % slow answers, 63 % of requests
wait for a slow one. A hedged call sends a copy when its first attempt has not
answered after a delay and takes the first answer.

After --duration, a --brownout of --brownout-latency (every answer slow: no
copy can help) and a --recovery. Compared: no hedging; naive hedging after a
fixed --fixed delay (2 copies at most, no budget, no brownout stop); the same
delay within yaoki's budget and brownout stop; yaoki's defaults (hedge after
the 97th percentile of the last 10 s, budget 5 %, brownout stop). Reported per
phase: the 50th, 99th and 99.9th percentiles of whole requests and the extra
requests the hedges sent; second by second, the 99th percentile and the extra
load.`, &simJob{tail: p}, nil)
	registerTailFlags(cmd.Flags(), p)
	return cmd
}

func registerTailFlags(fs *pflag.FlagSet, p *tailParams) {
	b := &p.base
	fs.IntVar(&b.Fanout, "fanout", b.Fanout, "backend calls per request")
	fs.Float64Var(&b.Rate, "rate", b.Rate, "requests per second")
	fs.DurationVar(&b.Duration, "duration", b.Duration, "length of the healthy phase")
	fs.DurationVar(&b.Fast, "fast", b.Fast, "mean latency of a fast answer")
	fs.DurationVar(&b.Slow, "slow", b.Slow, "mean latency of a slow answer")
	fs.Float64Var(&b.SlowShare, "slow-share", b.SlowShare, "probability that an answer is slow (0: none)")
	fs.DurationVar(&b.Brownout, "brownout", b.Brownout, "length of the brownout (0: none)")
	fs.DurationVar(&b.BrownoutLatency, "brownout-latency", b.BrownoutLatency, "mean latency of every answer during the brownout")
	fs.DurationVar(&b.Recovery, "recovery", b.Recovery, "length of the healthy phase after the brownout (0: none)")
	fs.DurationVar(&p.fixed, "fixed", p.fixed, "delay of the fixed-delay policies")
}

// pickTail keeps the policies named by --policies, in their order.
func (o *simOptions) pickTail(all []sim.TailPolicy) ([]sim.TailPolicy, error) {
	return pickNamed(o.only, all, func(p sim.TailPolicy) string { return p.Name }, "the tail scenario")
}

// runTail runs the tail sweep for the report.
func (o *simOptions) runTail(p *tailParams, yours *yourPolicy, bar *simProgress) (*tailReport, error) {
	if yours != nil {
		return nil, cli.Exit(cli.ExitUsage, "the policy flags (--base, --budget, --policy, ...) set a retry policy, which the tail scenario does not use: it compares hedging policies")
	}
	if p.fixed <= 0 {
		return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--fixed %v: want a delay > 0", p.fixed))
	}
	pols, err := o.pickTail(sim.TailPolicies(p.fixed))
	if err != nil {
		return nil, err
	}
	t := p.base
	switch share := t.SlowShare; {
	case !(share >= 0 && share <= 1):
		return nil, cli.Usagef("--slow-share %v: out of range; want a probability in [0, 1]", share)
	case share == 0:
		t.SlowShare = sim.NoSlow
	}
	if t.Duration > 0 && t.Duration <= t.Warmup {
		return nil, cli.Usagef("--duration %v: want longer than %v: the requests of the first %v are not measured (the warm-up)", t.Duration, t.Warmup, t.Warmup)
	}
	// 0 is no brownout, no recovery; negative too, as the help says.
	for _, d := range []*time.Duration{&t.Brownout, &t.Recovery} {
		if *d == 0 {
			*d = -1
		}
	}
	s := sim.TailSweep{Tail: t, Runs: o.runsOr(3), Seed: o.seed, Workers: o.workers, Progress: bar.phase("tail")}
	pts, err := s.Run(pols)
	if err != nil {
		return nil, simUsage(err)
	}
	info := make([]policyInfo, len(pols))
	for i, pol := range pols {
		info[i] = policyInfo{Name: pol.Name, Description: pol.Description}
	}
	return &tailReport{reportHead: reportHead{Runs: s.Runs, Policies: info}, Tail: p.base, Points: pts}, nil
}

type tailReport struct {
	reportHead
	Tail   sim.Tail
	Points []sim.TailPoint
}

// tailPhaseNames name the phases of a tail point, in the order of
// tailPhases.
var tailPhaseNames = []string{"healthy", "brownout", "recovery"}

func tailPhases(p sim.TailPoint) []sim.TailPhaseStats {
	return []sim.TailPhaseStats{p.Healthy, p.Brownout, p.Recovery}
}

func ms(s float64) string { return fmt.Sprintf("%.1f", 1000*s) }

// tables returns the tail scenario's tables.
func (r *tailReport) tables() []*pivot {
	t := r.Tail
	where := fmt.Sprintf("fan-out %d, %g %% slow, %g requests/s, mean of %d runs", t.Fanout, 100*t.SlowShare, t.Rate, r.Runs)
	lat := newPivot("tail: latency of whole requests, ms ("+where+")", "phase, percentile", r.Policies)
	load := newPivot("tail: extra requests sent by hedges, % of backend calls", "phase", r.Policies)
	for _, p := range r.Points {
		for i, ph := range tailPhases(p) {
			name := tailPhaseNames[i]
			if ph.Extra.Mean != ph.Extra.Mean { // NaN: the phase did not run
				continue
			}
			lat.set(name+" p50", p.Policy, ms(ph.P50.Mean))
			lat.set(name+" p99", p.Policy, ms(ph.P99.Mean))
			lat.set(name+" p99.9", p.Policy, ms(ph.P999.Mean))
			load.set(name, p.Policy, fmt.Sprintf("%.2f", 100*ph.Extra.Mean))
		}
	}
	return []*pivot{lat, load}
}

// csvRows writes the tail points in the tidy layout of csvHeader: the
// phase goes in the trigger column.
func (r *tailReport) csvRows(row csvRow) {
	for _, p := range r.Points {
		for i, ph := range tailPhases(p) {
			name := tailPhaseNames[i]
			row("tail", p.Policy, "", "", "", name, "p50_s", ph.P50, p.Runs)
			row("tail", p.Policy, "", "", "", name, "p99_s", ph.P99, p.Runs)
			row("tail", p.Policy, "", "", "", name, "p999_s", ph.P999, p.Runs)
			row("tail", p.Policy, "", "", "", name, "extra_requests", ph.Extra, p.Runs)
		}
	}
}

type tailPhaseJSON struct {
	P50S  jstat `json:"p50_s"`
	P99S  jstat `json:"p99_s"`
	P999S jstat `json:"p999_s"`
	Extra jstat `json:"extra_requests"`
}

type tailPointJSON struct {
	Policy  string                   `json:"policy"`
	Runs    int                      `json:"runs"`
	Phases  map[string]tailPhaseJSON `json:"phases"`
	ExtraPS []jnum                   `json:"extra_requests_per_s"`
	P99PerS []jnum                   `json:"p99_s_per_s"`
}

type tailJSON struct {
	reportHead
	Points []tailPointJSON `json:"points"`
}

func (r *tailReport) json() *tailJSON {
	out := &tailJSON{reportHead: r.reportHead}
	for _, p := range r.Points {
		pt := tailPointJSON{Policy: p.Policy, Runs: p.Runs, Phases: map[string]tailPhaseJSON{}}
		for i, ph := range tailPhases(p) {
			pt.Phases[tailPhaseNames[i]] = tailPhaseJSON{js(ph.P50), js(ph.P99), js(ph.P999), js(ph.Extra)}
		}
		for _, s := range p.Seconds {
			pt.ExtraPS = append(pt.ExtraPS, jnum(s.Extra))
			pt.P99PerS = append(pt.P99PerS, jnum(s.P99))
		}
		out.Points = append(out.Points, pt)
	}
	return out
}

// figures draws, second by second, the 99th percentile of requests and
// the extra load, with the brownout shaded.
func (r *tailReport) figures() []*figure {
	t := r.Tail
	idx := policyIndex(r.Policies)
	lat := newFigure("tail-p99", "Tail: 99th percentile of whole requests, second by second", "time (s)", "p99 latency (ms, log scale)")
	lat.caption = fmt.Sprintf("Fan-out %d, %g %% of answers slow (mean %v against %v); the shaded band is the brownout (every answer of mean %v). Mean of %d runs; requests by the second they started.",
		t.Fanout, 100*t.SlowShare, t.Slow, t.Fast, t.BrownoutLatency, r.Runs)
	lat.logY = true
	lat.params = fmt.Sprintf("fan-out %d, %g requests/s, %g %% of answers slow (mean %v, fast %v); brownout %v at mean %v, %d runs",
		t.Fanout, t.Rate, 100*t.SlowShare, t.Slow, t.Fast, t.Brownout, t.BrownoutLatency, r.Runs)
	load := newFigure("tail-load", "Tail: extra requests sent by hedges, second by second", "time (s)", "extra requests (% of backend calls, log scale)")
	load.caption = "Hedges sent per backend call, in per cent: the load hedging adds (a second without hedges is drawn at 0.1 %). Naive fixed-delay hedging copies every call twice during the brownout; yaoki's budget holds it under 5 % and its brownout stop lowers it further."
	load.logY = true
	load.yMin = 0.1
	load.params = lat.params
	load.hline, load.hlineName = 5, "5 % budget"
	if t.Brownout > 0 {
		lat.band = [2]float64{t.Duration.Seconds(), (t.Duration + t.Brownout).Seconds()}
		lat.bandName = "brownout"
		load.band, load.bandName = lat.band, lat.bandName
	}
	for _, p := range r.Points {
		xs := make([]float64, len(p.Seconds))
		ps := make([]float64, len(p.Seconds))
		es := make([]float64, len(p.Seconds))
		for i, s := range p.Seconds {
			xs[i] = float64(i) + 0.5
			ps[i] = 1000 * s.P99
			es[i] = max(100*s.Extra, 0.1)
		}
		s := series{name: p.Policy, xs: xs, style: idx[p.Policy], yaoki: p.Policy == "yaoki"}
		a, b := s, s
		a.ys, b.ys = ps, es
		lat.lines = append(lat.lines, a)
		if p.Policy != "none" {
			load.lines = append(load.lines, b)
		}
	}
	return []*figure{lat, load}
}
