package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/retry"
)

type planOptions struct {
	pf     flags.Policy
	layers int
	price  float64
	rows   int
	json   bool
}

// NewCommand returns the yaoki plan command, built anew at each call.
func NewCommand() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan [flags]",
		Short: "Print a retry policy's schedule, worst case and warnings",
		Long: `plan prints, for a retry policy given by flags or by a --policy file, the wait
before each attempt (least, mean and greatest over the jitter), the worst case
in time (waits plus per-attempt timeouts) at the start and end of each
attempt, and warnings: no cap on the waits, no jitter, unbounded attempts, a
worst case longer than the deadline, the amplification of the same policy
stacked over --layers layers, and the cost of the extra calls at
--price-per-million. It sends nothing anywhere.
` + flags.PolicyHelp,
		Example: `  # the defaults: 3 attempts, ×2 from 50ms, full jitter, 20s cap
  yaoki plan

  # 6 attempts from 100ms, capped at 1s, 2s per attempt, 10s in all
  yaoki plan --max-attempts 6 --base 100ms --cap 1s --attempt-timeout 2s --max-time 10s

  # the same policy in 3 layers of services, at 0.40 per million calls
  yaoki plan --max-attempts 3 --layers 3 --price-per-million 0.40

  # a Step Functions Retry block, as JSON for scripts
  yaoki plan --policy retry.json --json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.layers < 1 {
				return cli.Usagef("--layers %d: want ≥ 1 (the number of services, one above the other, that each retry)", o.layers)
			}
			if o.price < 0 || math.IsNaN(o.price) {
				return cli.Usagef("--price-per-million %v: want a price ≥ 0", o.price)
			}
			if o.rows < 1 {
				return cli.Usagef("--rows %d: want ≥ 1", o.rows)
			}
			cp, err := o.pf.Build(cmd)
			if err != nil {
				return err
			}
			pl := makePlan(cp, o)
			if o.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(pl)
			}
			pl.print(cmd.OutOrStdout())
			return nil
		},
	}
	o.pf.Register(cmd.Flags())
	cmd.Flags().IntVar(&o.layers, "layers", 1, "services one above the other that each retry with this policy")
	cmd.Flags().Float64Var(&o.price, "price-per-million", 0, "price of a million calls, to show what retries cost")
	cmd.Flags().IntVar(&o.rows, "rows", 20, "most rows printed per schedule")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the plan as JSON (durations in seconds)")
	return cmd
}

// plan is what `yaoki plan` prints; its JSON form is the --json output.
type plan struct {
	Source         string     `json:"source"`
	Mode           string     `json:"mode"`        // default, standard, adaptive or off
	ModeSource     string     `json:"mode_source"` // where the mode came from
	Catch          []catch    `json:"catch,omitempty"`
	Attempts       int        `json:"attempts"` // 0: unlimited
	AttemptTimeout float64    `json:"attempt_timeout_s"`
	Deadline       float64    `json:"deadline_s"`
	MaxRetryAfter  float64    `json:"max_retry_after_s"`
	Tracks         []track    `json:"schedules"`
	WorstCase      float64    `json:"worst_case_s"`       // waits and timeouts of every attempt; +Inf: unbounded
	WorstWithHints float64    `json:"worst_with_hints_s"` // when every wait is the longest server hint honoured
	Layers         int        `json:"layers"`
	BottomCalls    float64    `json:"bottom_calls"` // calls at the bottom layer for one request that fails for good
	Price          float64    `json:"price_per_million,omitempty"`
	CostFailing    float64    `json:"cost_per_million_failing,omitempty"`
	Warnings       []string   `json:"warnings"`
	Notes          []string   `json:"notes,omitempty"`
	sched          []schedule // the tracks' schedules
}

// catch is a catcher of a policy document: where errors go once retries
// end.
type catch struct {
	ErrorEquals []string `json:"error_equals"`
	Next        string   `json:"next"`
	ResultPath  *string  `json:"result_path"` // null: the error is discarded
}

// track is one schedule of waits: the only one for flags, one per retrier
// for a document.
type track struct {
	Label   string  `json:"label"`
	Retries int     `json:"retries"` // -1: unlimited
	Kind    string  `json:"kind"`
	Base    float64 `json:"base_s"`
	Rate    float64 `json:"multiplier"`
	Cap     float64 `json:"cap_s"` // 0: no cap
	Jitter  string  `json:"jitter"`
	// AtOnce: every retry is sent at once, without a wait (--cap 0,
	// IntervalSeconds 0); Base and Cap are then 0.
	AtOnce bool  `json:"at_once,omitempty"`
	Rows   []row `json:"attempts"`
	More   int   `json:"more_rows,omitempty"`
}

// row is attempt Attempt of a call whose every failure uses this schedule.
type row struct {
	Attempt    int     `json:"attempt"`
	WaitMin    float64 `json:"wait_min_s"`
	WaitMean   float64 `json:"wait_mean_s"`
	WaitMax    float64 `json:"wait_max_s"`
	WorstStart float64 `json:"worst_start_s"` // latest start: every earlier wait and attempt at its longest
	WorstEnd   float64 `json:"worst_end_s"`   // WorstStart plus the per-attempt timeout
	AfterDL    bool    `json:"after_deadline,omitempty"`
}

type schedule struct {
	s       backoff.Schedule
	retries int // -1: unlimited
	noCap   bool
}

const noCapDuration = time.Duration(math.MaxInt64)

// atOnce reports whether s waits nothing before any retry: a cap of 1 ns,
// which is how --cap 0, --base 0 with --cap 0, and a retrier's
// IntervalSeconds 0 reach backoff (it reads a zero Cap as its 20 s
// default). Its waits are shown as 0, not as 1 ns, which the user never
// wrote and which no clock tells apart from 0.
func atOnce(s backoff.Schedule) bool { return s.Cap == 1 }

func makePlan(cp *flags.Resolved, o *planOptions) *plan {
	p := cp.Retry
	pl := &plan{Source: cp.Source, Attempts: cp.Attempts(), AttemptTimeout: p.AttemptTimeout.Seconds(),
		Deadline: p.MaxElapsed.Seconds(), Layers: o.layers, Price: o.price}
	pl.Mode, pl.ModeSource = cp.Mode, cp.ModeFrom
	pl.MaxRetryAfter = retry.DefaultMaxRetryAfter.Seconds()
	switch {
	case p.MaxRetryAfter == 1: // --max-retry-after 0: no hint honoured
		pl.MaxRetryAfter = 0
	case p.MaxRetryAfter > 0:
		pl.MaxRetryAfter = p.MaxRetryAfter.Seconds()
	}
	if cp.Doc != nil {
		for _, c := range cp.Doc.Catch {
			k := catch{ErrorEquals: c.ErrorEquals, Next: c.Next}
			if !c.DiscardResult {
				rp := c.ResultPath
				if rp == "" {
					rp = "$" // Step Functions' default: the error replaces the input
				}
				k.ResultPath = &rp
			}
			pl.Catch = append(pl.Catch, k)
		}
	}
	if cp.Doc == nil {
		retries := pl.Attempts - 1
		if pl.Attempts == 0 {
			retries = -1
		}
		pl.addTrack("every retried error", schedule{s: p.Backoff.WithDefaults(), retries: retries}, o.rows)
		if retries != 0 {
			th := p.Backoff.WithDefaults()
			th.Base = retry.DefaultThrottleBase
			if p.ThrottleBase > 0 {
				th.Base = p.ThrottleBase
			}
			if atOnce(th) {
				pl.Notes = append(pl.Notes, "throttled answers (429, 503 in yaoki http) are retried at once too: a cap of 0 holds every wait at 0")
			} else {
				pl.Notes = append(pl.Notes, fmt.Sprintf("throttled answers (429, 503 in yaoki http) start from %v instead: worst case %s",
					th.Base, fmtSec(pl.worst([]schedule{{s: th, retries: retries}}))))
			}
		}
	} else {
		if len(cp.Doc.Retry) == 0 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s has no retrier (its Retry block is empty or absent): no error is retried; add one, e.g. \"Retry\": [{\"ErrorEquals\": [\"States.ALL\"]}]", cp.Source))
		}
		for i, r := range cp.Doc.Retry {
			// The call's attempts (MaxTotalAttempts, RetryMode off,
			// YAOKI_MAX_ATTEMPTS) may end it before the retrier's own
			// MaxAttempts: the table shows the retries the loop makes.
			retries := r.MaxAttempts
			if pl.Attempts > 0 && retries > pl.Attempts-1 {
				retries = pl.Attempts - 1
				pl.Notes = append(pl.Notes, fmt.Sprintf("Retry[%d] allows %d retries, but the call's %d attempts leave room for %d: its table shows that many",
					i, r.MaxAttempts, pl.Attempts, retries))
			}
			s := schedule{s: r.Schedule(), retries: retries, noCap: r.MaxDelay == 0 && r.Interval > 0}
			pl.addTrack(fmt.Sprintf("Retry[%d] %s", i, strings.Join(r.ErrorEquals, ", ")), s, o.rows)
		}
	}
	if cp.Mode == "standard" || cp.Mode == "adaptive" {
		pl.Notes = append(pl.Notes, fmt.Sprintf("the %s mode's retry quota (the AWS SDKs' 2026 behaviour: 500 tokens, a retry takes %d, %d after 429 or 503, a successful retry gives %d back) allows %d retries, %d after throttling, while nothing succeeds",
			cp.Mode, budget.DefaultRetryCost, budget.DefaultThrottleCost, budget.DefaultRetryCost, budget.DefaultCapacity/budget.DefaultRetryCost, budget.DefaultCapacity/budget.DefaultThrottleCost))
	}
	if cp.Mode == "adaptive" {
		pl.Notes = append(pl.Notes, "adaptive mode: after a throttling answer, attempts also wait for the client-side rate limiter (CUBIC), which this plan does not show")
	}
	pl.WorstCase = pl.worst(pl.sched)
	if pl.Attempts == 0 {
		pl.WorstWithHints = math.Inf(1)
	} else {
		pl.WorstWithHints = float64(pl.Attempts-1)*pl.MaxRetryAfter*(1+retry.HintJitter) + float64(pl.Attempts)*pl.AttemptTimeout
		if pl.Deadline > 0 {
			pl.WorstWithHints = math.Min(pl.WorstWithHints, pl.Deadline)
		}
	}
	pl.BottomCalls = math.Pow(float64(pl.Attempts), float64(o.layers))
	if pl.Attempts == 0 {
		pl.BottomCalls = math.Inf(1)
	}
	if o.price > 0 {
		pl.CostFailing = pl.BottomCalls * o.price
	}
	pl.warn()
	return pl
}

func (pl *plan) addTrack(label string, s schedule, maxRows int) {
	t := track{Label: label, Retries: s.retries, Kind: s.s.Kind.String(), Base: s.s.Base.Seconds(),
		Rate: s.s.Multiplier, Jitter: s.s.Jitter.String()}
	if s.s.Kind != backoff.Exponential {
		t.Rate = 1
	}
	if s.s.Jitter == backoff.Decorrelated && s.s.Base < s.s.Cap {
		// Each wait is drawn up to 3 times the previous one, whatever the
		// schedule's kind and multiplier.
		t.Kind, t.Rate = "decorrelated", 3
	}
	if !s.noCap {
		t.Cap = s.s.Cap.Seconds()
	}
	if atOnce(s.s) {
		t.AtOnce, t.Base, t.Cap = true, 0, 0
	}
	timeout := pl.AttemptTimeout
	t.Rows = append(t.Rows, row{Attempt: 1, WorstEnd: timeout, AfterDL: pl.Deadline > 0 && 0 > pl.Deadline})
	start := 0.0
	n := s.retries
	if n < 0 || n > maxRows-1 {
		n = maxRows - 1
	}
	for _, b := range s.s.Plan(n) { // one walk, where Bounds per row would start over each time
		k := b.Retry
		if atOnce(s.s) {
			b.Min, b.Mean, b.Max = 0, 0, 0
		}
		start += timeout + b.Max.Seconds()
		t.Rows = append(t.Rows, row{Attempt: k + 1, WaitMin: b.Min.Seconds(), WaitMean: b.Mean.Seconds(), WaitMax: b.Max.Seconds(),
			WorstStart: start, WorstEnd: start + timeout, AfterDL: pl.Deadline > 0 && start > pl.Deadline})
	}
	if s.retries < 0 {
		t.More = -1
	} else {
		t.More = s.retries - n
	}
	pl.Tracks = append(pl.Tracks, t)
	pl.sched = append(pl.sched, s)
}

// longest returns the longest total wait of the first k retries of s, in
// seconds, for any k ≥ 0 without walking k retries: the first waits are
// walked one by one (up to exactRetries of them) until they reach the cap,
// after which every wait is the cap; past exactRetries, waits still below
// the cap are summed in closed form.
func longest(s schedule) func(k int) float64 {
	if atOnce(s.s) {
		return func(int) float64 { return 0 }
	}
	var sums []float64 // sums[i]: the longest total of retries 1 to i+1, each below the cap
	total, capped := 0.0, -1.0
	for n := 1; n <= exactRetries; n++ {
		m := s.s.Bounds(n).Max
		if m >= s.s.Cap || m == noCapDuration {
			capped = m.Seconds()
			break
		}
		total += m.Seconds()
		sums = append(sums, total)
	}
	return func(k int) float64 {
		switch {
		case k <= 0:
			return 0
		case k <= len(sums):
			return sums[k-1]
		case capped >= 0:
			return total + float64(k-len(sums))*capped
		}
		return total + growingWaits(s.s, len(sums)+1, k)
	}
}

// exactRetries is how many retries longest walks one by one.
const exactRetries = 1 << 16

// growingWaits returns the sum, in seconds, of the longest waits of
// retries a to b of s (a ≤ b), each the growth curve clamped to the cap, as
// backoff.Schedule.Bounds gives them. Decorrelated jitter reaches any cap
// within 40 retries, and is never summed here.
func growingWaits(s backoff.Schedule, a, b int) float64 {
	s = s.WithDefaults()
	base, limit := float64(s.Base), float64(s.Cap)
	if s.Cap == noCapDuration {
		limit = float64(math.MaxInt64)
	}
	sec := float64(time.Second)
	// below: the number of retries from a to b whose wait is below the
	// cap; the others wait the cap.
	var below int
	var sum float64 // nanoseconds
	switch s.Kind {
	case backoff.Constant:
		return float64(b-a+1) * math.Min(base, limit) / sec
	case backoff.Linear: // retry n waits base·n
		last := min(b, int(math.Ceil(limit/base))-1)
		if last >= a {
			below = last - a + 1
			sum = base * float64(a+last) * float64(below) / 2
		}
	default: // retry n waits base·m^(n−1)
		m := s.Multiplier
		if !(m > 1) || math.IsInf(m, 0) {
			m = backoff.DefaultMultiplier
		}
		last := b
		if c := 1 + math.Ceil(math.Log(limit/base)/math.Log(m)); c-1 < float64(b) {
			last = int(c) - 1
		}
		if last >= a {
			below = last - a + 1
			// base·m^(a−1)·(m^below − 1)/(m − 1), exact for m near 1
			sum = base * math.Pow(m, float64(a-1)) * math.Expm1(float64(below)*math.Log1p(m-1)) / (m - 1)
		}
	}
	return (sum + float64(b-a+1-below)*limit) / sec
}

// worst returns the longest a call can take, in seconds: every attempt at
// its timeout and every wait at its longest, over the worst mix of errors
// when there are several schedules, within the attempt limit.
func (pl *plan) worst(scheds []schedule) float64 {
	if pl.Attempts == 0 {
		if pl.Deadline > 0 {
			return pl.Deadline
		}
		return math.Inf(1)
	}
	budget := pl.Attempts - 1 // retries allowed in all
	all, w := 0, 0.0
	for _, s := range scheds {
		all += s.retries
	}
	switch {
	case all <= budget: // every schedule can use all its retries
		for _, s := range scheds {
			w += longest(s)(s.retries)
		}
		budget = all
	case budget <= 2000:
		// best[j]: the longest total wait of j retries over the schedules
		// so far, each taking a prefix of its own retries.
		best := make([]float64, budget+1)
		for j := 1; j <= budget; j++ {
			best[j] = math.Inf(-1)
		}
		for _, s := range scheds {
			f := longest(s)
			next := append([]float64(nil), best...)
			for j := range best {
				for k := 1; k <= s.retries && j+k <= budget; k++ {
					next[j+k] = math.Max(next[j+k], best[j]+f(k))
				}
			}
			best = next
		}
		for _, v := range best {
			w = math.Max(w, v)
		}
	default: // an upper bound: every retry at the longest wait any schedule reaches
		for _, s := range scheds {
			f := longest(s)
			w = math.Max(w, f(s.retries)-f(s.retries-1))
		}
		w *= float64(budget)
	}
	total := w + float64(budget+1)*pl.AttemptTimeout
	if pl.Deadline > 0 && total > pl.Deadline {
		return pl.Deadline
	}
	return total
}

func (pl *plan) warn() {
	add := func(format string, args ...any) { pl.Warnings = append(pl.Warnings, fmt.Sprintf(format, args...)) }
	for i, t := range pl.Tracks {
		s := pl.sched[i]
		if t.Retries == 0 {
			continue
		}
		name := "the schedule"
		if len(pl.Tracks) > 1 || pl.Source != "flags" {
			name = strings.SplitN(t.Label, " ", 2)[0]
		}
		if atOnce(s.s) {
			fix := "set its IntervalSeconds above 0"
			if pl.Source == "flags" {
				fix = "give --cap a value above 0"
			}
			add("%s retries at once, with no wait: clients that fail together retry together, into a server that may be failing from overload; %s", name, fix)
			continue
		}
		if s.noCap {
			if t.Retries < 0 {
				add("%s has no cap (MaxDelaySeconds) and no limit on retries: its waits grow without bound (retry 10 waits up to %s); add MaxDelaySeconds, e.g. 20",
					name, fmtSec(s.s.Bounds(10).Max.Seconds()))
			} else {
				add("%s has no cap (MaxDelaySeconds): its waits grow with each retry, its last (retry %d) up to %s; add MaxDelaySeconds, e.g. 20",
					name, t.Retries, fmtSec(s.s.Bounds(t.Retries).Max.Seconds()))
			}
		} else if s.s.Cap < s.s.Base && s.s.Kind != backoff.Constant {
			add("%s's cap (%s) is below its base (%s): every wait is the cap, there is no backoff; raise the cap or lower the base",
				name, fmtSec(s.s.Cap.Seconds()), fmtSec(s.s.Base.Seconds()))
		}
		if s.s.Jitter == backoff.None {
			add("%s has no jitter: clients that fail together retry together and hit the server in waves; use FULL jitter (--jitter full, \"JitterStrategy\": \"FULL\")", name)
		}
	}
	if pl.Attempts == 0 {
		if pl.Deadline > 0 {
			add("attempts are unbounded: only the deadline (%s) ends a call that keeps failing", fmtSec(pl.Deadline))
		} else {
			add("attempts are unbounded and there is no deadline: a call that keeps failing never ends; set --max-attempts or --max-time")
		}
	}
	if pl.Deadline > 0 && pl.Attempts > 0 {
		unbounded := pl.worstUncut()
		if unbounded > pl.Deadline {
			add("the worst case (%s) is longer than the deadline (%s): the deadline ends the call first, so the last attempts may never be made",
				fmtSec(unbounded), fmtSec(pl.Deadline))
		}
	}
	const day = 24 * 3600.0
	if w := pl.worstUncut(); w > day && !math.IsInf(w, 1) && (pl.Deadline == 0 || pl.Deadline > day) {
		add("the worst case is %s, over a day: a caller waits that long for a call that keeps failing; lower --max-attempts or --cap, or set --max-time", fmtSec(w))
	}
	if pl.Layers > 1 {
		add("stacked over %d layers that each retry like this, one request that fails at the bottom makes %s calls there (%d^%d); retry at one layer only (retry.SingleAttempt)",
			pl.Layers, fmtCount(pl.BottomCalls), pl.Attempts, pl.Layers)
	}
}

// worstUncut is the worst case without the deadline's cut.
func (pl *plan) worstUncut() float64 {
	dl := pl.Deadline
	pl.Deadline = 0
	defer func() { pl.Deadline = dl }()
	return pl.worst(pl.sched)
}

func (pl *plan) print(w io.Writer) {
	attempts := "unlimited"
	if pl.Attempts > 0 {
		attempts = fmt.Sprint(pl.Attempts)
	}
	hints := fmtSec(pl.MaxRetryAfter)
	if pl.MaxRetryAfter == 0 {
		hints = "none (0s)"
	}
	fmt.Fprintf(w, "policy: %s · attempts: %s (counting the first) · per-attempt timeout: %s · deadline: %s · longest Retry-After honoured: %s\n",
		pl.Source, attempts, fmtSecOr(pl.AttemptTimeout, "none"), fmtSecOr(pl.Deadline, "none"), hints)
	fmt.Fprintf(w, "retry mode: %s\n", (&flags.Resolved{Mode: pl.Mode, ModeFrom: pl.ModeSource}).ModeText())
	for _, t := range pl.Tracks {
		fmt.Fprintf(w, "\n%s: ", t.Label)
		switch {
		case t.Retries == 0:
			fmt.Fprintln(w, "never retried")
			continue
		case t.Retries < 0:
			fmt.Fprint(w, "unlimited retries, ")
		default:
			fmt.Fprintf(w, "%d retr%s, ", t.Retries, map[bool]string{true: "y", false: "ies"}[t.Retries == 1])
		}
		if t.AtOnce {
			fmt.Fprintln(w, "at once, with no wait between attempts")
		} else {
			t.printSchedule(w)
		}
		fmt.Fprintf(w, "  %-8s %-10s %-10s %-10s %-14s %s\n", "attempt", "wait min", "mean", "max", "worst start", "worst end")
		for _, r := range t.Rows {
			mark := ""
			if r.AfterDL {
				mark = "  (after the deadline)"
			}
			if r.Attempt == 1 {
				fmt.Fprintf(w, "  %-8d %-10s %-10s %-10s %-14s %s%s\n", 1, "-", "-", "-", fmtSec(0), fmtSec(r.WorstEnd), mark)
				continue
			}
			fmt.Fprintf(w, "  %-8d %-10s %-10s %-10s %-14s %s%s\n", r.Attempt, fmtSec(r.WaitMin), fmtSec(r.WaitMean), fmtSec(r.WaitMax),
				fmtSec(r.WorstStart), fmtSec(r.WorstEnd), mark)
		}
		switch {
		case t.More < 0:
			fmt.Fprintln(w, "  … and so on without end")
		case t.More > 0:
			fmt.Fprintf(w, "  … %d more (--rows to see them)\n", t.More)
		}
	}
	fmt.Fprintf(w, "\nworst case: %s (every wait at its longest", fmtSec(pl.WorstCase))
	if pl.AttemptTimeout > 0 {
		fmt.Fprint(w, ", every attempt at its timeout")
	} else {
		fmt.Fprint(w, ", plus the attempts' own time: no per-attempt timeout")
	}
	if pl.Deadline > 0 {
		fmt.Fprint(w, ", cut by the deadline")
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "worst case if the server sends Retry-After: %s (each wait up to %s + 20%%)\n", fmtSec(pl.WorstWithHints), fmtSec(pl.MaxRetryAfter))
	calls := "unbounded"
	if pl.Attempts > 0 {
		calls = fmt.Sprint(pl.Attempts)
	}
	fmt.Fprintf(w, "calls per request that fails for good: %s", calls)
	if pl.Layers > 1 {
		fmt.Fprintf(w, " per layer; %s at the bottom of %d layers", fmtCount(pl.BottomCalls), pl.Layers)
	}
	fmt.Fprintln(w)
	if pl.Price > 0 {
		fmt.Fprintf(w, "cost: a million requests that fail for good make %s million calls: %.2f at %.2f per million (%.2f of it for retries)\n",
			fmtCount(pl.BottomCalls), pl.CostFailing, pl.Price, pl.CostFailing-pl.Price)
	}
	for _, c := range pl.Catch {
		to := "the error replaces the input"
		if c.ResultPath == nil {
			to = "ResultPath null: the error is discarded, the input passes on"
		} else if *c.ResultPath != "$" {
			to = "the error goes to " + *c.ResultPath
		}
		fmt.Fprintf(w, "catch: %s → %s (%s)\n", strings.Join(c.ErrorEquals, ", "), c.Next, to)
	}
	for _, n := range pl.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(pl.Warnings) == 0 {
		fmt.Fprintln(w, "\nno warnings")
		return
	}
	fmt.Fprintln(w, "\nwarnings:")
	for _, m := range pl.Warnings {
		fmt.Fprintf(w, "  - %s\n", m)
	}
}

// fmtSec prints seconds as a short duration: 0s, 50ms, 1.5s, 2m30s, and
// "unbounded" for +Inf.
// printSchedule writes how t's waits grow: "exponential ×2 from 50ms, cap
// 20s, full jitter".
func (t *track) printSchedule(w io.Writer) {
	switch t.Kind {
	case "exponential":
		fmt.Fprintf(w, "%s ×%g", t.Kind, t.Rate)
	case "decorrelated":
		fmt.Fprintf(w, "each wait up to ×%g the previous", t.Rate)
	default:
		fmt.Fprintf(w, "%s", t.Kind)
	}
	jitter := t.Jitter + " jitter"
	if t.Jitter == "none" {
		jitter = "no jitter"
	}
	fmt.Fprintf(w, " from %s, cap %s, %s\n", fmtSec(t.Base), fmtSecOr(t.Cap, "none"), jitter)
}

func fmtSec(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "unbounded"
	case s >= 100*365*24*3600:
		return "over 100 years"
	case s >= 48*3600:
		return fmt.Sprintf("%.1fd", s/86400)
	}
	d := time.Duration(math.Round(s * float64(time.Second)))
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	}
	return d.String()
}

func fmtSecOr(s float64, zero string) string {
	if s == 0 {
		return zero
	}
	return fmtSec(s)
}

func fmtCount(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "unbounded"
	case f >= 1e15:
		return fmt.Sprintf("%.3g", f)
	}
	return fmt.Sprintf("%.0f", f)
}
