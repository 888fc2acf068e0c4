package budget

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestShareFloorAloneWithoutTraffic(t *testing.T) {
	s, err := NewShare(ShareConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// No requests: the floor grants 10/s × 10 s = 100 retries per window.
	for i := 0; i < 100; i++ {
		if !s.AllowRetryAt(at(0), false) {
			t.Fatalf("retry %d refused, want the floor of 100 granted", i+1)
		}
	}
	if s.AllowRetryAt(at(0), false) {
		t.Fatal("retry 101 granted, want refused: floor spent")
	}
	if got := s.LevelAt(at(0)); got != 0 {
		t.Fatalf("level %v, want 0", got)
	}
	// 9.999 s later the 100 retries are still in the window.
	if s.AllowRetryAt(at(9999*time.Millisecond), false) {
		t.Fatal("granted at +9.999s, want refused: the spent floor is still in the window")
	}
	// 10 s later they have left it.
	if !s.AllowRetryAt(at(10*time.Second), false) {
		t.Fatal("refused at +10s, want granted: the window slid past the spent floor")
	}
}

func TestShareRatio(t *testing.T) {
	s, err := NewShare(ShareConfig{MinPerSecond: NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	// Each check narrates the state of the window at that instant.
	now := at(0)
	check := func(step string, want bool) {
		t.Helper()
		if got := s.AllowRetryAt(now, false); got != want {
			t.Fatalf("%s: AllowRetryAt = %v, want %v (level %v)", step, got, want, s.LevelAt(now))
		}
	}
	record := func(n int, first, success bool) {
		for i := 0; i < n; i++ {
			s.RecordAt(now, first, success)
		}
	}
	check("no traffic, no floor", false)
	record(20, true, false)
	check("failed requests earn nothing", false)
	record(4, true, true)
	if got := s.LevelAt(now); math.Abs(got-0.8) > 1e-9 {
		t.Fatalf("4 successes: level %v, want 0.8", got)
	}
	check("4 successes allow 0.8 retries", false)
	record(5, false, false)
	check("failed retries earn nothing", false)
	record(1, false, true)
	check("a successful retry is a success: 5 allow 1 retry", true)
	check("the 1 retry is spent", false)
	now = at(time.Second)
	record(5, true, true)
	check("10 successes allow 2 retries, 1 spent", true)
	check("both spent", false)
	now = at(10 * time.Second)
	// The bucket of +0s left: 5 successes (from +1s) allow 1 retry, and the
	// retry granted at +1s is still counted.
	check("+10s: 5 successes, 1 retry in window", false)
	now = at(11 * time.Second)
	check("+11s: empty window", false)
	record(10, true, true)
	check("+11s: 10 fresh successes, first retry", true)
	check("+11s: second retry", true)
	check("+11s: third retry", false)
}

// TestShareEarnsFromSuccesses drives a Share through traffic stepped every
// 100 ms: per step, perStep first attempts, of which every failEvery-th
// fails (0: none, 1: all); a failed request asks for up to retries retries,
// each while the one before failed, and a granted retry succeeds when
// retryOK. Each phase checks how many retries were asked for and granted.
func TestShareEarnsFromSuccesses(t *testing.T) {
	type phase struct {
		d         time.Duration
		perStep   int
		failEvery int
		retries   int
		retryOK   bool
		// want
		asked, granted int
	}
	const step = 100 * time.Millisecond
	cases := []struct {
		name   string
		cfg    ShareConfig
		phases []phase
	}{
		// 5 % of 1000 requests fail once; 19 successes come before the
		// first failure (3.8 retries earned): every retry is granted even
		// without a floor.
		{"blip, no floor", ShareConfig{MinPerSecond: NoFloor}, []phase{
			{10 * time.Second, 10, 20, 2, true, 50, 50},
		}},
		{"blip, defaults", ShareConfig{}, []phase{
			{10 * time.Second, 10, 20, 2, true, 50, 50},
		}},
		// Half of 500 requests fail, and so do their retries: the 250
		// successes earn 50 retries and the floor 100 (10/s × 10 s), 150
		// granted of the 500 that 3 attempts would make (a share of all
		// requests would grant 200). Failure i comes after i successes:
		// failures 1-55 get both retries (2i ≤ 100 + 0.2i), failure 56
		// one, then one failure in five gets one and asks in vain for a
		// second (39 of them), the other 155 are refused at once:
		// 110 + 2 + 78 + 155 = 345 asked.
		{"partial outage, defaults", ShareConfig{}, []phase{
			{5 * time.Second, 10, 2, 2, false, 345, 150},
		}},
		// Nothing succeeds: the floor alone, 100 retries of the 1000 that
		// 3 attempts would make. The first 50 failures get both retries,
		// the other 450 are refused their first.
		{"full outage, defaults", ShareConfig{}, []phase{
			{5 * time.Second, 10, 1, 2, false, 550, 100},
		}},
		// Successes before an outage keep their retries for the window
		// (500 successes: 100 retries); once the window slid past them,
		// nothing is granted; when the dependency is back, its successes
		// earn retries again and a blip is retried in full.
		{"recovery, no floor", ShareConfig{MinPerSecond: NoFloor}, []phase{
			{5 * time.Second, 10, 0, 2, false, 0, 0},
			{5 * time.Second, 10, 1, 2, false, 550, 100},
			{5 * time.Second, 10, 1, 2, false, 500, 0},
			{5 * time.Second, 10, 20, 2, true, 25, 25},
		}},
		// Every other first attempt fails and its retry succeeds: the
		// successful retries earn retries too, so 62 of the 250 failures
		// are retried (g ≤ 0.2 × (250 + g)), not the 50 that first
		// attempts alone would earn.
		{"successful retries count, no floor", ShareConfig{MinPerSecond: NoFloor}, []phase{
			{5 * time.Second, 10, 2, 1, true, 250, 62},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewShare(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := at(0)
			for i, p := range c.phases {
				asked, granted := 0, 0
				k := 0 // first attempts in this phase
				for end := now.Add(p.d); now.Before(end); now = now.Add(step) {
					for j := 0; j < p.perStep; j, k = j+1, k+1 {
						if p.failEvery == 0 || k%p.failEvery != p.failEvery-1 {
							s.RecordAt(now, true, true)
							continue
						}
						s.RecordAt(now, true, false)
						for r := 0; r < p.retries; r++ {
							asked++
							if !s.AllowRetryAt(now, false) {
								break
							}
							granted++
							s.RecordAt(now, false, p.retryOK)
							if p.retryOK {
								break
							}
						}
					}
				}
				if asked != p.asked || granted != p.granted {
					t.Errorf("phase %d: %d retries asked for, %d granted; want %d, %d", i+1, asked, granted, p.asked, p.granted)
				}
			}
		})
	}
}

func TestShareWindowAndRatioConfig(t *testing.T) {
	s, err := NewShare(ShareConfig{Ratio: 0.5, Window: time.Second, MinPerSecond: 2})
	if err != nil {
		t.Fatal(err)
	}
	// floor = 2/s × 1 s = 2; 4 requests × 0.5 = 2: 4 retries in the window.
	for i := 0; i < 4; i++ {
		s.RecordAt(at(0), true, true)
	}
	if got := s.LevelAt(at(0)); got != 4 {
		t.Fatalf("level %v, want 4", got)
	}
	for i := 0; i < 4; i++ {
		if !s.AllowRetryAt(at(500*time.Millisecond), true) {
			t.Fatalf("retry %d refused, want 4 granted", i+1)
		}
	}
	if s.AllowRetryAt(at(999*time.Millisecond), false) {
		t.Fatal("fifth retry granted, want refused")
	}
	// The window is 1 s in steps of 100 ms: at +1.1 s the requests of +0 s
	// are gone, the retries of +0.5 s are not.
	if got := s.LevelAt(at(1100 * time.Millisecond)); got != 0 {
		t.Fatalf("level at +1.1s %v, want 0 (floor 2, 4 retries still counted)", got)
	}
	if got := s.LevelAt(at(1500 * time.Millisecond)); got != 2 {
		t.Fatalf("level at +1.5s %v, want 2 (the floor)", got)
	}
}

func TestBucketAWSStandard(t *testing.T) {
	b, err := NewBucket(BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Level(); got != 500 {
		t.Fatalf("initial level %v, want 500", got)
	}
	// 500 tokens / 14 = 35 retries (10 tokens left), then none.
	for i := 0; i < 35; i++ {
		if !b.AllowRetryAt(at(0), false) {
			t.Fatalf("retry %d refused with %v tokens", i+1, b.Level())
		}
	}
	if b.AllowRetryAt(at(time.Hour), false) {
		t.Fatal("retry 36 granted with 10 tokens, want refused: time does not refill the bucket")
	}
	// A timeout costs what any other error costs (14): refused too.
	if b.AllowRetryClassAt(at(0), false, true) {
		t.Fatal("timeout retry granted with 10 tokens, want refused (cost 14)")
	}
	// A throttled retry costs 5: two more fit in the 10 tokens left.
	for i := 0; i < 2; i++ {
		if !b.AllowRetryClassAt(at(0), true, false) {
			t.Fatalf("throttled retry %d refused with %v tokens (cost 5)", i+1, b.Level())
		}
	}
	if b.AllowRetryClassAt(at(0), true, false) {
		t.Fatal("throttled retry granted from an empty bucket")
	}
	// Failures change nothing.
	b.RecordAt(at(0), true, false)
	b.RecordAt(at(0), false, false)
	if got := b.Level(); got != 0 {
		t.Fatalf("level %v after failures, want 0", got)
	}
	// A success at the first attempt adds 1; a successful retry gives 14 back.
	for i := 0; i < 13; i++ {
		b.RecordAt(at(0), true, true)
	}
	if b.AllowRetryAt(at(0), false) {
		t.Fatal("granted with 13 tokens, want refused (cost 14)")
	}
	b.RecordAt(at(0), false, true)
	if got := b.Level(); got != 27 {
		t.Fatalf("level %v, want 27", got)
	}
	// Refills stop at the capacity.
	for i := 0; i < 1000; i++ {
		b.RecordAt(at(0), false, true)
	}
	if got := b.Level(); got != 500 {
		t.Fatalf("level %v, want capped at 500", got)
	}
	// A dependency that keeps throttling gets 100 retries.
	for i := 0; i < 100; i++ {
		if !b.AllowRetryClassAt(at(0), true, false) {
			t.Fatalf("throttled retry %d refused", i+1)
		}
	}
	if b.AllowRetryClassAt(at(0), true, false) {
		t.Fatal("granted from an empty bucket")
	}
}

// TestBucketThrottleCostDefault: a zero ThrottleCost means the AWS figure
// (5) only where it is below RetryCost, and RetryCost otherwise, so that a
// throttled retry never costs more than another by default. A small bucket
// configured as {Capacity: 3, RetryCost: 3} was refused for a ThrottleCost
// of 5 its caller never set, and {RetryCost: 3} charged a throttled retry
// more than an ordinary one.
func TestBucketThrottleCostDefault(t *testing.T) {
	for _, c := range []struct {
		cfg  BucketConfig
		want float64 // what a throttled retry takes
	}{
		{BucketConfig{}, 5},
		{BucketConfig{RetryCost: 3}, 3},
		{BucketConfig{Capacity: 3, RetryCost: 3}, 3},
		{BucketConfig{Capacity: 1, RetryCost: 1}, 1},
		{BucketConfig{RetryCost: 3, ThrottleCost: 4}, 4}, // set: kept
	} {
		b, err := NewBucket(c.cfg)
		if err != nil {
			t.Errorf("%+v: %v, want a bucket", c.cfg, err)
			continue
		}
		before := b.Level()
		if !b.AllowRetryClassAt(t0, true, false) {
			t.Errorf("%+v: throttled retry refused from a full bucket", c.cfg)
			continue
		}
		if got := before - b.Level(); got != c.want {
			t.Errorf("%+v: a throttled retry took %v tokens, want %v", c.cfg, got, c.want)
		}
	}
}

func TestGRPCThrottling(t *testing.T) {
	g, err := NewGRPC(GRPCConfig{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		failures, successes int
		level               float64
		allow               bool
	}{
		{0, 0, 10, true},   // full
		{4, 0, 6, true},    // 6 > 10/2
		{1, 0, 5, false},   // 5 is not above half: throttled
		{0, 9, 5.9, true},  // each success gives back 0.1
		{20, 0, 0, false},  // never below 0
		{0, 200, 10, true}, // never above MaxTokens
	}
	for i, s := range steps {
		for j := 0; j < s.failures; j++ {
			g.RecordAt(at(0), j == 0, false)
		}
		for j := 0; j < s.successes; j++ {
			g.RecordAt(at(0), true, true)
		}
		if got := g.Level(); math.Abs(got-s.level) > 1e-9 {
			t.Fatalf("step %d: level %v, want %v", i, got, s.level)
		}
		if got := g.AllowRetryAt(at(0), false); got != s.allow {
			t.Fatalf("step %d at level %v: AllowRetryAt = %v, want %v", i, s.level, got, s.allow)
		}
	}
	// Allowing takes nothing.
	if got := g.Level(); got != 10 {
		t.Fatalf("level %v after AllowRetryAt, want 10", got)
	}
}

// The recommended bucket starts at 8 of 10: a new client's first failed call
// gets its two retries, and further retries are earned from successes.
func TestGRPCRecommendedStart(t *testing.T) {
	g, err := NewGRPC(Recommended())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what      string
		failures  int
		successes int
		level     float64
		allow     bool
	}{
		{"new: 8 tokens", 0, 0, 8, true},
		{"first try failed: 7 > 5, its retry may go", 1, 0, 7, true},
		{"the retry failed: 6, a second retry may go", 1, 0, 6, true},
		{"it failed too: 5 is not above half", 1, 0, 5, false},
		{"a dead dependency: nothing more", 3, 0, 2, false},
		{"3 successes give back 0.6: 2.6", 0, 3, 2.6, false},
		{"13 more: 5.2, above half again", 0, 13, 5.2, true},
		{"healthy for long: full at 10", 0, 100, 10, true},
		{"4 failures in a row from full: 6", 4, 0, 6, true},
		{"the 5th: 5, retries stop", 1, 0, 5, false},
	}
	for i, s := range steps {
		now := at(time.Duration(i) * time.Second)
		for j := 0; j < s.failures; j++ {
			g.RecordAt(now, j == 0, false)
		}
		for j := 0; j < s.successes; j++ {
			g.RecordAt(now, true, true)
		}
		if got := g.Level(); math.Abs(got-s.level) > 1e-9 {
			t.Fatalf("step %d (%s): level %v, want %v", i, s.what, got, s.level)
		}
		if got := g.AllowRetryAt(now, false); got != s.allow {
			t.Fatalf("step %d (%s): AllowRetryAt = %v, want %v", i, s.what, got, s.allow)
		}
	}
	if _, err := NewGRPC(GRPCConfig{Start: 11}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "GRPCConfig.Start") {
		t.Errorf("Start 11 of 10: got %v, want a GRPCConfig.Start error", err)
	}
	if _, err := NewGRPC(GRPCConfig{Start: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Start -1: got %v, want ErrInvalidConfig", err)
	}
}

func TestNilBudgetsAllowEverything(t *testing.T) {
	var s *Share
	var b *Bucket
	var g *GRPC
	for i := 0; i < 3; i++ {
		s.RecordAt(at(0), false, false)
		b.RecordAt(at(0), false, false)
		g.RecordAt(at(0), false, false)
		if !s.AllowRetryAt(at(0), false) || !b.AllowRetryAt(at(0), true) || !g.AllowRetryAt(at(0), false) {
			t.Fatal("a nil budget refused a retry")
		}
	}
	if !math.IsInf(s.Level(), 1) || !math.IsInf(b.Level(), 1) || !math.IsInf(g.Level(), 1) {
		t.Fatal("a nil budget's level is not +Inf")
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		err   error
		field string
	}{
		{second(NewShare(ShareConfig{Ratio: -0.1})), "ShareConfig.Ratio"},
		{second(NewShare(ShareConfig{Ratio: math.NaN()})), "ShareConfig.Ratio"},
		{second(NewShare(ShareConfig{Window: time.Millisecond})), "ShareConfig.Window"},
		{second(NewShare(ShareConfig{Window: 2 * time.Hour})), "ShareConfig.Window"},
		{second(NewShare(ShareConfig{MinPerSecond: -2})), "ShareConfig.MinPerSecond"},
		{second(NewBucket(BucketConfig{Capacity: -1})), "BucketConfig.Capacity"},
		{second(NewBucket(BucketConfig{Capacity: 13})), "BucketConfig.RetryCost"},
		{second(NewBucket(BucketConfig{TimeoutCost: 501})), "BucketConfig.TimeoutCost"},
		{second(NewBucket(BucketConfig{ThrottleCost: -1})), "BucketConfig.ThrottleCost"},
		{second(NewBucket(BucketConfig{NoRetryIncrement: -1})), "BucketConfig.NoRetryIncrement"},
		{second(NewGRPC(GRPCConfig{MaxTokens: 1001})), "GRPCConfig.MaxTokens"},
		// Kept to three decimals, these are a bucket of no tokens that never
		// grants a retry: refused rather than disabling retries silently.
		{second(NewGRPC(GRPCConfig{MaxTokens: 0.0004})), "GRPCConfig.MaxTokens"},
		{second(NewGRPC(GRPCConfig{MaxTokens: 1e-300})), "GRPCConfig.MaxTokens"},
		{second(NewGRPC(GRPCConfig{MaxTokens: math.NaN()})), "GRPCConfig.MaxTokens"},
		{second(NewGRPC(GRPCConfig{Start: math.Inf(1)})), "GRPCConfig.Start"},
		{second(NewGRPC(GRPCConfig{Start: -1})), "GRPCConfig.Start"},
		{second(NewGRPC(GRPCConfig{Start: 11})), "GRPCConfig.Start"},
		{second(NewGRPC(GRPCConfig{TokenRatio: math.NaN()})), "GRPCConfig.TokenRatio"},
		{second(NewShare(ShareConfig{Ratio: math.Inf(1)})), "ShareConfig.Ratio"},
		{second(NewShare(ShareConfig{MinPerSecond: math.NaN()})), "ShareConfig.MinPerSecond"},
		{second(NewShare(ShareConfig{MinPerSecond: -0.5})), "ShareConfig.MinPerSecond"},
		{second(NewBucket(BucketConfig{Capacity: 1e9 + 1})), "BucketConfig.Capacity"},
		{second(NewBucket(BucketConfig{Capacity: 3, RetryCost: 3, ThrottleCost: 4})), "BucketConfig.ThrottleCost"},
		{second(NewGRPC(GRPCConfig{TokenRatio: 1.5})), "GRPCConfig.TokenRatio"},
		{second(NewGRPC(GRPCConfig{TokenRatio: 0.0001})), "GRPCConfig.TokenRatio"},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error, want one", c.field)
			continue
		}
		if !errors.Is(c.err, ErrInvalidConfig) {
			t.Errorf("%s: %v does not match ErrInvalidConfig", c.field, c.err)
		}
		var ce *configerr.Error
		if !errors.As(c.err, &ce) || ce.Field != c.field {
			t.Errorf("error %q does not name field %s", c.err, c.field)
		}
		if !strings.HasPrefix(c.err.Error(), "budget: invalid configuration: "+c.field+": ") || !strings.Contains(c.err.Error(), "want ") {
			t.Errorf("message %q: want it to start with the package and field and say what is accepted", c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestConcurrent hammers each budget from many goroutines; run with -race.
func TestConcurrent(t *testing.T) {
	s, _ := NewShare(ShareConfig{MinPerSecond: NoFloor})
	b, _ := NewBucket(BucketConfig{})
	g, _ := NewGRPC(GRPCConfig{})
	const goroutines, n = 32, 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := 0
			for j := 0; j < n; j++ {
				now := at(time.Duration(j) * time.Millisecond)
				s.RecordAt(now, true, true)
				if s.AllowRetryAt(now, false) {
					mine++
				}
				b.RecordAt(now, j%2 == 0, j%3 == 0)
				b.AllowRetryAt(now, j%5 == 0)
				g.RecordAt(now, true, j%2 == 0)
				g.AllowRetryAt(now, false)
			}
			mu.Lock()
			granted += mine
			mu.Unlock()
		}()
	}
	wg.Wait()
	requests := goroutines * n
	// Every request succeeded and is inside the 10 s window: at most 20 %
	// were retried.
	if limit := requests / 5; granted > limit {
		t.Fatalf("granted %d retries for %d requests, want at most %d", granted, requests, limit)
	}
	// No count was lost: the window holds every request and every grant.
	end := at(n * time.Millisecond)
	if got := s.successes.Sum(end); got != uint64(requests) {
		t.Fatalf("share counted %d successes, want %d", got, requests)
	}
	if got := s.retries.Sum(end); got != uint64(granted) {
		t.Fatalf("share counted %d retries, granted %d", got, granted)
	}
	if lv := b.Level(); lv < 0 || lv > 500 {
		t.Fatalf("bucket level %v outside [0, 500]", lv)
	}
	if lv := g.Level(); lv < 0 || lv > 10 {
		t.Fatalf("grpc level %v outside [0, 10]", lv)
	}
}

// budgetUnderTest is what the retry loop calls on a budget.
type budgetUnderTest interface {
	AllowRetryAt(now time.Time, timeout bool) bool
	RecordAt(now time.Time, first, success bool)
}

// defaultBudgets returns one of each budget, default-configured, by name.
func defaultBudgets() []struct {
	name string
	b    budgetUnderTest
} {
	share, _ := NewShare(ShareConfig{})
	bucket, _ := NewBucket(BucketConfig{})
	grpc, _ := NewGRPC(GRPCConfig{})
	return []struct {
		name string
		b    budgetUnderTest
	}{{"share", share}, {"bucket", bucket}, {"grpc", grpc}}
}

// Two paths of a retry loop through a budget, on every P:
// BenchmarkBudgetAllow is one request and one retry decision per operation,
// as for a call whose first attempt failed; BenchmarkBudgetRecordSuccess is
// the success path, a first attempt that succeeded, recorded.
func BenchmarkBudgetAllow(b *testing.B) {
	benchBudgets(b, func(u budgetUnderTest) {
		u.RecordAt(t0, true, true)
		if u.AllowRetryAt(t0, false) {
			u.RecordAt(t0, false, true)
		}
	})
}

func BenchmarkBudgetRecordSuccess(b *testing.B) {
	benchBudgets(b, func(u budgetUnderTest) { u.RecordAt(t0, true, true) })
}

func benchBudgets(b *testing.B, op func(budgetUnderTest)) {
	for _, c := range defaultBudgets() {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op(c.b)
				}
			})
		})
	}
}

func TestNoAllocations(t *testing.T) {
	for _, c := range defaultBudgets() {
		f := func() { c.b.RecordAt(t0, true, true); c.b.AllowRetryAt(t0, false) }
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", c.name, n)
		}
	}
}
