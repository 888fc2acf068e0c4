package sim

import (
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// The 2015 post's formulas, written as the post writes them, with its
// attempt numbering (1 for the first retry).
func postExpo(base, limit time.Duration, n int) float64 {
	return math.Min(float64(limit), float64(base)*math.Pow(2, float64(n)))
}

func TestHerdStrategiesAreThePostsFormulas(t *testing.T) {
	base, limit := 5*time.Millisecond, 2*time.Second
	ps := HerdStrategies(base, limit)
	names := []string{"none", "exponential", "full", "equal", "decorrelated"}
	for i, p := range ps {
		if p.Name != names[i] || p.MaxAttempts != retry.Unlimited {
			t.Fatalf("strategy %d: got %q with MaxAttempts %d, want %q, unlimited", i, p.Name, p.MaxAttempts, names[i])
		}
	}
	if !ps[0].Immediate {
		t.Fatal(`"none" waits; want no wait at all`)
	}
	for _, u := range []float64{0, 0.25, 0.5, 0.999} {
		for n := 1; n <= 12; n++ {
			v := postExpo(base, limit, n)
			checks := []struct {
				name string
				want float64
				p    Policy
			}{
				{"exponential", v, ps[1]},
				{"full", v * u, ps[2]},
				{"equal", v/2 + v/2*u, ps[3]},
			}
			for _, c := range checks {
				got := float64(c.p.Backoff.Delay(n, 0, u))
				if math.Abs(got-c.want) > 1 { // 1 ns of rounding
					t.Errorf("%s, retry %d, draw %v: got %v, want %v", c.name, n, u, time.Duration(got), time.Duration(c.want))
				}
			}
		}
		// Decorrelated: sleep starts at base; min(cap, U[base, 3·sleep)).
		sleep := float64(base)
		prev := time.Duration(0)
		for n := 1; n <= 12; n++ {
			want := math.Min(float64(limit), float64(base)+(3*sleep-float64(base))*u)
			got := ps[4].Backoff.Delay(n, prev, u)
			if math.Abs(float64(got)-want) > 1 {
				t.Errorf("decorrelated, retry %d, draw %v: got %v, want %v", n, u, got, time.Duration(want))
			}
			sleep, prev = float64(got), got // chain from the value used, as the post does
		}
	}
}

// TestHerdParity checks the published figures of the 2015 post at 100
// clients, averaged over 100 runs as the post's simulation does: within 3 %
// on calls and 6 % on completion time.
func TestHerdParity(t *testing.T) {
	want := map[string]struct{ calls, secs float64 }{
		"none":         {2420, 2.0},
		"exponential":  {1850, 63},
		"full":         {795, 4.9},
		"equal":        {810, 6.6},
		"decorrelated": {1000, 4.5},
	}
	pts, err := HerdSweep{Clients: []int{100}, Runs: 100, Seed: 2015}.Run(HerdStrategies(5*time.Millisecond, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		w := want[p.Policy]
		dc := p.Calls.Mean/w.calls - 1
		dt := p.Time.Mean/w.secs - 1
		t.Logf("%-12s calls %7.1f (published %4.0f, %+5.1f %%)  time %6.2f s (published %4.1f s, %+5.1f %%)",
			p.Policy, p.Calls.Mean, w.calls, 100*dc, p.Time.Mean, w.secs, 100*dt)
		if math.Abs(dc) > 0.03 {
			t.Errorf("%s: %.1f calls, want %v within 3 %%", p.Policy, p.Calls.Mean, w.calls)
		}
		if math.Abs(dt) > 0.06 {
			t.Errorf("%s: %.2f s, want %v s within 6 %%", p.Policy, p.Time.Mean, w.secs)
		}
		if p.GaveUp.Mean != 0 {
			t.Errorf("%s: %v clients gave up, want none (unlimited attempts)", p.Policy, p.GaveUp.Mean)
		}
	}
}

func TestHerdIsRepeatable(t *testing.T) {
	h := Herd{Clients: 50}
	for _, p := range HerdStrategies(5*time.Millisecond, 2*time.Second) {
		a, b := mustHerd(t, h, p, 42), mustHerd(t, h, p, 42)
		if a != b {
			t.Fatalf("%s: two runs with seed 42 differ: %+v and %+v", p.Name, a, b)
		}
		if a.Succeeded != 50 {
			t.Fatalf("%s: %d of 50 clients got their write in, want all", p.Name, a.Succeeded)
		}
	}
}

func TestHerdSweepDoesNotDependOnWorkers(t *testing.T) {
	ps := HerdStrategies(5*time.Millisecond, 2*time.Second)
	s := HerdSweep{Clients: []int{10, 30}, Runs: 5, Seed: 1}
	one, err := s.Run(ps)
	if err != nil {
		t.Fatal(err)
	}
	s.Workers = 3
	var calls []int
	s.Progress = func(done, total int) { calls = append(calls, done) }
	three, err := s.Run(ps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if one[i] != three[i] {
			t.Fatalf("point %d: 1 worker gave %+v, 3 workers %+v", i, one[i], three[i])
		}
	}
	if len(calls) != len(one) || calls[len(calls)-1] != len(one) {
		t.Fatalf("progress was told %v, want 1 to %d", calls, len(one))
	}
}

// With an attempt limit, clients give up: the completion time is when the
// last one stopped, and they are counted by reason.
func TestHerdWithAttemptLimit(t *testing.T) {
	r := mustHerd(t, Herd{Clients: 100}, Policy{Name: "yaoki", Backoff: HerdStrategies(5*time.Millisecond, 2*time.Second)[2].Backoff}, 3)
	if r.Succeeded+r.GaveUp.Total() != 100 {
		t.Fatalf("%d succeeded + %d gave up, want 100 clients accounted for", r.Succeeded, r.GaveUp.Total())
	}
	if r.GaveUp[retry.ReasonExhausted] == 0 || r.GaveUp[retry.ReasonExhausted] != r.GaveUp.Total() {
		t.Fatalf("gave up: %v; want some, all with attempts exhausted (3 attempts for 100 clients)", r.GaveUp)
	}
	if r.Calls > 300 {
		t.Fatalf("%d calls from 100 clients with 3 attempts each", r.Calls)
	}
}

// Guards shared between clients get every answer in time order; the result
// is still a full herd.
func TestHerdSharedGuards(t *testing.T) {
	p := TokenBucket()
	p.Shared = true
	r := mustHerd(t, Herd{Clients: 20}, p, 1)
	if r.Succeeded+r.GaveUp.Total() != 20 || r.GaveUp[retry.ReasonBudgetExhausted] == 0 {
		t.Fatalf("shared bucket: %d succeeded, gave up %v; want 20 accounted for, some refused by the budget", r.Succeeded, r.GaveUp)
	}
}

func mustHerd(t *testing.T, h Herd, p Policy, seed uint64) HerdResult {
	t.Helper()
	r, err := h.Run(p, seed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
