package sim

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

func outagePoint(t *testing.T, s OutageSweep, p Policy) OutagePoint {
	t.Helper()
	pts, err := s.Run([]Policy{p})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 {
		t.Fatalf("got %d points, want 1", len(pts))
	}
	return pts[0]
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	t.Logf("%s: got %.4f, want %.4f ± %.4f", what, got, want, tol)
	if math.Abs(got-want) > tol {
		t.Errorf("%s: got %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

// TestOutageParity checks the 2022 post's figures on its set-up: 100
// clients, 10 first tries per second each, for 10 s.
func TestOutageParity(t *testing.T) {
	half := OutageSweep{FailureRates: []float64{0.5}, Runs: 20, Seed: 2022}
	all := OutageSweep{FailureRates: []float64{1}, Runs: 1, Seed: 2022}

	r3 := outagePoint(t, half, Retries(3))
	// Published: 93.6 % and 1.88; exactly 1 − 0.5⁴ = 93.75 % and
	// 1 + 0.5 + 0.25 + 0.125 = 1.875 for independent failures.
	// The tolerances are 3 standard errors of the mean of 20 runs.
	near(t, "3 retries, p = 0.5, success", r3.Success.Mean, 0.9375, 0.005)
	near(t, "3 retries, p = 0.5, amplification", r3.Amplification.Mean, 1.875, 0.02)
	near(t, "3 retries, p = 1, amplification", outagePoint(t, all, Retries(3)).Amplification.Mean, 4, 0)
	near(t, "breaker, p = 1, amplification", outagePoint(t, all, Breaker()).Amplification.Mean, 1, 0)
	near(t, "no retries, p = 0.5, success", outagePoint(t, half, NoRetries()).Success.Mean, 0.5, 0.01)

	// The bucket's 1.10 is its steady state: each first try adds 0.1
	// token and each retry takes 1. Over the post's 10 s the full bucket
	// it starts with (4 tokens above the floor of 1) adds 4 retries per
	// client to the 100 first tries it sends: 1.14.
	near(t, "token bucket, p = 1, 10 s, amplification", outagePoint(t, all, TokenBucket()).Amplification.Mean, 1.1+4.0/100, 0.005)
	long := all
	long.Outage.Duration = 100 * time.Second
	near(t, "token bucket, p = 1, 100 s, amplification", outagePoint(t, long, TokenBucket()).Amplification.Mean, 1.10, 0.005)
}

// TestOutageClientSplit splits 100 first tries per second over 10, 100 and
// 1000 clients, as the post does: with many small clients, per-client
// estimates of the failure rate are poor, and the bucket (which starts
// full) behaves like 3 retries while the breaker trips at once and behaves
// like no retries.
func TestOutageClientSplit(t *testing.T) {
	amp := map[string]map[int]float64{}
	for _, n := range []int{10, 100, 1000} {
		s := OutageSweep{Outage: Outage{Clients: n, Rate: 100 / float64(n)}, FailureRates: []float64{0.5}, Runs: 2, Seed: 9}
		pts, err := s.Run([]Policy{TokenBucket(), Breaker()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if amp[p.Policy] == nil {
				amp[p.Policy] = map[int]float64{}
			}
			amp[p.Policy][n] = p.Amplification.Mean
			t.Logf("%4d clients, %-12s success %.3f amplification %.3f", n, p.Policy, p.Success.Mean, p.Amplification.Mean)
		}
	}
	if b := amp["token bucket"]; !(b[10] < b[100] && b[100] < b[1000] && b[1000] > 1.8) {
		t.Errorf("token bucket amplification by clients: %v; want it to grow towards 3 retries' 1.875", b)
	}
	if b := amp["breaker"]; !(b[1000] <= b[10] && b[1000] < 1.01) {
		t.Errorf("breaker amplification by clients: %v; want it to fall to no retries' 1.0", b)
	}
}

func TestOutageHealthyServer(t *testing.T) {
	for _, p := range OutageAnchors() {
		r, err := Outage{Clients: 10}.Run(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.FirstTries == 0 || r.Succeeded != r.FirstTries || r.Attempts != r.FirstTries {
			t.Fatalf("%s with p = 0: %+v; want every first try to succeed at once", p.Name, r)
		}
		if math.Abs(float64(r.FirstTries)-1000) > 150 {
			t.Fatalf("%s: %d first tries from 10 clients at 10/s for 10 s, want about 1000", p.Name, r.FirstTries)
		}
	}
}

// Yaoki's loop waits between attempts; the budget hears every outcome and
// the breaker every attempt, and refusals are counted by reason.
func TestOutageGuardsAndWaits(t *testing.T) {
	var seen int
	p := Policy{Name: "loop", Guards: func(func() float64) Guards {
		return Guards{Budget: &countingBudget{seen: &seen}}
	}}
	r, err := Outage{Clients: 5, FailureRate: 1}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 3*r.FirstTries || r.GaveUp[retry.ReasonExhausted] != r.FirstTries || seen != r.Attempts {
		t.Fatalf("3 attempts per call against a dead server: %+v, budget saw %d outcomes", r, seen)
	}
	r, _ = Outage{Clients: 5, FailureRate: 1}.Run(Breaker(), 1)
	if r.GaveUp[retry.ReasonBudgetExhausted] != r.FirstTries {
		t.Fatalf("retry breaker against a dead server: gave up %v, want all %d refused as budget exhausted", r.GaveUp, r.FirstTries)
	}
}

type countingBudget struct{ seen *int }

func (b *countingBudget) AllowRetryAt(time.Time, bool) bool { return true }
func (b *countingBudget) RecordAt(time.Time, bool, bool)    { *b.seen++ }

// reservingThrottle makes each of its first 1000 answers a wait of 100 ms
// (a rate limiter that reserves a token for each question, so that a loop
// asking again after every wait never sends), then admits at once; it
// counts the questions.
type reservingThrottle struct{ asked, waited *int }

func (th reservingThrottle) AdmitAt(time.Time) (time.Duration, error) {
	*th.asked++
	if *th.asked <= 1000 {
		*th.waited++
		return 100 * time.Millisecond, nil
	}
	return 0, nil
}
func (th reservingThrottle) RecordAt(time.Time, bool) {}

// The loop asks the throttle once per attempt and sends after the wait it
// gets, as package retry does: asking again after the wait would reserve a
// second token (with throttle.Cubic, forever: the run never ended).
func TestOutageThrottleAskedOncePerAttempt(t *testing.T) {
	var asked, waited int
	p := Policy{Guards: func(func() float64) Guards { return Guards{Throttle: reservingThrottle{&asked, &waited}} }}
	r, err := Outage{Clients: 2, Duration: time.Second, FailureRate: 0.5}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if asked != r.Attempts || waited != r.Attempts {
		t.Fatalf("throttle asked %d times, waited %d, for %d attempts: want one question (and one wait) per attempt", asked, waited, r.Attempts)
	}
	// The real rate limiter reserves a token on every question: the run ends
	// and every call is accounted for.
	p = Policy{Guards: func(func() float64) Guards {
		c, _ := throttle.NewCubic(throttle.CubicConfig{})
		return Guards{Throttle: c}
	}}
	r, err = Outage{Clients: 2, Rate: 5, Duration: 5 * time.Second, FailureRate: 0.5, Overload: true}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Succeeded+r.GaveUp.Total() != r.FirstTries {
		t.Fatalf("cubic: %d succeeded + %d gave up, want all %d calls", r.Succeeded, r.GaveUp.Total(), r.FirstTries)
	}
}

// turnThrottle admits at once and counts the turns handed back.
type turnThrottle struct{ cancelled *int }

func (turnThrottle) AdmitAt(time.Time) (time.Duration, error) { return 0, nil }
func (turnThrottle) RecordAt(time.Time, bool)                 {}
func (th turnThrottle) CancelAt(time.Time)                    { *th.cancelled++ }

// refusingBreaker refuses every attempt.
type refusingBreaker struct{}

func (refusingBreaker) AllowAt(time.Time, bool) (uint64, error)        { return 0, errors.New("open") }
func (refusingBreaker) DoneAt(time.Time, uint64, time.Duration, error) {}

// An attempt the throttle admitted and the breaker refused hands its turn
// back to the throttle, as in package retry.
func TestOutageBreakerRefusalHandsThrottleTurnBack(t *testing.T) {
	var cancelled int
	p := Policy{Guards: func(func() float64) Guards {
		return Guards{Throttle: turnThrottle{&cancelled}, Breaker: refusingBreaker{}}
	}}
	r, err := Outage{Clients: 2, Duration: time.Second}.Run(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 0 || r.GaveUp[retry.ReasonBreakerOpen] != r.FirstTries || r.Refused != r.FirstTries || cancelled != r.FirstTries {
		t.Fatalf("%+v, %d turns handed back; want every call refused by the breaker and its turn handed back", r, cancelled)
	}
}
