package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// The limiter admits PerWindow attempts per window and refuses the others
// with 429 and the seconds left in the window, rounded down or up.
func TestRateLimitServer(t *testing.T) {
	for _, up := range []bool{false, true} {
		var hints []time.Duration
		p := NoRetries()
		p.Classify = func(err error) retry.Class {
			if h, ok := retry.HintOf(err); ok {
				hints = append(hints, h)
			}
			return retry.ClassThrottled
		}
		s := RateLimit{Clients: 3, Load: 2, PerWindow: 10, Window: 10 * time.Second, Duration: 100 * time.Second, RoundUp: up}
		r, err := s.Run(p, 7)
		if err != nil {
			t.Fatal(err)
		}
		// 10 windows of 10 s while calls come, and one more for the last
		// attempts in flight.
		if r.Attempts != r.FirstTries || r.Succeeded != r.Attempts-r.Limited || r.Succeeded > 11*10 || r.Succeeded < 10*10 {
			t.Fatalf("round up %v: %+v; want one attempt per call and 100 to 110 admitted", up, r)
		}
		if math.Abs(float64(r.FirstTries)-200) > 45 {
			t.Fatalf("round up %v: %d calls, want about 200 (Load 2 of 10 per 10 s, for 100 s)", up, r.FirstTries)
		}
		if len(hints) != r.Limited || len(hints) < 60 {
			t.Fatalf("round up %v: %d hints for %d refusals, want one each", up, len(hints), r.Limited)
		}
		lo, hi := 0*time.Second, 9*time.Second
		if up {
			lo, hi = time.Second, 10*time.Second
		}
		seen := map[time.Duration]bool{}
		for _, h := range hints {
			if h < lo || h > hi || h%time.Second != 0 {
				t.Fatalf("round up %v: Retry-After %v, want whole seconds in [%v, %v]", up, h, lo, hi)
			}
			seen[h] = true
		}
		if len(seen) < 5 {
			t.Errorf("round up %v: only %d distinct Retry-After values over windows of 10 s", up, len(seen))
		}
	}
}

// The figure behind retry's rule that a hint of 0 is no hint. A limiter
// of 100 per 1 s window says "Retry-After: 0" to every call it refuses.
// Retried at once, the call comes back into the window that has just
// refused it and is refused again: the retry buys next to nothing. The
// backoff's spread (from 1 s for a 429) moves it into a later window,
// where the Poisson arrivals often left room.
func TestRateLimitZeroHintBackoffBeatsAtOnce(t *testing.T) {
	pts, err := RateLimitSweep{Loads: []float64{1, 1.1}, Runs: 5, Seed: 2026, Workers: 2}.Run(RateLimitPolicies())
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string, load float64) RateLimitPoint {
		for _, p := range pts {
			if p.Policy == name && p.Load == load {
				return p
			}
		}
		t.Fatalf("no point for %q at load %v", name, load)
		return RateLimitPoint{}
	}
	for _, load := range []float64{1, 1.1} {
		y, once, none := at("yaoki", load), at("yaoki, retrying at once", load), at("no retries", load)
		t.Logf("load %v: success yaoki %.4f, at once %.4f, none %.4f", load, y.Success.Mean, once.Success.Mean, none.Success.Mean)
		if y.Success.Mean < once.Success.Mean+0.005 {
			t.Errorf("load %v: the backoff's success %.4f is not above retrying at once (%.4f)", load, y.Success.Mean, once.Success.Mean)
		}
		if once.Success.Mean > none.Success.Mean+0.01 {
			t.Errorf("load %v: retrying at once succeeded on %.4f, more than a point above no retries (%.4f)", load, once.Success.Mean, none.Success.Mean)
		}
	}
}

func TestRateLimitValidate(t *testing.T) {
	for _, tt := range []struct {
		s     RateLimit
		field string
	}{
		{RateLimit{Clients: -1}, "RateLimit.Clients"},
		{RateLimit{Load: -1}, "RateLimit.Load"},
		{RateLimit{PerWindow: -5}, "RateLimit.PerWindow"},
		{RateLimit{Window: -time.Second}, "RateLimit.Window"},
		{RateLimit{Duration: 48 * time.Hour}, "RateLimit.Duration"},
		{RateLimit{HopMean: -1}, "RateLimit.HopMean"},
	} {
		_, err := tt.s.Run(Yaoki(), 1)
		if !errors.Is(err, ErrInvalidConfig) || err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%+v: got %v, want ErrInvalidConfig naming %s", tt.s, err, tt.field)
		}
	}
	if _, err := (RateLimitSweep{RateLimit: RateLimit{Clients: -1}}).Run(RateLimitPolicies()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("sweep with a bad scenario: %v, want ErrInvalidConfig", err)
	}
}
