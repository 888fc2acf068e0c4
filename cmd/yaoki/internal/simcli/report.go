package simcli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/sim"
)

// simReport is everything one `yaoki sim` run measured.
type simReport struct {
	Seed uint64
	// Command is the command line that reproduces the report (commandLine).
	Command string
	// Elapsed is the time the simulations took. It goes to stderr and to
	// index.html, never to stdout, whose bytes depend on the seed and the
	// parameters only.
	Elapsed   time.Duration
	Herd      *herdReport
	Outage    *outageReport
	Collapse  *collapseReport
	Tail      *tailReport
	RateLimit *rateLimitReport
}

// reportHead is what every scenario's part of a report starts with, also
// in JSON: the runs per point and the policies compared.
type reportHead struct {
	Runs     int          `json:"runs"`
	Policies []policyInfo `json:"policies"`
}

func (h *reportHead) head() *reportHead { return h }

// policiesOf returns the policies compared in a scenario's part of the
// report, none when the scenario did not run (p nil).
func policiesOf[T any, PT interface {
	*T
	head() *reportHead
}](p PT) []policyInfo {
	if p == nil {
		return nil
	}
	return p.head().Policies
}

type herdReport struct {
	reportHead
	Points []sim.HerdPoint
	Hop    sim.Herd // the hops
	// PostBase and PostCap are the base and cap of the 2015 post's
	// strategies.
	PostBase, PostCap time.Duration
}

type outageReport struct {
	reportHead
	Duration time.Duration
	HopMean  time.Duration
	Overload bool
	Clients  []int     // one sweep per client count
	Rates    []float64 // calls per second per client, for each count
	Points   []sim.OutagePoint
}

type collapseReport struct {
	reportHead
	Base   sim.Collapse
	Points []sim.CollapsePoint
}

// triggerLabel names a trigger in tables, e.g. "spike 80/s × 5s".
func triggerLabel(t sim.Trigger) string {
	switch t.Kind {
	case sim.Spike:
		return fmt.Sprintf("spike %g/s × %v", t.Peak, t.Width)
	case sim.Slowdown:
		return fmt.Sprintf("slowdown ×%g × %v", t.Factor, t.Width)
	}
	return "no trigger"
}

// pivot is a table with a row label column and one column per policy.
type pivot struct {
	title    string
	corner   string
	policies []string
	rows     []string
	cells    map[[2]string]string
}

func newPivot(title, corner string, policies []policyInfo) *pivot {
	p := &pivot{title: title, corner: corner, cells: map[[2]string]string{}}
	for _, pi := range policies {
		p.policies = append(p.policies, pi.Name)
	}
	return p
}

func (p *pivot) set(row, policy, cell string) {
	if !slices.Contains(p.rows, row) {
		p.rows = append(p.rows, row)
	}
	p.cells[[2]string{row, policy}] = cell
}

func (p *pivot) write(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", p.title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%s\t\n", p.corner, strings.Join(p.policies, "\t"))
	for _, r := range p.rows {
		cells := make([]string, len(p.policies))
		for i, pol := range p.policies {
			cells[i] = p.cells[[2]string{r, pol}]
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", r, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// tables returns the report's tables, in order.
func (r *simReport) tables() []*pivot {
	var out []*pivot
	if h := r.Herd; h != nil {
		calls := newPivot(fmt.Sprintf("herd: writes that reached the server (mean of %d runs)", h.Runs), "clients", h.Policies)
		secs := newPivot(fmt.Sprintf("herd: time until the last client's write, seconds (mean of %d runs)", h.Runs), "clients", h.Policies)
		for _, p := range h.Points {
			row := strconv.Itoa(p.Clients)
			calls.set(row, p.Policy, fmt.Sprintf("%.0f", p.Calls.Mean))
			cell := fmt.Sprintf("%.2f", p.Time.Mean)
			if p.GaveUp.Mean > 0 {
				cell += fmt.Sprintf(" (%.0f gave up)", p.GaveUp.Mean)
			}
			secs.set(row, p.Policy, cell)
		}
		out = append(out, calls, secs)
	}
	if o := r.Outage; o != nil {
		for i, n := range o.Clients {
			where := fmt.Sprintf("%d clients × %g calls/s for %v, mean of %d runs", n, o.Rates[i], o.Duration, o.Runs)
			succ := newPivot("outage: calls that succeeded, % ("+where+")", "p", o.Policies)
			amp := newPivot("outage: attempts sent per call ("+where+")", "p", o.Policies)
			refused := newPivot("outage: calls refused locally before any attempt, % ("+where+")", "p", o.Policies)
			anyRefused := false
			for _, p := range o.Points {
				if p.Clients != n {
					continue
				}
				row := strconv.FormatFloat(p.FailureRate, 'g', -1, 64)
				succ.set(row, p.Policy, fmt.Sprintf("%.2f", 100*p.Success.Mean))
				amp.set(row, p.Policy, fmt.Sprintf("%.3f", p.Amplification.Mean))
				refused.set(row, p.Policy, fmt.Sprintf("%.1f", 100*p.Refused.Mean))
				anyRefused = anyRefused || p.Refused.Mean > 0
			}
			out = append(out, succ, amp)
			if anyRefused {
				out = append(out, refused)
			}
		}
	}
	if c := r.Collapse; c != nil {
		where := fmt.Sprintf("%g requests/s, timeout %v, %d runs each", c.Base.Rate, c.Base.Timeout, c.Runs)
		coll := newPivot("collapse: runs still collapsed at the end, % ("+where+")", "trigger", c.Policies)
		rec := newPivot("collapse: recovery after the trigger's end, seconds (runs that recovered)", "trigger", c.Policies)
		amp := newPivot("collapse: attempts per request", "trigger", c.Policies)
		for _, p := range c.Points {
			row := triggerLabel(p.Trigger)
			coll.set(row, p.Policy, fmt.Sprintf("%.0f", 100*p.Collapsed))
			cell := "never"
			if !math.IsNaN(p.Recovery.Mean) {
				cell = fmt.Sprintf("%.1f", p.Recovery.Mean)
			}
			rec.set(row, p.Policy, cell)
			amp.set(row, p.Policy, fmt.Sprintf("%.2f", p.Amplification.Mean))
		}
		out = append(out, coll, rec, amp)
	}
	if t := r.Tail; t != nil {
		out = append(out, t.tables()...)
	}
	if l := r.RateLimit; l != nil {
		out = append(out, l.tables()...)
	}
	return out
}

// writeTables prints the report's tables and the policies compared.
func (r *simReport) writeTables(w io.Writer) error {
	for _, t := range r.tables() {
		if err := t.write(w); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	var list []policyInfo
	width := 0
	for _, ps := range [][]policyInfo{policiesOf(r.Herd), policiesOf(r.Outage), policiesOf(r.Collapse), policiesOf(r.Tail), policiesOf(r.RateLimit)} {
		for _, p := range ps {
			key := p.Name + "\x00" + p.Description
			if seen[key] {
				continue
			}
			seen[key] = true
			list = append(list, p)
			width = max(width, utf8.RuneCountInString(p.Name))
		}
	}
	fmt.Fprintln(w, "policies:")
	for _, p := range list {
		fmt.Fprintf(w, "  %-*s  %s\n", width, p.Name, p.Description)
	}
	_, err := fmt.Fprintf(w, "seed %d\n", r.Seed)
	return err
}

// csvHeader is the one tidy layout of every scenario: one row per point
// and metric; the columns a scenario does not use are empty.
var csvHeader = []string{"scenario", "policy", "clients", "failure_rate", "load", "trigger", "metric", "mean", "sd", "runs"}

// csvRow writes one row in the layout of csvHeader.
type csvRow func(scenario, policy, clients, p, load, trigger, metric string, s sim.Stat, runs int)

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// writeCSV writes every point in the tidy layout of csvHeader.
func (r *simReport) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	row := func(scenario, policy, clients, p, load, trigger, metric string, s sim.Stat, runs int) {
		cw.Write([]string{scenario, policy, clients, p, load, trigger, metric, num(s.Mean), num(s.SD), strconv.Itoa(runs)})
	}
	if h := r.Herd; h != nil {
		for _, p := range h.Points {
			n := strconv.Itoa(p.Clients)
			row("herd", p.Policy, n, "", "", "", "calls", p.Calls, p.Runs)
			row("herd", p.Policy, n, "", "", "", "time_s", p.Time, p.Runs)
			row("herd", p.Policy, n, "", "", "", "gave_up", p.GaveUp, p.Runs)
		}
	}
	if o := r.Outage; o != nil {
		for _, p := range o.Points {
			n, f := strconv.Itoa(p.Clients), num(p.FailureRate)
			row("outage", p.Policy, n, f, "", "", "success", p.Success, p.Runs)
			row("outage", p.Policy, n, f, "", "", "amplification", p.Amplification, p.Runs)
			row("outage", p.Policy, n, f, "", "", "refused", p.Refused, p.Runs)
		}
	}
	if c := r.Collapse; c != nil {
		for _, p := range c.Points {
			t := triggerLabel(p.Trigger)
			n := strconv.Itoa(c.Base.Clients)
			row("collapse", p.Policy, n, "", "", t, "collapsed", sim.Stat{Mean: p.Collapsed, SD: math.NaN()}, p.Runs)
			row("collapse", p.Policy, n, "", "", t, "recovery_s", p.Recovery, p.Runs)
			row("collapse", p.Policy, n, "", "", t, "amplification", p.Amplification, p.Runs)
		}
	}
	if t := r.Tail; t != nil {
		t.csvRows(row)
	}
	if l := r.RateLimit; l != nil {
		l.csvRows(row)
	}
	cw.Flush()
	return cw.Error()
}

// jnum is a float that encodes NaN and infinities as null.
type jnum float64

func (v jnum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

type jstat struct {
	Mean jnum `json:"mean"`
	SD   jnum `json:"sd"`
	SE   jnum `json:"se"`
}

func js(s sim.Stat) jstat { return jstat{jnum(s.Mean), jnum(s.SD), jnum(s.SE)} }

// gaveUp maps reasons to counts, leaving out zeros.
func gaveUp(g []float64) map[string]jnum {
	out := map[string]jnum{}
	for i, v := range g {
		if v != 0 {
			out[retry.Reason(i).Key()] = jnum(v)
		}
	}
	return out
}

// writeJSON writes the report as one JSON document.
func (r *simReport) writeJSON(w io.Writer) error {
	type herdPt struct {
		Policy  string `json:"policy"`
		Clients int    `json:"clients"`
		Runs    int    `json:"runs"`
		Calls   jstat  `json:"calls"`
		TimeS   jstat  `json:"time_s"`
		GaveUp  jstat  `json:"gave_up"`
	}
	type outagePt struct {
		Policy        string          `json:"policy"`
		Clients       int             `json:"clients"`
		FailureRate   jnum            `json:"failure_rate"`
		Runs          int             `json:"runs"`
		Success       jstat           `json:"success"`
		Amplification jstat           `json:"amplification"`
		Refused       jstat           `json:"refused"`
		GaveUp        map[string]jnum `json:"gave_up_per_run"`
	}
	type trigger struct {
		Kind   string `json:"kind"`
		AtS    jnum   `json:"at_s"`
		WidthS jnum   `json:"width_s"`
		Peak   jnum   `json:"peak,omitempty"`
		Factor jnum   `json:"factor,omitempty"`
	}
	type collapsePt struct {
		Policy        string  `json:"policy"`
		Trigger       trigger `json:"trigger"`
		Runs          int     `json:"runs"`
		Collapsed     jnum    `json:"collapsed"`
		RecoveryS     jstat   `json:"recovery_s"`
		Amplification jstat   `json:"amplification"`
		Goodput       []jnum  `json:"goodput_per_s"`
		InFlight      []jnum  `json:"in_flight"`
	}
	type section[T any] struct {
		reportHead
		Points []T `json:"points"`
	}
	doc := struct {
		Seed      uint64               `json:"seed"`
		Command   string               `json:"command"`
		Herd      *section[herdPt]     `json:"herd,omitempty"`
		Outage    *section[outagePt]   `json:"outage,omitempty"`
		Collapse  *section[collapsePt] `json:"collapse,omitempty"`
		Tail      *tailJSON            `json:"tail,omitempty"`
		RateLimit *rateLimitJSON       `json:"ratelimit,omitempty"`
	}{Seed: r.Seed, Command: r.Command}
	if t := r.Tail; t != nil {
		doc.Tail = t.json()
	}
	if l := r.RateLimit; l != nil {
		doc.RateLimit = l.json()
	}
	if h := r.Herd; h != nil {
		doc.Herd = &section[herdPt]{reportHead: h.reportHead}
		for _, p := range h.Points {
			doc.Herd.Points = append(doc.Herd.Points, herdPt{p.Policy, p.Clients, p.Runs, js(p.Calls), js(p.Time), js(p.GaveUp)})
		}
	}
	if o := r.Outage; o != nil {
		doc.Outage = &section[outagePt]{reportHead: o.reportHead}
		for _, p := range o.Points {
			doc.Outage.Points = append(doc.Outage.Points, outagePt{p.Policy, p.Clients, jnum(p.FailureRate), p.Runs,
				js(p.Success), js(p.Amplification), js(p.Refused), gaveUp(p.GaveUp[:])})
		}
	}
	if c := r.Collapse; c != nil {
		doc.Collapse = &section[collapsePt]{reportHead: c.reportHead}
		for _, p := range c.Points {
			t := p.Trigger
			pt := collapsePt{Policy: p.Policy, Runs: p.Runs, Collapsed: jnum(p.Collapsed), RecoveryS: js(p.Recovery),
				Amplification: js(p.Amplification),
				Trigger:       trigger{Kind: t.Kind.String(), AtS: jnum(t.At.Seconds()), WidthS: jnum(t.Width.Seconds())}}
			switch t.Kind {
			case sim.Spike:
				pt.Trigger.Peak = jnum(t.Peak)
			case sim.Slowdown:
				pt.Trigger.Factor = jnum(t.Factor)
			}
			for i := range p.Goodput {
				pt.Goodput = append(pt.Goodput, jnum(p.Goodput[i]))
				pt.InFlight = append(pt.InFlight, jnum(p.InFlight[i]))
			}
			doc.Collapse.Points = append(doc.Collapse.Points, pt)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
