package backoff

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

func TestDelayTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		s    Schedule
		n    int
		prev time.Duration
		u    float64
		want time.Duration
	}{
		{"zero schedule, retry 1, top draw is just under base", Schedule{}, 1, 0, 0.5, 25 * ms},
		{"zero schedule doubles: retry 3 ceiling 200ms, draw 0.5", Schedule{}, 3, 0, 0.5, 100 * ms},
		{"zero schedule caps at 20s", Schedule{}, 30, 0, 0.5, 10 * time.Second},
		{"no jitter gives the ceiling", Schedule{Jitter: None}, 4, 0, 0.9, 400 * ms},
		{"multiplier 1.5", Schedule{Jitter: None, Base: 100 * ms, Multiplier: 1.5}, 3, 0, 0, 225 * ms},
		{"constant ignores n", Schedule{Kind: Constant, Jitter: None, Base: 70 * ms}, 9, 0, 0, 70 * ms},
		{"linear grows by base", Schedule{Kind: Linear, Jitter: None, Base: 70 * ms}, 3, 0, 0, 210 * ms},
		{"equal keeps half: draw 0", Schedule{Jitter: Equal}, 2, 0, 0, 50 * ms},
		{"equal keeps half: draw 0.5", Schedule{Jitter: Equal}, 2, 0, 0.5, 75 * ms},
		{"full draw 0 is 0", Schedule{}, 5, 0, 0, 0},
		{"decorrelated first retry from [base, 3base)", Schedule{Jitter: Decorrelated}, 1, 0, 0.5, 100 * ms},
		{"decorrelated grows from prev", Schedule{Jitter: Decorrelated}, 7, time.Second, 0.5, 1525 * ms},
		{"decorrelated capped", Schedule{Jitter: Decorrelated, Cap: time.Second}, 2, 900 * ms, 0.9, time.Second},
		{"decorrelated prev below base counts as base", Schedule{Jitter: Decorrelated}, 2, ms, 0, 50 * ms},
		{"base above cap gives cap", Schedule{Base: 5 * time.Second, Cap: time.Second, Jitter: None}, 1, 0, 0, time.Second},
		{"retry 0 counts as 1", Schedule{Jitter: None}, 0, 0, 0, 50 * ms},
		{"negative retry counts as 1", Schedule{Jitter: None}, -5, 0, 0, 50 * ms},
		{"draw above 1 is clamped below the ceiling", Schedule{}, 1, 0, 7, 50*ms - 1},
		{"negative draw is clamped to 0", Schedule{}, 1, 0, -3, 0},
		{"NaN draw is clamped to 0", Schedule{}, 1, 0, math.NaN(), 0},
		{"largest retry number is capped, not overflowed", Schedule{Jitter: None}, math.MaxInt, 0, 0, 20 * time.Second},
		{"linear at MaxInt is capped", Schedule{Kind: Linear, Jitter: None}, math.MaxInt, 0, 0, 20 * time.Second},
		{"huge cap and multiplier do not overflow", Schedule{Jitter: None, Cap: math.MaxInt64, Multiplier: 1e300}, 5, 0, 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Delay(tt.n, tt.prev, tt.u); got != tt.want {
				t.Errorf("Delay(%d, %v, %v) = %v, want %v", tt.n, tt.prev, tt.u, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		s    Schedule
		want string // substring of the error, "" for valid
	}{
		{Schedule{}, ""},
		{Schedule{Multiplier: 1.5}, ""},
		{Schedule{Multiplier: 1}, "Multiplier: 1 out of range; want a finite value > 1"},
		{Schedule{Multiplier: 0.5}, "Multiplier: 0.5 out of range"},
		{Schedule{Multiplier: math.Inf(1)}, "Multiplier: +Inf out of range"},
		{Schedule{Multiplier: math.NaN()}, "Multiplier: NaN out of range"},
		{Schedule{Base: -time.Second}, "Base: -1s out of range; want ≥ 0"},
		{Schedule{Cap: -1}, "Cap: -1ns out of range"},
		{Schedule{Kind: 9}, "Kind: 9 out of range"},
		{Schedule{Jitter: 9}, "Jitter: 9 out of range"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tt.s, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: got error %v, want one containing %q", tt.s, err, tt.want)
		case tt.want != "":
			var e *configerr.Error
			if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &e) || !strings.HasPrefix(tt.want, e.Field+":") {
				t.Errorf("%+v: error %v (%T) does not match ErrInvalidConfig or name its field", tt.s, err, err)
			}
		}
	}
}

func TestBounds(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		s    Schedule
		n    int
		want Bounds
	}{
		{"full", Schedule{}, 2, Bounds{Retry: 2, Min: 0, Max: 100 * ms, Mean: 50 * ms}},
		{"none", Schedule{Jitter: None}, 3, Bounds{Retry: 3, Min: 200 * ms, Max: 200 * ms, Mean: 200 * ms}},
		{"equal", Schedule{Jitter: Equal}, 1, Bounds{Retry: 1, Min: 25 * ms, Max: 50 * ms, Mean: 37500 * time.Microsecond}},
		{"capped", Schedule{Cap: time.Second}, 40, Bounds{Retry: 40, Min: 0, Max: time.Second, Mean: 500 * ms}},
	}
	for _, tt := range tests {
		if got := tt.s.Bounds(tt.n); got != tt.want {
			t.Errorf("%s: Bounds(%d) = %+v, want %+v", tt.name, tt.n, got, tt.want)
		}
	}
	if got := (Schedule{}).Plan(0); got != nil {
		t.Errorf("Plan(0) = %v, want nil", got)
	}
	if got := (Schedule{}).Plan(4); len(got) != 4 || got[3].Retry != 4 || got[3].Max != 400*ms {
		t.Errorf("Plan(4) = %+v", got)
	}
}

// TestDecorrelatedMeanConverges checks that the mean of a capped
// decorrelated schedule settles and that asking for a huge retry number
// returns at once.
func TestDecorrelatedMeanConverges(t *testing.T) {
	s := Schedule{Jitter: Decorrelated, Cap: time.Second}
	b := s.Bounds(math.MaxInt)
	if b.Mean <= 0 || b.Mean > time.Second || b.Max != time.Second {
		t.Fatalf("Bounds(MaxInt) = %+v", b)
	}
	// The empirical mean of many simulated chains agrees with the estimate.
	var sum float64
	const chains = 20000
	seed := uint64(1)
	next := func() float64 { // a tiny LCG keeps this test independent of math/rand
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / (1 << 53)
	}
	for i := 0; i < chains; i++ {
		var prev time.Duration
		for n := 1; n <= 12; n++ {
			prev = s.Delay(n, prev, next())
		}
		sum += float64(prev)
	}
	emp := time.Duration(sum / chains)
	est := s.Bounds(12).Mean
	if diff := math.Abs(float64(emp-est)) / float64(emp); diff > 0.03 {
		t.Errorf("decorrelated mean at retry 12: estimate %v, simulated %v (%.0f%% apart)", est, emp, diff*100)
	}
}

func TestParse(t *testing.T) {
	for _, j := range []Jitter{Full, None, Equal, Decorrelated} {
		got, err := ParseJitter(strings.ToUpper(j.String()))
		if err != nil || got != j {
			t.Errorf("ParseJitter(%q) = %v, %v", j, got, err)
		}
	}
	if _, err := ParseJitter("fuzzy"); err == nil || !strings.Contains(err.Error(), "want full, none, equal or decorrelated") {
		t.Errorf("ParseJitter(fuzzy) error = %v", err)
	}
	for _, k := range []Kind{Exponential, Constant, Linear} {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseKind("cubic"); err == nil {
		t.Error("ParseKind(cubic) succeeded")
	}
	for _, err := range []error{second(ParseKind("cubic")), second(ParseJitter("fuzzy"))} {
		var e *configerr.Error
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &e) || e.Want == "" {
			t.Errorf("error %v (%T) does not match ErrInvalidConfig or say what is accepted", err, err)
		}
	}
	if Kind(7).String() != "Kind(7)" || Jitter(7).String() != "Jitter(7)" {
		t.Error("unknown values should print their number")
	}
}

// FuzzDelay checks the bounds promise for any input: never negative, never
// above the cap (after defaults), never a panic.
func FuzzDelay(f *testing.F) {
	f.Add(uint8(0), int64(50e6), 2.0, int64(20e9), uint8(0), 3, int64(0), 0.5)
	f.Add(uint8(2), int64(1), 1.0000001, int64(math.MaxInt64), uint8(3), math.MaxInt, int64(math.MaxInt64), 0.999)
	f.Add(uint8(1), int64(-5), -1.0, int64(-7), uint8(9), -3, int64(-1), math.Inf(1))
	f.Add(uint8(0), int64(-1), 0.0, int64(0), uint8(3), 70, int64(0), 0.5)
	f.Add(uint8(0), int64(0), 1.0, int64(-1), uint8(3), 1, int64(-1), 1-0x1p-53)
	f.Fuzz(func(t *testing.T, kind uint8, base int64, mult float64, limit int64, jitter uint8, n int, prev int64, u float64) {
		s := Schedule{Kind: Kind(kind % 4), Base: time.Duration(base), Multiplier: mult, Cap: time.Duration(limit), Jitter: Jitter(jitter % 5)}
		// Even a schedule that Validate refuses, used without it, gives
		// delays in [0, cap] (a negative Cap reads as 0) within its Bounds.
		_, _, c := s.params()
		d := s.Delay(n, time.Duration(prev), u)
		if d < 0 || d > c {
			t.Fatalf("Delay(%d, %d, %v) of %+v = %v, outside [0, %v]", n, prev, u, s, d, c)
		}
		if b := s.Bounds(n); b.Min < 0 || b.Min > b.Max || b.Max > c || b.Mean < b.Min || b.Mean > b.Max {
			t.Fatalf("Bounds(%d) of %+v = %+v, not ordered within [0, %v]", n, s, b, c)
		}
		if s.Validate() != nil {
			return
		}
		if s.Jitter == Decorrelated {
			// Never below the base (or the cap, if lower), and never more
			// than three times the previous wait (or the base), so that
			// a long run neither collapses nor jumps.
			b := s.WithDefaults().Base
			lo, grow := min(b, c), 3*float64(max(time.Duration(prev), b))
			if d < lo || float64(d) > grow && d > lo {
				t.Fatalf("decorrelated Delay(%d, %d, %v) of %+v = %v, outside [%v, 3·max(prev, base)]", n, prev, u, s, d, lo)
			}
		}
		if b := s.Bounds(n); s.Jitter != Decorrelated && (d < b.Min || d > b.Max) {
			t.Fatalf("Delay(%d, %d, %v) of %+v = %v, outside its Bounds %+v", n, prev, u, s, d, b)
		}
		b := s.Bounds(n)
		if b.Min < 0 || b.Min > b.Max || b.Max > c || b.Mean < b.Min || b.Mean > b.Max {
			t.Fatalf("Bounds(%d) of %+v = %+v, not ordered within [0, %v]", n, s, b, c)
		}
	})
}

func BenchmarkBackoffDelay(b *testing.B) {
	s := Schedule{Base: 100 * time.Millisecond, Cap: time.Hour}
	var d time.Duration
	b.ReportAllocs()
	for b.Loop() {
		d += s.Delay(5, d, 0.5)
	}
	_ = d
}

func TestDecorrelatedBounds(t *testing.T) {
	s := Schedule{Jitter: Decorrelated}
	b1 := s.Bounds(1)
	if b1.Min != 50*time.Millisecond || b1.Max != 150*time.Millisecond {
		t.Errorf("Bounds(1) = %+v, want min 50ms max 150ms", b1)
	}
	// Uncapped, E[d1] = (base + 3·base)/2 = 100 ms and E[d2] = (base + 3·E[d1])/2 = 175 ms.
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 175 * time.Millisecond} {
		got := s.Bounds(n).Mean
		if d := got - want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("Bounds(%d).Mean = %v, want %v ± 1ms", n, got, want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestPlanDecorrelatedManyRetries: every row of the plan of a
// decorrelated schedule whose cap binds is the Bounds of its retry,
// though the plan walks the chains that estimate the means once, not
// once per row (Plan(5000), what `yaoki plan --max-attempts 5000 --rows
// 5000 --jitter decorrelated` prints, took about 25 s re-running them
// from retry 1 for each row; BenchmarkPlanDecorrelated measures it).
func TestPlanDecorrelatedManyRetries(t *testing.T) {
	s := Schedule{Jitter: Decorrelated, Cap: time.Second}
	p := s.Plan(5000)
	for _, k := range []int{1, 2, 5, 6, 7, 50, 99, 100, 101, 5000} {
		if got, want := p[k-1], s.Bounds(k); got != want {
			t.Errorf("Plan(5000)[%d] = %+v, want Bounds(%d) = %+v", k-1, got, k, want)
		}
	}
}

// BenchmarkPlanDecorrelated: the 5000 rows of a decorrelated plan whose
// cap binds, about the cost of one Bounds (one walk of the chains).
func BenchmarkPlanDecorrelated(b *testing.B) {
	s := Schedule{Jitter: Decorrelated, Cap: time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if p := s.Plan(5000); len(p) != 5000 {
			b.Fatal(len(p))
		}
	}
}
