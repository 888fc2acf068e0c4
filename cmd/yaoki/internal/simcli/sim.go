package simcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/sim"
)

// simOptions are the flags every `yaoki sim` command shares: output, runs,
// and the policy to try.
type simOptions struct {
	format   string
	out      string
	progress bool
	seed     uint64
	runs     int
	workers  int
	only     []string

	// The policy to try ("yours").
	file        string
	name        string
	base        time.Duration
	cap         time.Duration
	multiplier  float64
	jitter      string
	maxAttempts int
	immediate   bool
	budget      string
	breaker     string
	throttle    string
	shared      bool
}

const simLong = `Simulate retry policies on virtual time and compare them.

The simulator runs yaoki's own policy objects (backoff schedules, retry
budgets, breakers, throttles) through the same decisions the retry loop makes,
on a discrete-event engine: a minute of virtual time takes milliseconds, and
every run is repeatable from its seed.

Scenarios:
  herd      clients contending for one row under optimistic concurrency, all
            starting at once (AWS Architecture Blog, "Exponential Backoff And
            Jitter", 2015): calls and time until every client has written
  outage    a server that fails a share p of attempts (Marc Brooker, "Fixing
            retries with token buckets and circuit breakers", 2022): success
            bought and load added, for p from 0 to 1
  collapse  a server that slows down with the work in flight, clients that
            time out and retry, and a short spike: does the server come back?
  tail      requests that fan out to 100 backends, 1 % of whose answers are
            slow (Dean and Barroso, "The Tail at Scale", 2013), then a
            brownout: hedged requests, latency gained for load added
  ratelimit an API behind a fixed-window rate limiter whose 429s say
            "Retry-After: 0": what retrying at once, or after a backoff, buys
            near and above the limit

Without a scenario, yaoki sim compares the strategies on herd, outage and
collapse (collapse at 10 runs a point) and writes the report (plots in SVG and
PNG, an index.html, the numbers in CSV and JSON) to --out.

Each scenario compares its published policies with yaoki's defaults ("yaoki").
Set any policy flag (--base, --cap, --jitter, --max-attempts, --budget, ...)
to add your own ("yours", or --name), or load it from a policy document with
--policy FILE (the simulated errors are HTTP.500, HTTP.503 with --overload,
HTTP.409 for the herd's conflicts, HTTP.429 for the rate limit and
States.Timeout).`

// NewCommand returns the yaoki sim command and its scenarios (herd,
// outage, collapse, tail, ratelimit, all), built anew at each call.
func NewCommand() *cobra.Command {
	o := &simOptions{}
	cmd := o.command("sim [herd|outage|collapse|tail|ratelimit|all]", "Simulate retry policies on virtual time: herd, outage, collapse, tail, ratelimit", simLong,
		&simJob{herd: defaultHerdParams(), outage: defaultOutageParams(), collapse: defaultCollapseParams(), collapseRuns: 10}, nil)
	cmd.Example = `  yaoki sim                                  # herd, outage and collapse, report in yaoki-report/
  yaoki sim herd --clients 50,100 --runs 20
  yaoki sim outage --p 0.01,0.1,0.5 --budget share --format csv
  yaoki sim outage --clients 10,100,1000 --total-rate 100
  yaoki sim collapse --peak 60,80,100 --width 5s,10s --base 1s
  yaoki sim tail --runs 5
  yaoki sim ratelimit --load 0.9,1,1.1 --round-up`
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newSimHerdCmd(o), newSimOutageCmd(o), newSimCollapseCmd(o), newSimTailCmd(o), newSimRateLimitCmd(o), newSimAllCmd(o))
	tidyDefaults(cmd)
	return cmd
}

func (o *simOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.format, "format", "table", "what to print on stdout: table, csv or json")
	fs.StringVar(&o.out, "out", "yaoki-report", `folder for the report (plots, index.html, CSV, JSON); "" for none`)
	fs.BoolVar(&o.progress, "progress", false, "show a progress bar on stderr even when it is not a terminal")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the sweep: the same seed gives the same numbers")
	fs.IntVar(&o.runs, "runs", 0, "runs per point (default: herd 100, outage 3, collapse 20 (10 in yaoki sim without a scenario), tail 3, ratelimit 10)")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "goroutines running simulations (results do not depend on it)")
	fs.StringSliceVar(&o.only, "policies", nil, "only these policies, by name (default: all of the scenario's)")

	fs.StringVar(&o.file, "policy", "", "your policy: a policy document in JSON or YAML (Step Functions Retry form; see Policy documents)")
	fs.StringVar(&o.name, "name", "yours", "name of your policy in tables and plots (with --policy: the file's name)")
	fs.DurationVar(&o.base, "base", 0, "your policy: wait before the first retry, before jitter (default 50ms)")
	fs.DurationVar(&o.cap, "cap", 0, "your policy: largest single wait (default 20s)")
	fs.Float64Var(&o.multiplier, "multiplier", 0, "your policy: growth of the wait per retry, > 1 (default 2)")
	fs.StringVar(&o.jitter, "jitter", "", "your policy: full, equal, decorrelated or none (default full)")
	fs.IntVar(&o.maxAttempts, "max-attempts", 0, "your policy: attempts, counting the first (default 3; -1 unlimited; herd: unlimited)")
	fs.BoolVar(&o.immediate, "immediate", false, "your policy: retry at once, without any wait")
	fs.StringVar(&o.budget, "budget", "", "your policy: retry budget: "+strings.Join(simBudgetNames(), ", "))
	fs.StringVar(&o.breaker, "breaker", "", "your policy: circuit breaker: "+strings.Join(simBreakerNames(), ", "))
	fs.StringVar(&o.throttle, "throttle", "", "your policy: client-side throttle: "+strings.Join(simThrottleNames(), ", "))
	fs.BoolVar(&o.shared, "shared", false, "your policy: one set of guards for all clients (a fleet-wide store) instead of one per client")
}

// policyFlags lists the flags that define "yours".
var simPolicyFlags = []string{"policy", "name", "base", "cap", "multiplier", "jitter", "max-attempts", "immediate", "budget", "breaker", "throttle", "shared"}

// simJob says which scenarios to run, with which parameters; a nil
// parameter set skips its scenario.
type simJob struct {
	herd      *herdParams
	outage    *outageParams
	collapse  *collapseParams
	tail      *tailParams
	rateLimit *rateLimitParams
	// collapseRuns is the collapse's runs per point unless --runs says
	// otherwise: 20, or 10 in the default job (which keeps it under 10 s
	// of CPU).
	collapseRuns int
}

// run runs job and writes what --format and --out ask for.
// command is a `yaoki sim` command: it takes no arguments, refuses its
// flags when check (if not nil) says so, and runs job.
func (o *simOptions) command(use, short, long string, job *simJob, check func(*pflag.FlagSet) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: long, Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if check != nil {
				if err := check(cmd.Flags()); err != nil {
					return err
				}
			}
			return o.run(cmd, job)
		}}
}

func (o *simOptions) run(cmd *cobra.Command, job *simJob) error {
	switch o.format {
	case "table", "csv", "json":
	default:
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("--format %q: want table, csv or json", o.format))
	}
	// More runs than maxRuns a point would take days and keep every
	// run's result in memory until the point is done.
	const maxRuns = 1_000_000
	if o.runs < 0 || o.runs > maxRuns {
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("--runs %d: want 1 to %d (0 for each scenario's default)", o.runs, maxRuns))
	}
	if err := refuseZeros(cmd.Flags()); err != nil {
		return err
	}
	if o.workers < 1 {
		return cli.Exit(cli.ExitUsage, fmt.Sprintf("--workers %d: want ≥ 1 (leave the flag out for one per CPU, %s)", o.workers, cmd.Flags().Lookup("workers").DefValue))
	}
	yours, err := o.yours(cmd)
	if err != nil {
		return err
	}
	if err := checkOutFolder(o.out); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	bar := newSimProgress(stderr, o.progress || isTerminal(stderr))
	rep := &simReport{Seed: o.seed, Command: commandLine(os.Args[1:])}
	started := time.Now()

	if p := job.herd; p != nil {
		pols, err := o.pick(herdPolicies(p, yours))
		if err != nil {
			return err
		}
		sd, err := zeroAsNone("hop-sd", p.hopSD)
		if err != nil {
			return err
		}
		s := sim.HerdSweep{Herd: sim.Herd{HopMean: p.hopMean, HopStdDev: sd}, Clients: p.clients,
			Runs: o.runsOr(100), Seed: o.seed, Workers: o.workers, Progress: bar.phase("herd")}
		pts, err := s.Run(pols)
		if err != nil {
			return simUsage(err)
		}
		hop := sim.Herd{HopMean: p.hopMean, HopStdDev: p.hopSD} // as given, for the report
		rep.Herd = &herdReport{reportHead: reportHead{Runs: s.Runs, Policies: describe(pols)}, Points: pts, Hop: hop, PostBase: p.postBase, PostCap: p.postCap}
	}
	if p := job.outage; p != nil {
		pols, err := o.pick(outagePolicies(yours))
		if err != nil {
			return err
		}
		r := &outageReport{reportHead: reportHead{Runs: o.runsOr(3), Policies: describe(pols)}, Duration: p.duration, HopMean: p.hopMean, Overload: p.overload}
		for _, n := range p.clients {
			rate := p.rate
			if p.totalRate > 0 {
				rate = p.totalRate / float64(n)
			}
			s := sim.OutageSweep{Outage: sim.Outage{Clients: n, Rate: rate, Duration: p.duration, HopMean: p.hopMean, Overload: p.overload},
				FailureRates: p.rates, Runs: r.Runs, Seed: o.seed, Workers: o.workers, Progress: bar.phase(fmt.Sprintf("outage/%d", n))}
			pts, err := s.Run(pols)
			if err != nil {
				return simUsage(err)
			}
			r.Points = append(r.Points, pts...)
			r.Rates = append(r.Rates, rate)
		}
		r.Clients = p.clients
		rep.Outage = r
	}
	if p := job.collapse; p != nil {
		pols, err := o.pick(collapsePolicies(yours))
		if err != nil {
			return err
		}
		runs := 20
		if job.collapseRuns > 0 {
			runs = job.collapseRuns
		}
		at, err := zeroAsNone("at", p.at)
		if err != nil {
			return err
		}
		base := p.base
		if base.ServicePerRequest, err = zeroAsNone("service-per-request", base.ServicePerRequest); err != nil {
			return err
		}
		s := sim.CollapseSweep{Collapse: base, Triggers: p.triggers(at), Runs: o.runsOr(runs), Seed: o.seed,
			Workers: o.workers, Progress: bar.phase("collapse")}
		pts, err := s.Run(pols)
		if err != nil {
			return simUsage(err)
		}
		rep.Collapse = &collapseReport{reportHead: reportHead{Runs: s.Runs, Policies: describe(pols)}, Base: p.base, Points: pts}
	}
	if p := job.tail; p != nil {
		if rep.Tail, err = o.runTail(p, yours, bar); err != nil {
			return err
		}
	}
	if p := job.rateLimit; p != nil {
		if rep.RateLimit, err = o.runRateLimit(p, yours, bar); err != nil {
			return err
		}
	}
	rep.Elapsed = time.Since(started)

	stdout := cmd.OutOrStdout()
	switch o.format {
	case "csv":
		err = rep.writeCSV(stdout)
	case "json":
		err = rep.writeJSON(stdout)
	default:
		err = rep.writeTables(stdout)
	}
	if err != nil {
		return cli.Exit(1, err.Error())
	}
	if o.out == "" {
		fmt.Fprintf(stderr, "simulated in %.1f s\n", rep.Elapsed.Seconds())
		return nil
	}
	index, err := rep.writeFolder(o.out)
	if err != nil {
		return cli.Exit(1, fmt.Sprintf("sim: writing the report: %v", err))
	}
	fmt.Fprintf(stderr, "report: %s (simulated in %.1f s)\n", index, rep.Elapsed.Seconds())
	return nil
}

func (o *simOptions) runsOr(def int) int {
	if o.runs > 0 {
		return o.runs
	}
	return def
}

// pick keeps the policies named by --policies, in their order.
func (o *simOptions) pick(all []sim.Policy) ([]sim.Policy, error) {
	return pickNamed(o.only, all, func(p sim.Policy) string { return p.Name }, "this scenario")
}

// pickNamed keeps the policies of all that only names, in its order (all
// of them when only is empty); where says where they were looked for.
func pickNamed[P any](only []string, all []P, name func(P) string, where string) ([]P, error) {
	var names []string
	for _, p := range all {
		if n := name(p); slices.Contains(names, n) {
			// Only yours, last, can take a name already there.
			return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--name %q: %s has a policy of that name already; give yours another (--name)", n, where))
		}
		names = append(names, name(p))
	}
	if len(only) == 0 {
		return all, nil
	}
	var out []P
	for i := 0; i < len(only); {
		// --policies splits its list at commas, also those inside a name
		// ("yaoki, retrying at once"): take the longest run of pieces that,
		// joined again, names a policy.
		k, n := -1, 0
		for j := len(only); j > i && k < 0; j-- {
			k, n = slices.Index(names, strings.Join(only[i:j], ",")), j-i
		}
		if k < 0 {
			quoted := make([]string, len(names))
			for q, name := range names {
				quoted[q] = strconv.Quote(name)
			}
			return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--policies: no policy %q in %s; it has: %s", only[i], where, strings.Join(quoted, ", ")))
		}
		if slices.ContainsFunc(out, func(p P) bool { return name(p) == names[k] }) {
			return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--policies: %q is named twice: name each policy once", names[k]))
		}
		out = append(out, all[k])
		i += n
	}
	return out, nil
}

// yourPolicy is the policy of the policy flags, and its guards in words.
type yourPolicy struct {
	sim.Policy
	guards string
}

// yours builds the policy of the policy flags, or nil when none was set.
func (o *simOptions) yours(cmd *cobra.Command) (*yourPolicy, error) {
	set := false
	for _, f := range simPolicyFlags {
		set = set || cmd.Flags().Changed(f)
	}
	if !set {
		return nil, nil
	}
	if o.file != "" {
		return o.document(cmd)
	}
	p := sim.Policy{Name: o.name, MaxAttempts: o.maxAttempts, Immediate: o.immediate, Shared: o.shared,
		Backoff: backoff.Schedule{Base: o.base, Cap: o.cap, Multiplier: o.multiplier}}
	if o.jitter != "" {
		j, err := backoff.ParseJitter(o.jitter)
		if err != nil {
			return nil, cli.Usagef("--jitter %q: want full, equal, decorrelated or none", o.jitter)
		}
		p.Backoff.Jitter = j
	}
	if o.maxAttempts < retry.Unlimited || cmd.Flags().Changed("max-attempts") && o.maxAttempts == 0 {
		return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--max-attempts %d: want ≥ 1, or -1 for unlimited (leave the flag out for the scenario's default)", o.maxAttempts))
	}
	if err := p.Validate(); err != nil {
		var ce *configerr.Error
		if errors.As(err, &ce) && simFlags[ce.Field] != "" {
			return nil, simUsage(err) // names the flag: "--multiplier 1: out of range; want a finite value > 1"
		}
		return nil, cli.Exit(cli.ExitUsage, "your policy: "+strings.TrimPrefix(err.Error(), "retry: invalid configuration: "))
	}
	guards, desc, err := simGuardsOf(o.budget, o.breaker, o.throttle)
	if err != nil {
		return nil, err
	}
	p.Guards = guards
	p.Description = describePolicy(p, desc)
	return &yourPolicy{Policy: p, guards: desc}, nil
}

// document builds "yours" from the --policy file.
func (o *simOptions) document(cmd *cobra.Command) (*yourPolicy, error) {
	for _, f := range []string{"base", "cap", "multiplier", "jitter", "immediate", "budget", "breaker", "throttle"} {
		if cmd.Flags().Changed(f) {
			return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--%s cannot be combined with --policy: set it in the file, or drop --policy", f))
		}
	}
	doc, err := policyfile.Load(o.file)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err.Error())
	}
	if cmd.Flags().Changed("max-attempts") {
		if o.maxAttempts < 1 {
			return nil, cli.Exit(cli.ExitUsage, fmt.Sprintf("--max-attempts %d with --policy: want ≥ 1 (attempts, counting the first)", o.maxAttempts))
		}
		doc.MaxTotalAttempts = o.maxAttempts
		if err := doc.Validate(); err != nil {
			return nil, cli.Exit(cli.ExitUsage, err.Error())
		}
	}
	name := o.name
	if !cmd.Flags().Changed("name") {
		name = filepath.Base(o.file)
	}
	for _, i := range sim.Unmatchable(doc) {
		r := doc.Retry[i]
		fmt.Fprintf(cmd.ErrOrStderr(), "yaoki: warning: %s: Retry[%d] (%s) can never match: the simulated errors are HTTP.500, HTTP.503 (--overload), HTTP.409 (herd), HTTP.429 (ratelimit) and States.Timeout (collapse)\n",
			o.file, i, strings.Join(r.ErrorEquals, ", "))
	}
	p := sim.PolicyOf(name, doc)
	p.Shared = o.shared
	var guards []string
	if doc.Budget != nil {
		guards = append(guards, "its share budget")
	}
	if doc.Breaker != nil {
		guards = append(guards, "its breaker")
	}
	if doc.Mode == policy.Adaptive {
		guards = append(guards, "adaptive mode (the CUBIC rate limiter)")
		if doc.Budget == nil {
			guards = append(guards, "the AWS retry quota of adaptive mode")
		}
	}
	p.Description = fmt.Sprintf("the policy document %s: %d attempts, %d retriers", o.file, doc.Attempts(), len(doc.Retry))
	if len(guards) > 0 {
		p.Description += ", " + strings.Join(guards, ", ")
		if p.Shared {
			p.Description += " (shared by all clients)"
		} else {
			p.Description += " (one per client)"
		}
	}
	return &yourPolicy{Policy: p, guards: strings.Join(guards, ", ")}, nil
}

// describePolicy says in words what p does, for tables and the report.
func describePolicy(p sim.Policy, guards string) string {
	var b strings.Builder
	switch {
	case p.MaxAttempts == retry.Unlimited:
		b.WriteString("unlimited attempts")
	case p.MaxAttempts == 0:
		fmt.Fprintf(&b, "%d attempts", retry.DefaultMaxAttempts)
	default:
		fmt.Fprintf(&b, "%d attempts", p.MaxAttempts)
	}
	if p.Immediate {
		b.WriteString(", retries at once")
	} else {
		s := p.Backoff.WithDefaults()
		switch s.Jitter {
		case backoff.Decorrelated:
			fmt.Fprintf(&b, ", decorrelated jitter from %v, cap %v", s.Base, s.Cap)
		default:
			fmt.Fprintf(&b, ", %v ×%g from %v, cap %v, %v jitter", s.Kind, s.Multiplier, s.Base, s.Cap, s.Jitter)
		}
	}
	if guards != "" {
		b.WriteString(", " + guards)
		if p.Shared {
			b.WriteString(" (shared by all clients)")
		} else {
			b.WriteString(" (one per client)")
		}
	}
	return b.String()
}

func describe(ps []sim.Policy) []policyInfo {
	out := make([]policyInfo, len(ps))
	for i, p := range ps {
		out[i] = policyInfo{Name: p.Name, Description: p.Description}
	}
	return out
}

// policyInfo names a policy and says what it does.
type policyInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// simProgress draws one progress bar per phase on stderr.
type simProgress struct {
	w  io.Writer
	on bool
}

func newSimProgress(w io.Writer, on bool) *simProgress { return &simProgress{w: w, on: on} }

// phase returns the Progress of one sweep, or nil when the bar is off.
func (p *simProgress) phase(name string) sim.Progress {
	if !p.on {
		return quietProgress(p.w, name, time.Now)
	}
	const width = 30
	return func(done, total int) {
		n := done * width / total
		fmt.Fprintf(p.w, "\r%-13s [%s%s] %3d/%d", name, strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
		if done == total {
			fmt.Fprintln(p.w)
		}
	}
}
