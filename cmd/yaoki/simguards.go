package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yaoki-go/yaoki/sim"
)

// A simGuard is a guard that --budget, --breaker or --throttle can name:
// what it is in words and how to build one for a client.
type simGuard struct {
	name string
	desc string
	set  func(g *sim.Guards)
}

var simBudgets = []simGuard{
	{"none", "", func(*sim.Guards) {}},
	{"post-bucket", "the 2022 post's token bucket (capacity 5, +0.1 per call, 1 per retry)",
		func(g *sim.Guards) { g.Budget = sim.NewRetryBucket() }},
	{"post-breaker", "the 2022 post's retry breaker (no retries while failures > 10 % of calls)",
		func(g *sim.Guards) { g.Budget = sim.NewRetryBreaker() }},
}

var simBreakers = []simGuard{
	{"none", "", func(*sim.Guards) {}},
}

var simThrottles = []simGuard{
	{"none", "", func(*sim.Guards) {}},
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
func simGuardsOf(budget, breaker, throttle string) (func() sim.Guards, string, error) {
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
			return nil, "", exit(ExitUsage, fmt.Sprintf("--%s %q: want one of %s", c.flag, c.name, strings.Join(guardNames(c.from), ", ")))
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
	return func() sim.Guards {
		var g sim.Guards
		for _, c := range chosen {
			c.set(&g)
		}
		return g
	}, strings.Join(desc, ", "), nil
}

// yaokiGuards says in words what guards yaoki's default policy has.
const yaokiGuards = ""

// yaokiPolicy is yaoki's default policy as the simulator runs it.
func yaokiPolicy() sim.Policy {
	p := sim.Policy{Name: "yaoki"}
	p.Description = describePolicy(p, yaokiGuards)
	return p
}
