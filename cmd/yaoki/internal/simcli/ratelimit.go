package simcli

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/sim"
)

// rateLimitParams are the flags of `yaoki sim ratelimit`.
type rateLimitParams struct {
	base  sim.RateLimit // everything but the load
	loads []float64
}

// rateLimitRuns is the rate limit's runs per point unless --runs says
// otherwise: the runs of the table in docs/simulator.md.
const rateLimitRuns = 10

func defaultRateLimitParams() *rateLimitParams {
	return &rateLimitParams{base: sim.RateLimit{Clients: 10, PerWindow: 100, Window: time.Second, Duration: 20 * time.Second,
		HopMean: 10 * time.Millisecond}, loads: sim.DefaultLoads()}
}

func newSimRateLimitCmd(o *simOptions) *cobra.Command {
	p := defaultRateLimitParams()
	cmd := o.command("ratelimit", `An API behind a fixed-window rate limiter whose 429s say "Retry-After: 0"`, `An API behind a fixed-window rate limiter, the way many count their quotas: it
admits --per-window attempts in each --window (windows start at t = 0) and
answers every other attempt 429 with Retry-After set to the whole seconds left
in the window, rounded down as a server that writes delay-seconds truncates
them (--round-up: rounded up). With windows of 1 s that is always
"Retry-After: 0", come back now. Calls arrive from --clients clients as
Poisson processes, together --load × --per-window per --window (the load is a
share of the limit), for --duration; every hop takes Exp(--hop-mean).

Compared: yaoki's defaults (a hint of 0 is no hint: the backoff of a 429, from
1 s, applies), the same retrying at once (a client that reads
"Retry-After: 0" as a wait of 0), no retries, 2 retries at once without a
budget, and yours. Reported, for each load: the calls that succeeded, the
attempts and the 429s per call, and the mean latency of the calls that
succeeded (from a call's start to its success).`, &simJob{rateLimit: p}, nil)
	registerRateLimitFlags(cmd.Flags(), p)
	return cmd
}

func registerRateLimitFlags(fs *pflag.FlagSet, p *rateLimitParams) {
	b := &p.base
	fs.IntVar(&b.Clients, "clients", b.Clients, "clients the calls are spread over, each with its own guards")
	fs.Float64SliceVar(&p.loads, "load", p.loads, "loads to run: calls offered per window as a share of --per-window (1 is the limit)")
	fs.IntVar(&b.PerWindow, "per-window", b.PerWindow, "attempts the limiter admits in each window")
	fs.DurationVar(&b.Window, "window", b.Window, "length of the limiter's windows")
	fs.DurationVar(&b.Duration, "duration", b.Duration, "how long calls keep coming")
	fs.DurationVar(&b.HopMean, "hop-mean", b.HopMean, "mean of one network hop (exponential)")
	fs.BoolVar(&b.RoundUp, "round-up", false, `Retry-After is the seconds left rounded up (a 1 s window then says "Retry-After: 1"), not down`)
}

// rateLimitPolicies are the policies the rate limit compares: the
// scenario's own and, as the table of docs/simulator.md, a client that
// retries twice at once with no budget.
func rateLimitPolicies(yours *yourPolicy) []sim.Policy {
	twice := sim.Retries(2)
	twice.Name = "2 retries at once, no budget"
	twice.Description = "up to 2 retries per call, each sent as soon as the 429 arrives (a longer Retry-After is honoured), no budget"
	out := append(sim.RateLimitPolicies(), twice)
	if yours != nil {
		out = append(out, yours.Policy)
	}
	return out
}

// runRateLimit runs the rate-limit sweep for the report.
func (o *simOptions) runRateLimit(p *rateLimitParams, yours *yourPolicy, bar *simProgress) (*rateLimitReport, error) {
	pols, err := o.pick(rateLimitPolicies(yours))
	if err != nil {
		return nil, err
	}
	// In increasing order, so that the tables read down and the plots'
	// lines run left to right; a point's seeds depend on its load, not on
	// its place.
	loads := slices.Compact(slices.Sorted(slices.Values(p.loads)))
	s := sim.RateLimitSweep{RateLimit: p.base, Loads: loads, Runs: o.runsOr(rateLimitRuns), Seed: o.seed,
		Workers: o.workers, Progress: bar.phase("ratelimit")}
	pts, err := s.Run(pols)
	if err != nil {
		return nil, simUsage(err)
	}
	return &rateLimitReport{reportHead: reportHead{Runs: s.Runs, Policies: describe(pols)}, RateLimit: p.base, Points: pts}, nil
}

type rateLimitReport struct {
	reportHead
	RateLimit sim.RateLimit // everything but the load
	Points    []sim.RateLimitPoint
}

// rounding says which way the limiter rounds Retry-After.
func (r *rateLimitReport) rounding() string {
	if r.RateLimit.RoundUp {
		return "up"
	}
	return "down"
}

// where states the scenario's parameters for tables and plots.
func (r *rateLimitReport) where() string {
	l := r.RateLimit
	return fmt.Sprintf("%d clients, %d attempts admitted per %v window, Retry-After rounded %s; calls for %v, hops Exp(%v), %d runs per point",
		l.Clients, l.PerWindow, l.Window, r.rounding(), l.Duration, l.HopMean, r.Runs)
}

func loadLabel(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// tables returns the rate limit's tables, one row per load.
func (r *rateLimitReport) tables() []*pivot {
	where := " (" + r.where() + ")"
	succ := newPivot("ratelimit: calls that succeeded, %"+where, "load", r.Policies)
	amp := newPivot("ratelimit: attempts sent per call", "load", r.Policies)
	lim := newPivot("ratelimit: 429s per call", "load", r.Policies)
	lat := newPivot("ratelimit: mean latency of the calls that succeeded, ms", "load", r.Policies)
	for _, p := range r.Points {
		row := loadLabel(p.Load)
		succ.set(row, p.Policy, fmt.Sprintf("%.2f", 100*p.Success.Mean))
		amp.set(row, p.Policy, fmt.Sprintf("%.3f", p.Amplification.Mean))
		lim.set(row, p.Policy, fmt.Sprintf("%.3f", p.Limited.Mean))
		lat.set(row, p.Policy, ms(p.Latency.Mean))
	}
	return []*pivot{succ, amp, lim, lat}
}

// csvRows writes the rate-limit points in the tidy layout of csvHeader.
func (r *rateLimitReport) csvRows(row csvRow) {
	n := strconv.Itoa(r.RateLimit.Clients)
	for _, p := range r.Points {
		load := num(p.Load)
		row("ratelimit", p.Policy, n, "", load, "", "success", p.Success, p.Runs)
		row("ratelimit", p.Policy, n, "", load, "", "amplification", p.Amplification, p.Runs)
		row("ratelimit", p.Policy, n, "", load, "", "limited", p.Limited, p.Runs)
		row("ratelimit", p.Policy, n, "", load, "", "latency_s", p.Latency, p.Runs)
	}
}

type rateLimitPointJSON struct {
	Policy        string `json:"policy"`
	Load          jnum   `json:"load"`
	Runs          int    `json:"runs"`
	Success       jstat  `json:"success"`
	Amplification jstat  `json:"amplification"`
	Limited       jstat  `json:"limited_per_call"`
	LatencyS      jstat  `json:"latency_s"`
}

type rateLimitJSON struct {
	reportHead
	Clients   int                  `json:"clients"`
	PerWindow int                  `json:"per_window"`
	WindowS   jnum                 `json:"window_s"`
	DurationS jnum                 `json:"duration_s"`
	HopMeanS  jnum                 `json:"hop_mean_s"`
	RoundUp   bool                 `json:"round_up"`
	Points    []rateLimitPointJSON `json:"points"`
}

func (r *rateLimitReport) json() *rateLimitJSON {
	l := r.RateLimit
	out := &rateLimitJSON{reportHead: r.reportHead, Clients: l.Clients, PerWindow: l.PerWindow, WindowS: jnum(l.Window.Seconds()),
		DurationS: jnum(l.Duration.Seconds()), HopMeanS: jnum(l.HopMean.Seconds()), RoundUp: l.RoundUp}
	for _, p := range r.Points {
		out.Points = append(out.Points, rateLimitPointJSON{p.Policy, jnum(p.Load), p.Runs, js(p.Success), js(p.Amplification),
			js(p.Limited), js(p.Latency)})
	}
	return out
}

// nearLimit are the loads of the zoomed success plot: where retries can
// find room in a window that the arrivals' variance left unused.
const nearLo, nearHi = 0.8, 1.25

// figures draws success and attempts per call against the load, and
// success again near the limit, where the policies differ.
func (r *rateLimitReport) figures() []*figure {
	idx := policyIndex(r.Policies)
	const x = "load (calls offered ÷ the limit)"
	succ := newFigure("ratelimit-success", "Rate limit: calls that succeeded", x, "calls that succeeded (%)")
	succ.caption = "Share of calls that eventually succeeded, against the calls offered as a share of the limit. Above the limit no policy can succeed on more than the limit lets through (at load 2, 50 %)."
	succ.yMax = 100.5
	near := newFigure("ratelimit-success-near", "Rate limit: calls that succeeded, near the limit", x, "calls that succeeded (%)")
	near.caption = fmt.Sprintf("The same, for loads from %g to %g: a retry sent at once meets the window that has just refused it, which is still full; a backoff moves it to a later window.", nearLo, nearHi)
	near.yMax = 100.2
	amp := newFigure("ratelimit-amplification", "Rate limit: load on the server", x, "attempts sent per call")
	amp.caption = "Attempts the limiter receives per call the clients meant to make: the retries' cost, which a budget bounds."
	amp.yMin = 0.9
	succ.params, near.params, amp.params = r.where(), r.where(), r.where()
	nearLoads := 0
	for _, pi := range r.Policies {
		var xs, ss, as, nx, ns []float64
		for _, p := range r.Points {
			if p.Policy != pi.Name {
				continue
			}
			xs, ss, as = append(xs, p.Load), append(ss, 100*p.Success.Mean), append(as, p.Amplification.Mean)
			if p.Load >= nearLo && p.Load <= nearHi {
				nx, ns = append(nx, p.Load), append(ns, 100*p.Success.Mean)
			}
		}
		nearLoads = len(nx)
		s := series{name: pi.Name, style: idx[pi.Name], yaoki: pi.Name == "yaoki"}
		s1, s2, s3 := s, s, s
		s1.xs, s1.ys = xs, ss
		s2.xs, s2.ys = nx, ns
		s3.xs, s3.ys = xs, as
		succ.lines, near.lines, amp.lines = append(succ.lines, s1), append(near.lines, s2), append(amp.lines, s3)
	}
	if nearLoads < 2 {
		return []*figure{succ, amp}
	}
	near.yMin = math.Floor(near.lowest()) - 0.5
	return []*figure{succ, near, amp}
}
