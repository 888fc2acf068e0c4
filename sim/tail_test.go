package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// tailTest is the default shape at half the rate with shorter phases, so
// that the test runs in seconds under the race detector: 1500 measured
// requests of fan-out 100 in the healthy phase (the 99.9th percentile is
// the second slowest), 500 in the brownout.
var tailTest = Tail{Rate: 50, Duration: 31 * time.Second, Brownout: 10 * time.Second, Recovery: -1}

func tailPoints(t *testing.T, s TailSweep, policies []TailPolicy) map[string]TailPoint {
	t.Helper()
	pts, err := s.Run(policies)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]TailPoint{}
	for _, p := range pts {
		for _, ph := range []struct {
			name string
			s    TailPhaseStats
		}{{"healthy", p.Healthy}, {"brownout", p.Brownout}} {
			t.Logf("%-13s %-8s p50 %6.1fms p99 %7.1fms p99.9 %7.1fms, %+.1f %% requests",
				p.Policy, ph.name, 1000*ph.s.P50.Mean, 1000*ph.s.P99.Mean, 1000*ph.s.P999.Mean, 100*ph.s.Extra.Mean)
		}
		out[p.Policy] = p
	}
	return out
}

// TestTailAtScale reproduces the published shape: fan-out 100, 1 % of
// answers slow. Without hedging most requests wait for a slow answer; with
// yaoki's default hedging the 99.9th percentile is at least 10× lower, for
// at most 5 % more requests. During the brownout (every answer slow), the
// defaults add at most 5 % more requests, while naive fixed-delay hedging
// copies every call twice.
func TestTailAtScale(t *testing.T) {
	pts := tailPoints(t, TailSweep{Tail: tailTest, Runs: 1, Seed: 7}, TailPolicies(10*time.Millisecond))
	none, fixed, yaoki := pts["none"], pts["fixed"], pts["yaoki"]
	if none.Healthy.Extra.Mean != 0 {
		t.Errorf("no hedging: %.3f hedges per call, want 0", none.Healthy.Extra.Mean)
	}
	if r := none.Healthy.P999.Mean / yaoki.Healthy.P999.Mean; r < 10 {
		t.Errorf("healthy p99.9: %.3fs without hedging, %.3fs with the defaults: %.1f× lower, want ≥ 10×",
			none.Healthy.P999.Mean, yaoki.Healthy.P999.Mean, r)
	}
	if x := yaoki.Healthy.Extra.Mean; x > 0.05 || x == 0 {
		t.Errorf("healthy: defaults sent %.1f %% more requests, want some and ≤ 5 %%", 100*x)
	}
	if x := yaoki.Brownout.Extra.Mean; x > 0.05 {
		t.Errorf("brownout: defaults sent %.1f %% more requests, want ≤ 5 %%", 100*x)
	}
	if x := fixed.Brownout.Extra.Mean; x < 1.9 {
		t.Errorf("brownout: naive fixed-delay hedging sent %.0f %% more requests, want about 200 %% (2 hedges per call)", 100*x)
	}
}

// The brownout stop alone keeps a fixed delay from copying every call
// during the brownout: within a second of its start, hedging stops, and
// it resumes within a second of its end.
func TestTailBrownoutStop(t *testing.T) {
	tail := tailTest
	tail.Recovery = 5 * time.Second
	pts := tailPoints(t, TailSweep{Tail: tail, Runs: 1, Seed: 3}, []TailPolicy{
		{Name: "stop", Hedge: &hedge.Config{Delay: 20 * time.Millisecond, Budget: hedge.Off}},
	})
	secs := pts["stop"].Seconds // the brownout is [31 s, 41 s)
	if x := secs[31].Extra; x < 0.5 {
		t.Errorf("first second of the brownout: %.1f %% more requests, want the stop to take about half a second (at 200 %%)", 100*x)
	}
	for i := 32; i < 41; i++ {
		if x := secs[i].Extra; x > 0.01 {
			t.Errorf("second %d, in the brownout: %.1f %% more requests, want ≤ 1 %% (stopped)", i, 100*x)
		}
	}
	for i := 42; i < 46; i++ {
		if x := secs[i].Extra; x == 0 {
			t.Errorf("second %d, after the brownout: no hedges, want them back", i)
		}
	}
}

// A sweep is a pure function of its seed: the same with one worker or two,
// and every policy sees the same first attempts (no hedging on both sides
// gives the same latencies).
func TestTailRepeatable(t *testing.T) {
	small := Tail{Fanout: 10, Duration: 3 * time.Second, Brownout: time.Second, Recovery: time.Second}
	pols := []TailPolicy{{Name: "a"}, {Name: "b"}, {Name: "h", Hedge: &hedge.Config{}}}
	one, err := TailSweep{Tail: small, Runs: 2, Seed: 5}.Run(pols)
	if err != nil {
		t.Fatal(err)
	}
	two, err := TailSweep{Tail: small, Runs: 2, Seed: 5, Workers: 2}.Run(pols)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, two) {
		t.Fatalf("one worker and two differ:\n%+v\n%+v", one, two)
	}
	if one[0].Healthy != one[1].Healthy {
		t.Fatalf("two policies without hedging differ: %+v vs %+v", one[0].Healthy, one[1].Healthy)
	}
	if len(one[0].Seconds) != 5 {
		t.Fatalf("%d seconds in the series, want 5", len(one[0].Seconds))
	}
}
