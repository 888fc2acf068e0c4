package sim

import (
	"slices"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// PolicyOf returns the policy a document describes, as simulated clients
// apply it: its attempt limit, its retriers (each error is matched by name,
// as in production: a failed attempt is HTTP.500, an overloaded one
// HTTP.503, a conflict HTTP.409, a timeout States.Timeout; an error no retrier
// matches is not retried) with their own schedules and counts, and its
// budget, breaker and adaptive-mode throttle and budget, one of each per
// client, as policy.Document.Policy builds them. The
// document's timeouts are not simulated: the scenarios have their own.
// d must be valid (see policy.Document.Validate).
func PolicyOf(name string, d *policy.Document) Policy {
	rp := d.Policy(policy.Options{})
	return Policy{
		Name:        name,
		MaxAttempts: d.Attempts(),
		Classify:    rp.Classify,
		Stepper:     rp.Stepper,
		Guards: func(rnd func() float64) Guards {
			// The document's guards, built as d.Policy builds them
			// (TestPolicyOfGuardsAsProduction), with the run's random
			// source where they draw: in adaptive mode the AWS SDKs' CUBIC
			// rate limiter and, unless the document has its own budget, the
			// AWS retry quota.
			var g Guards
			if d.Mode == policy.Adaptive {
				if c, err := throttle.NewCubic(throttle.CubicConfig{}); err == nil {
					g.Throttle = c
				}
				if d.Budget == nil {
					if b, err := budget.NewBucket(budget.BucketConfig{}); err == nil {
						g.Budget = b
					}
				}
			}
			if d.Budget != nil {
				if b, err := budget.NewShare(*d.Budget); err == nil {
					g.Budget = b
				}
			}
			if d.Breaker != nil {
				s := *d.Breaker
				s.Rand = rnd
				if b, err := breaker.New(s); err == nil {
					g.Breaker = b
				}
			}
			return g
		},
		Description: "the policy document " + name,
	}
}

// simulatedErrors are the errors the scenarios' attempts fail with, one of
// each kind, as a policy document's retriers see them.
var simulatedErrors = []error{errFailed, errOverloaded, errTimeout, errConflict, &limitedError{}}

// Unmatchable returns the indexes in d.Retry of the retriers that match
// none of the errors the scenarios make (HTTP.500, HTTP.503, HTTP.409,
// HTTP.429, States.Timeout): in the simulator they never retry, and a
// document made of them behaves as no retries at all. d must be valid.
func Unmatchable(d *policy.Document) []int {
	var out []int
	for i, r := range d.Retry {
		one := policy.Document{Retry: []policy.Retrier{r}}
		classify := one.Policy(policy.Options{}).Classify
		if !slices.ContainsFunc(simulatedErrors, func(err error) bool { return classify(err) != retry.ClassPermanent }) {
			out = append(out, i)
		}
	}
	return out
}
