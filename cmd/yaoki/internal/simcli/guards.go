package simcli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/sim"
	"github.com/yaoki-go/yaoki/throttle"
)

// A simGuard is a guard that --budget, --breaker or --throttle can name:
// what it is in words and how to build one for a client.
type simGuard struct {
	name string
	desc string
	set  func(g *sim.Guards, rnd func() float64)
}

var simBudgets = []simGuard{
	{"none", "", func(*sim.Guards, func() float64) {}},
	{"recommended", "the recommended budget (yaoki's default: gRPC-style bucket of 10 that starts at 8, 0.2 back per success)",
		func(g *sim.Guards, _ func() float64) { g.Budget = must(budget.NewGRPC(budget.Recommended())) }},
	{"share", "the default share budget (retries ≤ 20 % of successful requests over 10 s, + 10/s)",
		func(g *sim.Guards, _ func() float64) { g.Budget = must(budget.NewShare(budget.ShareConfig{})) }},
	{"share-nofloor", "a share budget without floor (retries ≤ 20 % of successful requests over 10 s)",
		func(g *sim.Guards, _ func() float64) {
			g.Budget = must(budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor}))
		}},
	{"bucket", "the AWS SDKs' retry quota, 2026 behaviour (500 tokens, 14 per retry)",
		func(g *sim.Guards, _ func() float64) { g.Budget = must(budget.NewBucket(budget.BucketConfig{})) }},
	{"grpc", "gRPC's retry throttling (10 tokens, 0.1 back per success, retries stop at half)",
		func(g *sim.Guards, _ func() float64) { g.Budget = must(budget.NewGRPC(budget.GRPCConfig{})) }},
	{"post-bucket", "the 2022 post's token bucket (capacity 5, +0.1 per call, 1 per retry)",
		func(g *sim.Guards, _ func() float64) { g.Budget = sim.NewRetryBucket() }},
	{"post-breaker", "the 2022 post's retry breaker (no retries while failures > 10 % of calls)",
		func(g *sim.Guards, _ func() float64) { g.Budget = sim.NewRetryBreaker() }},
}

var simBreakers = []simGuard{
	{"none", "", func(*sim.Guards, func() float64) {}},
	{"default", "the default breaker (open at ≥ 50 % failures of ≥ 20 calls over 30 s, for 30 s and more)",
		func(g *sim.Guards, rnd func() float64) { g.Breaker = must(breaker.New(breaker.Config{Rand: rnd})) }},
	{"retries-only", "the default breaker refusing retries only",
		func(g *sim.Guards, rnd func() float64) {
			g.Breaker = must(breaker.New(breaker.Config{RetriesOnly: true, Rand: rnd}))
		}},
}

var simThrottles = []simGuard{
	{"none", "", func(*sim.Guards, func() float64) {}},
	{"adaptive", "SRE adaptive throttling (reject locally with p = (requests − 2·accepts)/(requests + 1), a rejection counted as a tenth of a request, p at most 0.99)",
		func(g *sim.Guards, rnd func() float64) {
			g.Throttle = must(throttle.NewAdaptive(throttle.AdaptiveConfig{Rand: rnd}))
		}},
	{"cubic", "the AWS SDKs' adaptive mode (CUBIC rate limiter)",
		func(g *sim.Guards, _ func() float64) { g.Throttle = must(throttle.NewCubic(throttle.CubicConfig{})) }},
}

// must returns v; the guards above are built from zero or fixed
// configurations that are valid, so an error is a bug.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func guardNames(gs []simGuard) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.name
	}
	return out
}

func simBudgetNames() []string   { return guardNames(simBudgets) }
func simBreakerNames() []string  { return guardNames(simBreakers) }
func simThrottleNames() []string { return guardNames(simThrottles) }

// simGuardsOf returns the guard factory for the named budget, breaker and
// throttle ("" or "none": no such guard), and the guards in words.
func simGuardsOf(budget, breaker, throttle string) (func(rnd func() float64) sim.Guards, string, error) {
	var chosen []simGuard
	for _, c := range []struct {
		flag, name string
		from       []simGuard
	}{{"budget", budget, simBudgets}, {"breaker", breaker, simBreakers}, {"throttle", throttle, simThrottles}} {
		if c.name == "" || c.name == "none" {
			continue
		}
		i := slices.IndexFunc(c.from, func(g simGuard) bool { return g.name == c.name })
		if i < 0 {
			return nil, "", cli.Exit(cli.ExitUsage, fmt.Sprintf("--%s %q: want one of %s", c.flag, c.name, strings.Join(guardNames(c.from), ", ")))
		}
		chosen = append(chosen, c.from[i])
	}
	if len(chosen) == 0 {
		return nil, "", nil
	}
	var desc []string
	for _, g := range chosen {
		desc = append(desc, g.desc)
	}
	return func(rnd func() float64) sim.Guards {
		var g sim.Guards
		for _, c := range chosen {
			c.set(&g, rnd)
		}
		return g
	}, strings.Join(desc, ", "), nil
}

// yaokiPolicy is yaoki's default policy as the simulator runs it.
func yaokiPolicy() sim.Policy { return sim.Yaoki() }
