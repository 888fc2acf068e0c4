package throttle

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var figures = flag.Bool("figures", false, "TestAdaptiveFigures prints the table of docs/overload.md (about a minute)")

// The scenarios behind Adaptive's defaults. Each drives one client that
// sends perSecond requests/s, evenly spaced, on virtual time; draws come
// from PCG sources seeded with seed, so that a figure is repeatable. A nil
// config is no throttle at all (a nil *Adaptive admits everything).

func seeded(c *AdaptiveConfig, seed uint64) *Adaptive {
	if c == nil {
		return nil
	}
	cfg := *c
	cfg.Rand = rand.New(rand.NewPCG(seed, 7)).Float64
	a, err := NewAdaptive(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// drive sends perSecond requests/s from at(0) until end; answer says
// whether the backend throttles the request it receives at now. It
// returns the requests offered and those the backend accepted; stop, if
// not nil, is asked before each request and ends the run when true.
func drive(a *Adaptive, perSecond int, end time.Duration, answer func(now time.Time) bool, stop func(now time.Time) bool) (offered, reached, accepted int) {
	step := time.Second / time.Duration(perSecond)
	for now := at(0); now.Before(at(end)); now = now.Add(step) {
		if stop != nil && stop(now) {
			break
		}
		offered++
		if _, err := a.AdmitAt(now); err != nil {
			continue
		}
		reached++
		throttled := answer(now)
		if !throttled {
			accepted++
		}
		a.RecordAt(now, throttled)
	}
	return offered, reached, accepted
}

const figureRun = 5 * time.Minute

// deadShare is the share of the requests offered over 5 minutes that
// reach a backend throttling every request (the load on a dead dependency).
func deadShare(c *AdaptiveConfig, perSecond int, seed uint64) float64 {
	offered, reached, _ := drive(seeded(c, seed), perSecond, figureRun, func(time.Time) bool { return true }, nil)
	return float64(reached) / float64(offered)
}

// recoveryTime is how long after a 5-minute outage (every request
// throttled) the rejection probability stays at 0.1 or above, looked at
// each whole second, up to an hour.
func recoveryTime(c *AdaptiveConfig, perSecond int, seed uint64) time.Duration {
	a := seeded(c, seed)
	back := at(5 * time.Minute)
	took := time.Duration(-1)
	drive(a, perSecond, time.Hour, func(now time.Time) bool { return now.Before(back) }, func(now time.Time) bool {
		if !now.Before(back) && now.Sub(back)%time.Second == 0 && a.ProbabilityAt(now) < 0.1 {
			took = now.Sub(back)
			return true
		}
		return false
	})
	return took
}

// partialSuccess is the share of the requests offered over 5 minutes that
// succeed against a backend throttling each request it receives with
// probability rejected, independently of the load.
func partialSuccess(c *AdaptiveConfig, perSecond int, seed uint64, rejected float64) float64 {
	backend := rand.New(rand.NewPCG(seed, 11))
	offered, _, accepted := drive(seeded(c, seed), perSecond, figureRun, func(time.Time) bool { return backend.Float64() < rejected }, nil)
	return float64(accepted) / float64(offered)
}

// adaptiveFigures are one configuration's figures at one rate over seeds.
type adaptiveFigures struct {
	dead                 float64 // mean share reaching a dead backend
	backMin, backMax     time.Duration
	success50, success90 float64 // mean success shares
}

func measureAdaptive(c *AdaptiveConfig, perSecond int, seeds uint64) adaptiveFigures {
	var f adaptiveFigures
	var back []time.Duration
	for seed := range seeds {
		f.dead += deadShare(c, perSecond, seed) / float64(seeds)
		f.success50 += partialSuccess(c, perSecond, seed, 0.5) / float64(seeds)
		f.success90 += partialSuccess(c, perSecond, seed, 0.9) / float64(seeds)
		if c != nil {
			back = append(back, recoveryTime(c, perSecond, seed))
		}
	}
	if len(back) > 0 {
		f.backMin, f.backMax = slices.Min(back), slices.Max(back)
	}
	return f
}

var figureRates = []int{10, 100, 1000}

// TestAdaptiveFigures prints the table behind Adaptive's defaults
// (docs/overload.md): for no throttle, the book's formula, bounds on the
// probability and lighter weights of local rejections, at 10, 100 and
// 1000 requests/s, means over 4 seeds (recovery: the range).
//
//	go test -run TestAdaptiveFigures -v ./throttle/ -args -figures
func TestAdaptiveFigures(t *testing.T) {
	if !*figures {
		t.Skip("prints the table of docs/overload.md with -args -figures")
	}
	book := func(maxP, weight float64) *AdaptiveConfig {
		return &AdaptiveConfig{MaxProbability: maxP, RejectionWeight: weight}
	}
	rows := []struct {
		name string
		c    *AdaptiveConfig
	}{
		{"no throttle", nil},
		{"the book (no bound, weight 1)", book(1, 1)},
		{"bound 0.99, weight 1", book(0.99, 1)},
		{"bound 0.95, weight 1", book(0.95, 1)},
		{"bound 0.9, weight 1", book(0.9, 1)},
		{"bound 0.8, weight 1", book(0.8, 1)},
		{"no bound, weight 0.5", book(1, 0.5)},
		{"no bound, weight 0.1", book(1, 0.1)},
		{"bound 0.99, weight 0.2", book(0.99, 0.2)},
		{"**bound 0.99, weight 0.1 (default)**", &AdaptiveConfig{}},
		{"bound 0.99, weight 0.05", book(0.99, 0.05)},
		{"bound 0.95, weight 0.2", book(0.95, 0.2)},
	}
	var b strings.Builder
	b.WriteString("| configuration | reaching a dead backend | min at p ≥ 0.1 after a 5-min outage | success, 50 % rejected | success, 90 % rejected |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		var cells [4][]string
		for _, rate := range figureRates {
			f := measureAdaptive(r.c, rate, 4)
			cells[0] = append(cells[0], fmt.Sprintf("%.2f %%", 100*f.dead))
			if r.c == nil {
				cells[1] = append(cells[1], "0")
			} else {
				cells[1] = append(cells[1], fmt.Sprintf("%s–%s", minutes(f.backMin), minutes(f.backMax)))
			}
			cells[2] = append(cells[2], fmt.Sprintf("%.1f %%", 100*f.success50))
			cells[3] = append(cells[3], fmt.Sprintf("%.2f %%", 100*f.success90))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.name,
			strings.Join(cells[0], " / "), strings.Join(cells[1], " / "), strings.Join(cells[2], " / "), strings.Join(cells[3], " / "))
	}
	fmt.Print(b.String())
}

// minutes formats d as minutes with one decimal.
func minutes(d time.Duration) string { return fmt.Sprintf("%.1f", d.Minutes()) }

// TestAdaptiveDefaultFigures pins the figures of the defaults' row in the
// table of docs/overload.md (TestAdaptiveFigures: the same scenarios, on
// the first of its 4 seeds, to keep the test short under -race): about 1 % of the requests reach a dead backend, the client is
// back within about a minute of a 5-minute outage's end, and a backend
// that throttles half of what it receives regardless of load serves about
// as many requests as without a throttle.
func TestAdaptiveDefaultFigures(t *testing.T) {
	for _, perSecond := range figureRates {
		f := measureAdaptive(&AdaptiveConfig{}, perSecond, 1)
		t.Logf("%d requests/s: %.2f %% reach a dead backend; p ≥ 0.1 for %v–%v after an outage; success %.1f %% at 50 %% rejected, %.2f %% at 90 %%",
			perSecond, 100*f.dead, f.backMin, f.backMax, 100*f.success50, 100*f.success90)
		if f.dead < 0.009 || f.dead > 0.015 {
			t.Errorf("%d requests/s: %.4f of the requests reached a dead backend, want 0.009 to 0.015", perSecond, f.dead)
		}
		if f.backMax > 70*time.Second {
			t.Errorf("%d requests/s: rejection probability at 0.1 or above up to %v after the outage, want ≤ 70s", perSecond, f.backMax)
		}
		if f.success50 < 0.48 {
			t.Errorf("%d requests/s: %.4f succeeded against a backend rejecting half, want ≥ 0.48 (0.50 without a throttle)", perSecond, f.success50)
		}
		if f.success90 < 0.01 {
			t.Errorf("%d requests/s: %.4f succeeded against a backend rejecting 90 %%, want ≥ 0.01", perSecond, f.success90)
		}
	}
}
