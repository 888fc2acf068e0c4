package sim

import (
	"github.com/yaoki-go/yaoki/policy"
)

// PolicyOf returns the policy a document describes, as simulated clients
// apply it: its attempt limit, its retriers (each error is matched by name,
// as in production: ErrFailed is HTTP.500, ErrOverloaded HTTP.503,
// ErrConflict HTTP.409, ErrTimeout States.Timeout; an error no retrier
// matches is not retried) with their own schedules and counts, and its
// budget, breaker and adaptive throttle, one of each per client. The
// document's timeouts are not simulated: the scenarios have their own.
// d must be valid (see policy.Document.Validate).
func PolicyOf(name string, d *policy.Document) Policy {
	rp := d.Policy(policy.Options{})
	return Policy{
		Name:        name,
		MaxAttempts: d.Attempts(),
		Classify:    rp.Classify,
		Stepper:     rp.Stepper,
		Guards: func() Guards {
			p := d.Policy(policy.Options{})
			if p.Env == nil {
				return Guards{}
			}
			return Guards{Budget: p.Env.Budget, Breaker: p.Env.Breaker, Throttle: p.Env.Throttle}
		},
		Description: "the policy document " + name,
	}
}
