package sim

import (
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
)

// Yaoki is yaoki's default policy, exactly what a user gets: the retry
// loop's defaults (3 attempts; exponential ×2 with full jitter from 50 ms,
// capped at 20 s) and, per client as httpretry.Transport keeps it per
// destination host, the recommended retry budget (budget.Recommended: a
// gRPC-style bucket of 10 tokens that starts at 8, a failed attempt takes
// one, a success gives back 0.2, retries stop at half). Nothing refuses a
// first attempt, so a call never fares worse than with no retries at all
// on a dependency that fails at random, and the client sees a dependency
// come back as soon as it does.
//
// The figures it reaches on the outage and collapse scenarios, for clients
// of 10 calls/s down to 0.1 call/s, are asserted by TestYaokiGoals and
// stated in docs/simulator.md. Against a dead dependency each client sends
// two retries in all, so clients that make 10 calls or fewer in a run
// (1 call/s over 10 s, 0.1 call/s over 10 s) add 20 % or more: YaokiFleet
// is what bounds them.
func Yaoki() Policy {
	return Policy{
		Name:        "yaoki",
		Guards:      func(func() float64) Guards { return Guards{Budget: recommended()} },
		Description: "the defaults: 3 attempts, exponential ×2 with full jitter from 50ms (cap 20s); per client, the recommended budget (gRPC-style bucket: 10 tokens, starts at 8, a failure takes 1, a success gives 0.2, retries while above 5)",
	}
}

func recommended() *budget.GRPC {
	b, err := budget.NewGRPC(budget.Recommended())
	if err != nil {
		panic(err) // the recommended config is valid: a failure here is a bug
	}
	return b
}

// YaokiFleet is Yaoki with one retry budget for all the clients of a run
// instead of one each: the share-of-traffic rule of budget.Share (retries
// ≤ 20 % of the successful requests over 10 s, plus a floor of
// budget.DefaultFleetMinPerSecond, one retry per second, for the whole
// fleet), with the fleet's totals, which is what redis.Budget (module
// yaoki/redis) keeps for a fleet of processes with its defaults. It is what
// many small clients need: a client of 0.1 call/s cannot tell a blip from
// an outage by itself. Against a dead dependency the fleet sends 1 +
// 1/(its calls per second) attempts per call.
func YaokiFleet() Policy {
	return Policy{
		Name:   "yaoki + fleet budget",
		Shared: true,
		Guards: func(func() float64) Guards {
			b, err := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.DefaultFleetMinPerSecond})
			if err != nil {
				panic(err)
			}
			return Guards{Budget: b}
		},
		Description: "yaoki's loop with one share budget for the whole fleet (20 % of the fleet's successes over 10 s, + 1/s for the fleet), as redis.Budget keeps it with its defaults",
	}
}

// YaokiBreaker is Yaoki with the default circuit breaker per client (open at
// ≥ 50 % failures of ≥ 20 calls over 30 s, for 30 s growing on re-trips). It
// fails fast on a dead dependency, at a price the outage scenario shows: it
// refuses first attempts on a partial outage too, and then succeeds on
// fewer calls than no retries at all.
func YaokiBreaker() Policy {
	return Policy{
		Name: "yaoki + breaker",
		Guards: func(rnd func() float64) Guards {
			br, err := breaker.New(breaker.Config{Rand: rnd})
			if err != nil {
				panic(err)
			}
			return Guards{Budget: recommended(), Breaker: br}
		},
		Description: "yaoki's defaults with the default breaker per client (≥ 50 % failures of ≥ 20 calls over 30 s; open 30 s and more)",
	}
}
