package sim

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
)

var candidatesFlag = flag.Bool("candidates", false, "TestGuardCandidates: measure the candidate default guard sets (a few minutes)")

// guardCandidates are the guard sets measured when the default was chosen
// (issue 14), each per client unless it says fleet.
func guardCandidates() []Policy {
	share := func() *budget.Share {
		b, _ := budget.NewShare(budget.ShareConfig{})
		return b
	}
	grpc := func(c budget.GRPCConfig) func() *budget.GRPC {
		return func() *budget.GRPC {
			b, err := budget.NewGRPC(c)
			if err != nil {
				panic(err)
			}
			return b
		}
	}
	br := func(s breaker.Config) func(func() float64) *breaker.Breaker {
		return func(rnd func() float64) *breaker.Breaker {
			s.Rand = rnd
			b, _ := breaker.New(s)
			return b
		}
	}
	full, one := grpc(budget.GRPCConfig{}), grpc(budget.GRPCConfig{TokenRatio: 0.2, Start: 7})
	def, ro := br(breaker.Config{}), br(breaker.Config{RetriesOnly: true})
	return []Policy{
		{Name: "share + breaker (the former sim.Yaoki)", Guards: func(r func() float64) Guards { return Guards{Budget: share(), Breaker: def(r)} }},
		{Name: "share (the former httpretry default)", Guards: func(func() float64) Guards { return Guards{Budget: share()} }},
		{Name: "share + retries-only breaker", Guards: func(r func() float64) Guards { return Guards{Budget: share(), Breaker: ro(r)} }},
		{Name: "gRPC bucket (10, 0.1, full)", Guards: func(func() float64) Guards { return Guards{Budget: full()} }},
		{Name: "gRPC bucket (10, 0.2, starts at 7)", Guards: func(func() float64) Guards { return Guards{Budget: one()} }},
		Yaoki(),
		{Name: "yaoki + retries-only breaker", Guards: func(r func() float64) Guards { return Guards{Budget: recommended(), Breaker: ro(r)} }},
		YaokiBreaker(),
		YaokiFleet(),
	}
}

// TestGuardCandidates prints, for each candidate, the figures of the four
// goals over the grid TestYaokiGoals checks (3 runs of 10 s, 1 of 100 s a
// point; collapse 10 runs a trigger), as a Markdown table:
//
//	go test ./sim -run TestGuardCandidates -v -args -candidates
func TestGuardCandidates(t *testing.T) {
	if !*candidatesFlag {
		t.Skip("measures for minutes: go test ./sim -run TestGuardCandidates -v -args -candidates")
	}
	shapes := goalShapes()
	var b strings.Builder
	b.WriteString("| guard set | worst gap to no retries (points) | success at p ≤ 0.05, lowest |")
	for _, sh := range shapes {
		fmt.Fprintf(&b, " p = 1, %v |", sh)
	}
	b.WriteString(" collapsed runs, 1 / 10 processes |\n|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(shapes)+1) + "\n")
	var trs []Trigger
	for _, w := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second} {
		for peak := 50.0; peak <= 100; peak += 10 {
			trs = append(trs, Trigger{Kind: Spike, At: 20 * time.Second, Width: w, Peak: peak})
		}
	}
	for _, c := range guardCandidates() {
		gap, low := math.Inf(1), 1.0
		var amps []string
		for _, sh := range shapes {
			runs := 3
			if sh.dur > 10*time.Second {
				runs = 1
			}
			pts, err := OutageSweep{Outage: Outage{Clients: sh.clients, Rate: sh.rate, Duration: sh.dur},
				FailureRates: goalRates, Runs: runs, Seed: 14, Workers: 2}.Run([]Policy{NoRetries(), c})
			if err != nil {
				t.Fatal(err)
			}
			n := len(goalRates)
			for i, p := range pts[n:] {
				gap = min(gap, p.Success.Mean-pts[i].Success.Mean)
				if p.FailureRate <= 0.05 {
					low = min(low, p.Success.Mean)
				}
			}
			at1 := pts[2*n-1]
			cell := fmt.Sprintf("%.3f", at1.Amplification.Mean)
			if at1.Refused.Mean > 0.005 {
				cell += fmt.Sprintf(" (%.0f %% refused)", 100*at1.Refused.Mean)
			}
			amps = append(amps, cell)
		}
		var coll []string
		for _, procs := range []int{1, 10} {
			pts, err := CollapseSweep{Collapse: Collapse{Clients: procs}, Triggers: trs, Runs: 10, Seed: 14, Workers: 2}.Run([]Policy{c})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0.0
			for _, p := range pts {
				runs += p.Collapsed * float64(p.Runs)
			}
			coll = append(coll, fmt.Sprintf("%.0f", runs))
		}
		fmt.Fprintf(&b, "| %s | %+.1f | %.3f %% | %s | %s of %d |\n", c.Name, 100*gap, 100*low, strings.Join(amps, " | "),
			strings.Join(coll, " / "), 10*len(trs))
	}
	t.Log("\n" + b.String())
}
