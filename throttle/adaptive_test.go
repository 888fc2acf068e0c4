package throttle

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func fixed(u float64) func() float64 { return func() float64 { return u } }

// hammer runs step(0) … step(n−1) in each of goroutines goroutines at once
// (the tests that call it run with -race); a goroutine stops at the first
// step that returns false.
func hammer(goroutines, n int, step func(i int) bool) {
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range n {
				if !step(i) {
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestAdaptiveProbability(t *testing.T) {
	cases := []struct {
		requests, accepts int
		want              float64
	}{
		{0, 0, 0},
		{10, 10, 0},        // (10 − 20)/11 < 0
		{10, 5, 0},         // exactly K·accepts = requests
		{10, 3, 4.0 / 11},  // (10 − 6)/11
		{10, 0, 10.0 / 11}, // nothing accepted
		{100, 0, 0.99},     // 100/101 above the bound DefaultMaxProbability
		{1000, 0, 0.99},
	}
	for _, c := range cases {
		a, _ := NewAdaptive(AdaptiveConfig{})
		for i := 0; i < c.requests; i++ {
			a.RecordAt(at(0), i >= c.accepts) // throttled unless among the accepted
		}
		if got := a.ProbabilityAt(at(0)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%d requests, %d accepted: p = %v, want %v", c.requests, c.accepts, got, c.want)
		}
	}
}

// TestAdaptiveBoundAndWeight: MaxProbability caps the book's formula, and
// RejectionWeight scales what local rejections add to its requests. Each
// row records outcomes, then rejects with a draw of 0 (below any positive
// probability) and reads the probability.
func TestAdaptiveBoundAndWeight(t *testing.T) {
	cases := []struct {
		maxP, weight       float64
		throttled, rejects int
		want               float64
	}{
		{1, 1, 100, 0, 100.0 / 101},     // the book, unbounded
		{0.9, 1, 100, 0, 0.9},           // bounded
		{0.9, 1, 5, 0, 5.0 / 6},         // below the bound: the formula
		{1, 1, 10, 10, 20.0 / 21},       // rejections count fully
		{1, 0.5, 10, 10, 15.0 / 16},     // at half
		{1, 0.1, 10, 10, 11.0 / 12},     // at a tenth
		{0.99, 0.1, 10, 1000, 0.99},     // 110/111 above the bound
		{1, 0.1, 10, 1000, 110.0 / 111}, // and without it
		{1, 0.01, 1, 1, 1.01 / 2.01},    // a rejection weighs a hundredth
		{0.99, 0.1, 0, 0, 0},            // nothing counted
	}
	for _, c := range cases {
		a, err := NewAdaptive(AdaptiveConfig{MaxProbability: c.maxP, RejectionWeight: c.weight, Rand: fixed(0)})
		if err != nil {
			t.Fatal(err)
		}
		for range c.throttled {
			a.RecordAt(at(0), true)
		}
		for i := range c.rejects {
			if _, err := a.AdmitAt(at(0)); err == nil {
				t.Fatalf("bound %v, weight %v: rejection %d admitted", c.maxP, c.weight, i)
			}
		}
		if got := a.ProbabilityAt(at(0)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("bound %v, weight %v, %d throttled, %d rejected: p = %v, want %v", c.maxP, c.weight, c.throttled, c.rejects, got, c.want)
		}
	}
	// A draw at or above the bound always admits, however long the outage.
	a, _ := NewAdaptive(AdaptiveConfig{MaxProbability: 0.8, Rand: fixed(0.8)})
	for i := range 10_000 {
		now := at(time.Duration(i) * 10 * time.Millisecond)
		if _, err := a.AdmitAt(now); err != nil {
			t.Fatalf("request %d rejected with draw 0.8, bound 0.8: %v", i, err)
		}
		a.RecordAt(now, true)
	}
}

func TestAdaptiveRejectsWithProbability(t *testing.T) {
	u := 0.3
	a, _ := NewAdaptive(AdaptiveConfig{Rand: func() float64 { return u }})
	for i := 0; i < 10; i++ {
		a.RecordAt(at(0), i >= 3) // 3 accepted of 10: p = 4/11 ≈ 0.364
	}
	_, err := a.AdmitAt(at(time.Second))
	var re *RejectedError
	if !errors.Is(err, ErrThrottled) || !errors.As(err, &re) {
		t.Fatalf("draw 0.3 < p 0.364: got %v, want a rejection", err)
	}
	if re.Requests != 11 || re.Accepts != 3 || math.Abs(re.Probability-4.0/11) > 1e-12 {
		t.Fatalf("got %+v", *re)
	}
	if !strings.Contains(err.Error(), "accepted 3 of the last 11 requests") {
		t.Fatalf("message %q", err)
	}
	// The rejection counted as a tenth of a request (DefaultRejectionWeight):
	// p = (10.1 − 6)/11.1.
	if got := a.ProbabilityAt(at(time.Second)); math.Abs(got-4.1/11.1) > 1e-12 {
		t.Fatalf("p after a rejection %v, want 4.1/11.1", got)
	}
	u = 0.37 // above 4.1/11.1 ≈ 0.369
	if w, err := a.AdmitAt(at(time.Second)); err != nil || w != 0 {
		t.Fatalf("draw 0.45 ≥ p: got %v, %v, want admitted at once", w, err)
	}
	// Two minutes later the counts have left the window.
	u = 0
	if _, err := a.AdmitAt(at(2*time.Minute + time.Second)); err != nil {
		t.Fatalf("after the window: %v, want admitted", err)
	}
}

// TestAdaptiveSheds drives Adaptive against a backend that answers every
// request it receives with 429 and counts what reaches it: the client
// rejects almost everything locally, the book's formula all but 1 in 5000,
// the defaults all but about 1 in 100 (DefaultMaxProbability).
func TestAdaptiveSheds(t *testing.T) {
	src := rand.New(rand.NewPCG(7, 7))
	for _, c := range []struct {
		name     string
		cfg      AdaptiveConfig
		maxShare float64
	}{
		{"the book's formula", AdaptiveConfig{MaxProbability: 1, RejectionWeight: 1}, 0.0002},
		{"the defaults", AdaptiveConfig{}, 0.011},
	} {
		c.cfg.Rand = src.Float64
		a, _ := NewAdaptive(c.cfg)
		sent, reached := 0, 0
		for i := 0; i < 60_000; i++ { // 1000 requests/s for 60 s
			now := at(time.Duration(i) * time.Millisecond)
			sent++
			if _, err := a.AdmitAt(now); err != nil {
				continue
			}
			reached++
			a.RecordAt(now, true)
		}
		share := float64(reached) / float64(sent)
		t.Logf("%s, backend throttling everything: %d of %d requests reached it (%.2f %%)", c.name, reached, sent, 100*share)
		if share > c.maxShare || share < c.maxShare/10 {
			t.Errorf("%s: %d of %d requests reached a backend that throttles everything (%.4f), want %.5f to %.4f", c.name, reached, sent, share, c.maxShare/10, c.maxShare)
		}
	}
	// A backend that accepts half of what it receives: the client sends
	// about K = 2 requests per accepted one, without rejecting locally.
	a, _ := NewAdaptive(AdaptiveConfig{Rand: src.Float64})
	sent, reached := 0, 0
	for i := 0; i < 60_000; i++ {
		now := at(time.Duration(i) * time.Millisecond)
		sent++
		if _, err := a.AdmitAt(now); err != nil {
			continue
		}
		reached++
		a.RecordAt(now, reached%2 == 0)
	}
	t.Logf("backend accepting half: %d of %d requests reached it (%.2f %%)", reached, sent, 100*float64(reached)/float64(sent))
	if share := float64(reached) / float64(sent); share < 0.95 {
		t.Fatalf("%d of %d reached a backend accepting half (%.3f), want ≥ 95 %%", reached, sent, share)
	}
}

func TestAdaptiveConcurrent(t *testing.T) {
	a, _ := NewAdaptive(AdaptiveConfig{})
	hammer(16, 1000, func(i int) bool {
		now := at(time.Duration(i) * time.Millisecond)
		if _, err := a.AdmitAt(now); err == nil {
			a.RecordAt(now, i%3 == 0)
		}
		if p := a.ProbabilityAt(now); !(p >= 0 && p < 1) {
			t.Errorf("probability %v outside [0, 1)", p)
			return false
		}
		return true
	})
	// Every question counted once as a request, admitted (through
	// RecordAt) or rejected: no update was lost.
	end := at(time.Second)
	if req, acc := a.requests.Sum(end), a.accepts.Sum(end); req != 16*1000 || acc > req {
		t.Fatalf("requests %d, accepts %d; want 16000 requests and at most as many accepts", req, acc)
	}
}

func TestNilThrottlesAdmit(t *testing.T) {
	var a *Adaptive
	var c *Cubic
	var b *Bulkhead
	if w, err := a.AdmitAt(t0); w != 0 || err != nil {
		t.Fatal("nil Adaptive refused")
	}
	a.RecordAt(t0, true)
	if w, err := c.AdmitAt(t0); w != 0 || err != nil {
		t.Fatal("nil Cubic refused")
	}
	c.RecordAt(t0, true)
	if err := b.Acquire(nil); err != nil {
		t.Fatal("nil Bulkhead refused")
	}
	b.Release()
	if a.ProbabilityAt(t0) != 0 || b.InUse() != 0 {
		t.Fatal("nil gauges")
	}
}

func TestConfigErrors(t *testing.T) {
	second := func(_ any, err error) error { return err }
	for _, c := range []struct {
		err   error
		field string
	}{
		{second(NewAdaptive(AdaptiveConfig{K: 0.5})), "AdaptiveConfig.K"},
		{second(NewAdaptive(AdaptiveConfig{Window: time.Millisecond})), "AdaptiveConfig.Window"},
		{second(NewAdaptive(AdaptiveConfig{MaxProbability: 1.5})), "AdaptiveConfig.MaxProbability"},
		{second(NewAdaptive(AdaptiveConfig{MaxProbability: -0.5})), "AdaptiveConfig.MaxProbability"},
		{second(NewAdaptive(AdaptiveConfig{MaxProbability: math.NaN()})), "AdaptiveConfig.MaxProbability"},
		{second(NewAdaptive(AdaptiveConfig{RejectionWeight: 2})), "AdaptiveConfig.RejectionWeight"},
		{second(NewAdaptive(AdaptiveConfig{RejectionWeight: -0.1})), "AdaptiveConfig.RejectionWeight"},
		{second(NewAdaptive(AdaptiveConfig{RejectionWeight: math.Inf(1)})), "AdaptiveConfig.RejectionWeight"},
		{second(NewCubic(CubicConfig{Beta: 1})), "CubicConfig.Beta"},
		{second(NewCubic(CubicConfig{Scale: -1})), "CubicConfig.Scale"},
		{second(NewCubic(CubicConfig{Smooth: 2})), "CubicConfig.Smooth"},
		{second(NewCubic(CubicConfig{MinRate: -1})), "CubicConfig.MinRate"},
		{second(NewCubic(CubicConfig{MaxWait: 2 * time.Hour})), "CubicConfig.MaxWait"},
		{second(NewBulkhead(BulkheadConfig{Limit: -1})), "BulkheadConfig.Limit"},
		{second(NewBulkhead(BulkheadConfig{MaxWait: -1})), "BulkheadConfig.MaxWait"},
		// Values no range check of the form lo ≤ x ≤ hi lets through by
		// accident: NaN compares false both ways.
		{second(NewAdaptive(AdaptiveConfig{K: math.NaN()})), "AdaptiveConfig.K"},
		{second(NewAdaptive(AdaptiveConfig{K: math.Inf(1)})), "AdaptiveConfig.K"},
		{second(NewAdaptive(AdaptiveConfig{Window: -time.Minute})), "AdaptiveConfig.Window"},
		{second(NewCubic(CubicConfig{Beta: math.NaN()})), "CubicConfig.Beta"},
		{second(NewCubic(CubicConfig{Scale: math.Inf(1)})), "CubicConfig.Scale"},
		{second(NewCubic(CubicConfig{Smooth: math.NaN()})), "CubicConfig.Smooth"},
		{second(NewCubic(CubicConfig{MinRate: math.NaN()})), "CubicConfig.MinRate"},
		{second(NewCubic(CubicConfig{MinRate: math.Inf(1)})), "CubicConfig.MinRate"},
		{second(NewCubic(CubicConfig{MaxWait: -time.Second})), "CubicConfig.MaxWait"},
		{second(NewBulkhead(BulkheadConfig{Limit: 1e6 + 1})), "BulkheadConfig.Limit"},
		{second(NewBulkhead(BulkheadConfig{MaxWait: 2 * time.Hour})), "BulkheadConfig.MaxWait"},
	} {
		var ce *configerr.Error
		if !errors.Is(c.err, ErrInvalidConfig) || !errors.As(c.err, &ce) || ce.Field != c.field {
			t.Errorf("%s: got %v, want an error naming it", c.field, c.err)
			continue
		}
		if !strings.HasPrefix(c.err.Error(), "throttle: invalid configuration: "+c.field+": ") || !strings.Contains(c.err.Error(), "want") {
			t.Errorf("message %q", c.err)
		}
	}
}

func BenchmarkAdaptiveAdmit(b *testing.B) {
	a, _ := NewAdaptive(AdaptiveConfig{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.AdmitAt(t0); err == nil {
				a.RecordAt(t0, false)
			}
		}
	})
}

// TestAdaptiveDrawOutOfRange: the Rand hook breaks its contract (NaN, an
// infinity, a negative draw, 1 or more) while the rejection probability is
// above zero. The request is admitted, as if the throttle sat this one out:
// a NaN compared below every probability, so a source stuck on NaN (or on a
// negative value) rejected every request, each rejection raised the
// probability further, and the client never sent the request that would
// have seen its dependency recover.
func TestAdaptiveDrawOutOfRange(t *testing.T) {
	for _, draw := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, -0x1p-60, 1, 2, 1e12} {
		a, err := NewAdaptive(AdaptiveConfig{Rand: fixed(draw)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			a.RecordAt(at(0), i >= 3) // 3 accepted of 10: p = 4/11
		}
		for i := range 100 {
			if w, err := a.AdmitAt(at(time.Second)); w != 0 || err != nil {
				t.Fatalf("draw %v, request %d: got %v, %v; want admitted (a draw outside [0, 1) admits)", draw, i, w, err)
			}
		}
		if p := a.ProbabilityAt(at(time.Second)); math.Abs(p-4.0/11) > 1e-12 {
			t.Errorf("draw %v: p = %v after admitting, want 4/11 unchanged (an admitted request counts when recorded)", draw, p)
		}
	}
}

// TestAdaptiveRecoveryAfterOutage measures how long a client keeps shedding
// after its dependency recovers from an outage that throttled everything for
// 5 minutes. With the book's counting (every local rejection a whole
// request, no bound) the outage's counts leave the window after 2 minutes,
// but the rejections made meanwhile keep it full: the probability falls only
// as fast as the few admitted requests are accepted, and stayed at 0.1 or
// above for 7 to 19 minutes, while almost every call failed locally against
// a dependency that was fine. The defaults (a bound of 0.99, rejections at a
// tenth of a request) come back within about a minute. 4 seeds each, for
// clients of 10 and 100 requests/s (TestAdaptiveDefaultFigures adds 1000).
func TestAdaptiveRecoveryAfterOutage(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      AdaptiveConfig
		from, to time.Duration
	}{
		{"the defaults", AdaptiveConfig{}, 0, 90 * time.Second},
		{"the book's formula", AdaptiveConfig{MaxProbability: 1, RejectionWeight: 1}, 5 * time.Minute, 20 * time.Minute},
	} {
		for _, perSecond := range []int{10, 100} {
			var took []time.Duration
			for seed := range uint64(4) {
				d := recoveryTime(&c.cfg, perSecond, seed)
				took = append(took, d)
				if d < c.from || d > c.to {
					t.Errorf("%s, %d requests/s, seed %d: rejection probability below 0.1 %v after the dependency came back, want %v to %v",
						c.name, perSecond, seed, d, c.from, c.to)
				}
			}
			t.Logf("%s, %d requests/s: rejection probability below 0.1 after the dependency came back: %v", c.name, perSecond, took)
		}
	}
}
