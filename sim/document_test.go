package sim_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/sim"
)

func TestPolicyOfDocument(t *testing.T) {
	doc, err := policy.Parse([]byte(`{"Retry": [
		{"ErrorEquals": ["HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 1},
		{"ErrorEquals": ["HTTP.5XX"], "IntervalSeconds": 0.05, "MaxAttempts": 3, "BackoffRate": 2}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := sim.PolicyOf("doc", doc)
	// A dead server's 500s: the second retrier, 3 retries.
	r, err := sim.Outage{Clients: 5, FailureRate: 1}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 4*r.FirstTries || r.GaveUp[retry.ReasonExhausted] != r.FirstTries {
		t.Fatalf("500s: %d attempts for %d calls, gave up %v; want 4 attempts each, exhausted", r.Attempts, r.FirstTries, r.GaveUp)
	}
	// 503s: the first retrier, 1 retry.
	r, _ = sim.Outage{Clients: 5, FailureRate: 1, Overload: true}.Run(p, 1)
	if r.Attempts != 2*r.FirstTries {
		t.Fatalf("503s: %d attempts for %d calls, want 2 each", r.Attempts, r.FirstTries)
	}
	// The herd's conflicts (409) match no retrier: one attempt each.
	h, err := sim.Herd{Clients: 20}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if h.Calls != 20 || h.GaveUp[retry.ReasonPermanent] != 19 {
		t.Fatalf("herd: %d calls, gave up %v; want 20 calls, 19 not retried", h.Calls, h.GaveUp)
	}
}

// PolicyOf's clients get the guards production gets from the same
// document (policy.Document.Policy): in adaptive mode the AWS SDKs'
// CUBIC rate limiter and, without a Budget of the document's, the AWS
// retry quota; the document's share budget and breaker otherwise.
func TestPolicyOfGuardsAsProduction(t *testing.T) {
	retrier := `"Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]`
	for _, doc := range []string{
		`{` + retrier + `}`,
		`{` + retrier + `, "RetryMode": "adaptive"}`,
		`{` + retrier + `, "RetryMode": "adaptive", "Budget": {"Ratio": 0.1}}`,
		`{` + retrier + `, "Budget": {"Ratio": 0.1}}`,
		`{` + retrier + `, "Breaker": {}}`,
		`{` + retrier + `, "RetryMode": "adaptive", "Breaker": {}}`,
	} {
		d, err := policy.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var prod sim.Guards // none when the policy has no Env
		if env := d.Policy(policy.Options{}).Env; env != nil {
			prod = sim.Guards{Budget: env.Budget, Breaker: env.Breaker, Throttle: env.Throttle}
		}
		g := sim.PolicyOf("doc", d).Guards(func() float64 { return 0.5 })
		for _, c := range []struct {
			guard     string
			sim, prod any
		}{{"budget", g.Budget, prod.Budget}, {"breaker", g.Breaker, prod.Breaker}, {"throttle", g.Throttle, prod.Throttle}} {
			if s, p := fmt.Sprintf("%T", c.sim), fmt.Sprintf("%T", c.prod); s != p {
				t.Errorf("%s: the simulated client's %s is %s, production's %s; want the same", doc, c.guard, s, p)
			}
		}
	}
}

// Unmatchable names the retriers that no simulated error matches.
func TestUnmatchable(t *testing.T) {
	d, err := policy.Parse([]byte(`{"Retry": [
		{"ErrorEquals": ["HTTP.418", "Exit.75"]},
		{"ErrorEquals": ["HTTP.429"]},
		{"ErrorEquals": ["HTTP.5XX"]},
		{"ErrorEquals": ["HTTP.409"]},
		{"ErrorEquals": ["States.Timeout"]},
		{"ErrorEquals": ["Net.Reset"]},
		{"ErrorEquals": ["States.ALL"]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sim.Unmatchable(d); !slices.Equal(got, []int{0, 5}) {
		t.Errorf("Unmatchable: %v, want [0 5] (HTTP.418 and Exit.75; Net.Reset)", got)
	}
}
