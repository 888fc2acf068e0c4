package sim

import (
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
)

// Yaoki is yaoki's default policy, the one the scenarios compare with the
// published ones: the retry loop's defaults (3 attempts; exponential ×2
// with full jitter from 50 ms, capped at 20 s), and per client, as the HTTP
// transport keeps them per destination host, the default share-of-traffic
// budget (retries ≤ 20 % of the requests that succeeded over 10 s, plus 10
// per second) and the default circuit breaker (open at ≥ 50 % failures over
// 30 s once 20 calls are in, for 30 s growing on re-trips).
//
// The breaker is what bounds the load of a dead dependency when each client
// is small: a dead dependency earns no retries, but at 10 calls per second
// the budget's floor of 10 retries per second still grants one retry per
// call, and the budget alone lets the load reach 2 attempts per call in
// the outage scenario (1.01 if the clients shared one budget).
func Yaoki() Policy {
	return Policy{
		Name: "yaoki",
		Guards: func(rnd func() float64) Guards {
			b, err := budget.NewShare(budget.ShareConfig{})
			if err != nil {
				panic(err) // the zero config is valid: a failure here is a bug
			}
			br, err := breaker.New(breaker.Settings{Rand: rnd})
			if err != nil {
				panic(err)
			}
			return Guards{Budget: b, Breaker: br}
		},
		Description: "3 attempts, exponential ×2 with full jitter from 50ms (cap 20s); per client, the default share budget (20 % of successes over 10 s + 10/s) and the default breaker (≥ 50 % failures of ≥ 20 calls over 30 s)",
	}
}

// YaokiBudgetOnly is Yaoki without the breaker: what the HTTP transport
// does by default (a share budget per destination host).
func YaokiBudgetOnly() Policy {
	return Policy{
		Name: "yaoki budget only",
		Guards: func(func() float64) Guards {
			b, err := budget.NewShare(budget.ShareConfig{})
			if err != nil {
				panic(err)
			}
			return Guards{Budget: b}
		},
		Description: "3 attempts, exponential ×2 with full jitter from 50ms (cap 20s); per client, the default share budget (20 % of successes over 10 s + 10/s)",
	}
}
