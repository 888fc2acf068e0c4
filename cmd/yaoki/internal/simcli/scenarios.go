package simcli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/sim"
)

// herdParams are the flags of `yaoki sim herd`.
type herdParams struct {
	clients       []int
	hopMean       time.Duration
	hopSD         time.Duration
	postBase      time.Duration
	postCap       time.Duration
	sweepDefaults bool
}

func defaultHerdParams() *herdParams {
	return &herdParams{clients: sim.DefaultHerdClients(), hopMean: 10 * time.Millisecond, hopSD: 2 * time.Millisecond,
		postBase: 5 * time.Millisecond, postCap: 2 * time.Second}
}

func newSimHerdCmd(o *simOptions) *cobra.Command {
	p := defaultHerdParams()
	cmd := o.command("herd", "Clients contending for one row, all at once (AWS Architecture Blog, 2015)", `Clients contending for one row under optimistic concurrency, all starting at
t = 0 (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015). Each
client wants one successful write: it reads the row's version, then writes with
it; the write succeeds if the version has not changed since. Every network hop
takes |Normal(--hop-mean, --hop-sd)|. After a failed write the client waits as
its policy says and reads again, until it succeeds (unless --max-attempts
limits your policy).

Compared: the post's strategies with its base and cap (none, exponential,
full, equal, decorrelated), yaoki's default backoff, and yours. Reported: the
writes that reached the server, and the time until the last client's write.`, &simJob{herd: p}, nil)
	fs := cmd.Flags()
	fs.IntSliceVar(&p.clients, "clients", p.clients, "client counts to run")
	fs.DurationVar(&p.hopMean, "hop-mean", p.hopMean, "mean of one network hop")
	fs.DurationVar(&p.hopSD, "hop-sd", p.hopSD, "standard deviation of one network hop (0: none, every hop takes --hop-mean)")
	fs.DurationVar(&p.postBase, "post-base", p.postBase, "base of the post's strategies")
	fs.DurationVar(&p.postCap, "post-cap", p.postCap, "cap of the post's strategies")
	return cmd
}

// herdPolicies are the policies the herd compares: backoff schedules. In
// the herd every client retries a conflict (a 409, which yaoki's defaults
// do not retry) until its write is in, so yaoki's line is its default
// schedule alone, without attempt limit or budget; yours keeps no attempt
// limit unless --max-attempts says otherwise.
func herdPolicies(p *herdParams, yours *yourPolicy) []sim.Policy {
	out := sim.HerdStrategies(p.postBase, p.postCap)
	out = append(out, sim.Policy{Name: "yaoki schedule", MaxAttempts: retry.Unlimited,
		Description: "yaoki's default schedule (exponential ×2 with full jitter from 50ms, cap 20s), no attempt limit, no budget: the defaults do not retry a 409 conflict, so this line compares schedules only"})
	if yours != nil {
		mine := yours.Policy
		if mine.MaxAttempts == 0 {
			mine.MaxAttempts = retry.Unlimited
			mine.Description = describePolicy(mine, yours.guards)
		}
		out = append(out, mine)
	}
	return out
}

// outageParams are the flags of `yaoki sim outage`.
type outageParams struct {
	clients   []int
	rate      float64
	totalRate float64
	duration  time.Duration
	hopMean   time.Duration
	rates     []float64
	overload  bool
}

func defaultOutageParams() *outageParams {
	return &outageParams{clients: []int{100}, rate: 10, duration: 10 * time.Second, hopMean: 10 * time.Millisecond,
		rates: sim.DefaultFailureRates()}
}

func newSimOutageCmd(o *simOptions) *cobra.Command {
	p := defaultOutageParams()
	cmd := o.command("outage", "A server failing a share of attempts (Marc Brooker, 2022)", `A server that fails each attempt independently with probability p, with no
capacity limit (Marc Brooker, "Fixing retries with token buckets and circuit
breakers", 2022). Each client sends calls as a Poisson process of --rate per
second for --duration, then the calls in flight drain; every hop takes
Exp(--hop-mean). Reported, for each p: success (calls that eventually
succeeded), amplification (attempts sent per call: the load the server sees
for the load the callers meant to send) and the calls refused locally before
any attempt (by a breaker or a throttle).

Compared: the post's policies (no retries, 3 retries, a token bucket per
client, a retry breaker per client, all retrying at once), yaoki's defaults
("yaoki": the recommended budget per client), yaoki with one budget for the
whole fleet ("yaoki + fleet budget", what redis.Budget keeps), yaoki with the
default breaker per client ("yaoki + breaker"), and yours. With several --clients and --total-rate, the same traffic is split
over more, smaller clients (the post: per-client estimates of the failure rate
get worse).`, &simJob{outage: p}, func(fs *pflag.FlagSet) error {
		if fs.Changed("total-rate") && fs.Changed("rate") {
			return cli.Exit(cli.ExitUsage, "--rate and --total-rate: give one (per client, or split over the clients)")
		}
		return nil
	})
	fs := cmd.Flags()
	fs.IntSliceVar(&p.clients, "clients", p.clients, "client counts to run (one sweep each)")
	fs.Float64Var(&p.rate, "rate", p.rate, "calls per second from each client")
	fs.Float64Var(&p.totalRate, "total-rate", 0, "calls per second from all clients together, split evenly (replaces --rate)")
	fs.DurationVar(&p.duration, "duration", p.duration, "how long calls keep coming")
	fs.DurationVar(&p.hopMean, "hop-mean", p.hopMean, "mean of one network hop (exponential)")
	fs.Float64SliceVar(&p.rates, "p", p.rates, "failure rates to run, each in [0, 1]")
	fs.BoolVar(&p.overload, "overload", false, "the failures are overload answers (503, 429): throttles count them, retries wait from 1 s")
	return cmd
}

// outagePolicies are the policies the outage compares.
// Besides the post's anchors and yaoki's defaults, it draws the guard sets
// that add to them: one budget for the fleet (redis.Budget), and the
// default breaker, which fails fast but refuses first attempts.
func outagePolicies(yours *yourPolicy) []sim.Policy {
	out := append(sim.OutageAnchors(), yaokiPolicy(), sim.YaokiFleet(), sim.YaokiBreaker())
	if yours != nil {
		out = append(out, yours.Policy)
	}
	return out
}

// collapseParams are the flags of `yaoki sim collapse`.
type collapseParams struct {
	base    sim.Collapse
	kind    string
	at      time.Duration
	widths  []time.Duration
	peaks   []float64
	factors []float64
}

func defaultCollapseParams() *collapseParams {
	base := sim.Collapse{Rate: 40, Timeout: 3 * time.Second, HopMean: 100 * time.Millisecond, ServiceBase: time.Second,
		ServicePerRequest: 10 * time.Millisecond, Duration: 80 * time.Second, Threshold: 150, Clients: 1}
	return &collapseParams{base: base, kind: "spike", at: 20 * time.Second, widths: []time.Duration{5 * time.Second, 10 * time.Second},
		peaks: []float64{50, 60, 70, 80, 90, 100}, factors: []float64{1.5, 2, 3}}
}

// triggers returns one trigger per width and peak (or factor), each from
// at.
func (p *collapseParams) triggers(at time.Duration) []sim.Trigger {
	var out []sim.Trigger
	switch p.kind {
	case "none":
		return []sim.Trigger{{Kind: sim.NoTrigger}}
	case "slowdown":
		for _, w := range p.widths {
			for _, f := range p.factors {
				out = append(out, sim.Trigger{Kind: sim.Slowdown, At: at, Width: w, Factor: f})
			}
		}
	default:
		for _, w := range p.widths {
			for _, peak := range p.peaks {
				out = append(out, sim.Trigger{Kind: sim.Spike, At: at, Width: w, Peak: peak})
			}
		}
	}
	return out
}

func newSimCollapseCmd(o *simOptions) *cobra.Command {
	p := defaultCollapseParams()
	cmd := o.command("collapse", "A metastable failure: a short spike, and retries that keep the server down", `A metastable failure. Requests arrive as a Poisson process of --rate per
second. The server never cancels work and slows down with the work in flight:
an attempt's service time is --service-base + --service-per-request × C, C the
attempts in service including it. Clients time out after --timeout and retry
(3 attempts in all, or as your policy says). A trigger from --at for --width
(a spike of arrivals to --peak per second, or a slowdown of service by
--factor) pushes the server over; without retries it would come back, but
once answers take longer than the timeout every attempt times out, the retries
add load, and the server stays down. A run is collapsed if more than
--threshold attempts are in service at its end (--duration).

Compared: clients without backoff, with backoff and jitter (from 10 s), yaoki's
defaults, and yours. Reported: runs collapsed at the end, recovery time after
the trigger, attempts per request, and goodput second by second.`, &simJob{collapse: p}, func(*pflag.FlagSet) error {
		for _, f := range p.factors {
			if !(f > 1) && f != 0 { // 0 is refuseZeros's, in its words
				return cli.Usagef("--factor %v: want > 1 (the slowdown multiplies the service time by it)", f)
			}
		}
		switch p.kind {
		case "spike", "slowdown", "none":
			return nil
		}
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("--trigger %q: want spike, slowdown or none", p.kind))
	})
	registerCollapseFlags(cmd.Flags(), p)
	return cmd
}

func registerCollapseFlags(fs *pflag.FlagSet, p *collapseParams) {
	b := &p.base
	fs.Float64Var(&b.Rate, "rate", b.Rate, "requests per second before and after the trigger")
	fs.StringVar(&p.kind, "trigger", p.kind, "spike, slowdown or none")
	fs.DurationVar(&p.at, "at", p.at, "when the trigger starts (0s: at the start of the run)")
	fs.DurationSliceVar(&p.widths, "width", p.widths, "how long the trigger lasts (one sweep point each)")
	fs.Float64SliceVar(&p.peaks, "peak", p.peaks, "spike: requests per second during the trigger")
	fs.Float64SliceVar(&p.factors, "factor", p.factors, "slowdown: service time multiplied during the trigger")
	fs.DurationVar(&b.Timeout, "timeout", b.Timeout, "how long a client waits for an answer")
	fs.DurationVar(&b.HopMean, "hop-mean", b.HopMean, "mean of one network hop (exponential)")
	fs.DurationVar(&b.ServiceBase, "service-base", b.ServiceBase, "service time of an attempt on an idle server")
	fs.DurationVar(&b.ServicePerRequest, "service-per-request", b.ServicePerRequest, "service time added by each attempt in service (0: none, the service time does not grow)")
	fs.DurationVar(&b.Duration, "duration", b.Duration, "length of a run")
	fs.IntVar(&b.Threshold, "threshold", b.Threshold, "attempts in service above which the server counts as collapsed")
	fs.IntVar(&b.Clients, "clients", b.Clients, "client processes the requests are spread over, each with its own guards")
}

// collapsePolicies are the policies the collapse compares.
func collapsePolicies(yours *yourPolicy) []sim.Policy {
	out := append(sim.CollapseAnchors(), yaokiPolicy())
	if yours != nil {
		out = append(out, yours.Policy)
	}
	return out
}

func newSimAllCmd(o *simOptions) *cobra.Command {
	return o.command("all", "All the scenarios with their default parameters, in one report", "",
		&simJob{herd: defaultHerdParams(), outage: defaultOutageParams(), collapse: defaultCollapseParams(), tail: defaultTailParams(),
			rateLimit: defaultRateLimitParams()}, nil)
}
