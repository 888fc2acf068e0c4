package otel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// throttled is an error the default classifier treats as throttling.
type throttled struct{}

func (throttled) Error() string   { return "partner: too many requests" }
func (throttled) Throttled() bool { return true }

func TestRetryLoopCounts(t *testing.T) {
	o, collect := newObserver(t)
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: o, Rand: func() float64 { return 0.5 }}})
	ctx := context.Background()
	boom := errors.New("boom")

	// Call 1: fails, is told to come back in 2 s, then succeeds.
	if err := retry.Do(ctx, p, retrytest.Script(boom, retry.After(throttled{}, 2*time.Second)).Func()); err != nil {
		t.Fatal(err)
	}
	// Call 2: times out three times and gives up.
	err := retry.Do(ctx, p, retrytest.Script(context.DeadlineExceeded, context.DeadlineExceeded, context.DeadlineExceeded).Func())
	if !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("call 2: %v, want exhausted", err)
	}
	// Call 3: a permanent error, not retried.
	err = retry.Do(ctx, p, retrytest.Script(retry.Permanent(boom)).Func())
	if !errors.Is(err, retry.ErrPermanent) {
		t.Fatalf("call 3: %v, want permanent", err)
	}

	s := collect()
	s.expect(t, yotel.MetricAttempts, map[string]float64{
		"yaoki.component=retry,yaoki.outcome=success":                                  1,
		"error.type=_OTHER,yaoki.component=retry,yaoki.outcome=failure":                1, // call 1's boom
		"error.type=otel_test.throttled,yaoki.component=retry,yaoki.outcome=throttled": 1,
		"error.type=timeout,yaoki.component=retry,yaoki.outcome=failure":               3,
		"error.type=_OTHER,yaoki.component=retry,yaoki.outcome=rejected":               1,
	})
	s.expect(t, yotel.MetricAttemptDuration, map[string]float64{ // counts of the histogram
		"yaoki.component=retry,yaoki.outcome=success":                                  1,
		"error.type=_OTHER,yaoki.component=retry,yaoki.outcome=failure":                1,
		"error.type=otel_test.throttled,yaoki.component=retry,yaoki.outcome=throttled": 1,
		"error.type=timeout,yaoki.component=retry,yaoki.outcome=failure":               3,
		"error.type=_OTHER,yaoki.component=retry,yaoki.outcome=rejected":               1,
	})
	s.expect(t, yotel.MetricRetries, map[string]float64{
		"error.type=_OTHER,yaoki.component=retry,yaoki.wait.source=backoff":             1,
		"error.type=otel_test.throttled,yaoki.component=retry,yaoki.wait.source=server": 1,
		"error.type=timeout,yaoki.component=retry,yaoki.wait.source=backoff":            2,
	})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		"error.type=timeout,yaoki.component=retry,yaoki.reason=attempts_exhausted": 1,
		"error.type=_OTHER,yaoki.component=retry,yaoki.reason=permanent_error":     1,
	})
	// The waits: call 1 waited 25 ms (half of 50 ms) then 2.2 s (2 s + 10 %);
	// call 2 waited 25 ms then 50 ms (half of 100 ms).
	waits := s[yotel.MetricRetryWait]
	server := waits["error.type=otel_test.throttled,yaoki.component=retry,yaoki.wait.source=server"]
	if server.Count != 1 || !near(server.Sum, 2.2) {
		t.Errorf("server wait: count %d sum %v, want 1 and 2.2 s", server.Count, server.Sum)
	}
	timeouts := waits["error.type=timeout,yaoki.component=retry,yaoki.wait.source=backoff"]
	if timeouts.Count != 2 || !near(timeouts.Sum, 0.075) {
		t.Errorf("backoff waits after timeouts: count %d sum %v, want 2 and 0.075 s", timeouts.Count, timeouts.Sum)
	}
	// Buckets (..., 0.01, 0.025, 0.05, ...]: 25 ms falls in (0.01, 0.025], 50 ms in (0.025, 0.05].
	if b := timeouts.Buckets; len(b) < 6 || b[4] != 1 || b[5] != 1 {
		t.Errorf("buckets of the backoff waits: %v, want one in (0.01, 0.025] and one in (0.025, 0.05]", b)
	}
	for _, name := range []string{yotel.MetricRejections, yotel.MetricReplays, yotel.MetricConflicts, yotel.MetricBreakerState, yotel.MetricBudgetLevel} {
		if len(s[name]) != 0 {
			t.Errorf("%s recorded %v, want nothing", name, s[name])
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestHTTPAttributes feeds the events an HTTP transport reports (method,
// host, status) and checks the semantic-convention attributes.
func TestHTTPAttributes(t *testing.T) {
	o, collect := newObserver(t)
	ctx := context.Background()
	base := event.Event{Component: "httpretry", Method: "GET", Host: "api.example.com:8443"}
	with := func(f func(*event.Event)) event.Event { e := base; f(&e); return e }
	o.Observe(ctx, with(func(e *event.Event) { e.Kind = event.AttemptStart; e.Attempt = 1 }))
	o.Observe(ctx, with(func(e *event.Event) {
		e.Kind, e.Attempt, e.Outcome, e.Status, e.Duration = event.AttemptEnd, 1, event.Throttled, 429, 30*time.Millisecond
	}))
	o.Observe(ctx, with(func(e *event.Event) {
		e.Kind, e.Attempt, e.Status, e.Wait, e.Source = event.RetryScheduled, 1, 429, time.Second, event.ServerHint
	}))
	o.Observe(ctx, with(func(e *event.Event) {
		e.Kind, e.Attempt, e.Outcome, e.Status, e.Duration = event.AttemptEnd, 2, event.Failure, 503, 10*time.Millisecond
	}))
	o.Observe(ctx, with(func(e *event.Event) {
		e.Kind, e.Attempt, e.Status, e.Reason = event.GaveUp, 2, 503, "deadline"
	}))
	o.Observe(ctx, with(func(e *event.Event) {
		e.Kind, e.Method, e.Outcome, e.Status = event.AttemptEnd, "BREW", event.Success, 200
	}))

	s := collect()
	const dest = "http.request.method=GET,yaoki.component=httpretry,server.address=api.example.com,server.port=8443"
	s.expect(t, yotel.MetricAttempts, map[string]float64{
		"error.type=429,http.response.status_code=429," + dest + ",yaoki.outcome=throttled,yaoki.status_class=4xx": 1,
		"error.type=503,http.response.status_code=503," + dest + ",yaoki.outcome=failure,yaoki.status_class=5xx":   1,
		"http.request.method=_OTHER,http.response.status_code=200,yaoki.component=httpretry,yaoki.outcome=success," +
			"yaoki.status_class=2xx,server.address=api.example.com,server.port=8443": 1,
	})
	s.expect(t, yotel.MetricRetries, map[string]float64{
		"error.type=429,http.response.status_code=429," + dest + ",yaoki.status_class=4xx,yaoki.wait.source=server": 1,
	})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		"error.type=503,http.response.status_code=503," + dest + ",yaoki.reason=deadline,yaoki.status_class=5xx": 1,
	})
}

// TestEventCounters feeds events to Observe and checks the counters they
// land on, with their attributes.
func TestEventCounters(t *testing.T) {
	const hedged = "http.request.method=GET,yaoki.component=httpretry,server.address=api.example.com"
	const redrive = "yaoki.component=deadletter,"
	for _, c := range []struct {
		name   string
		events []event.Event
		want   map[string]map[string]float64 // metric name: points
	}{{
		name: "rejections, replays and conflicts",
		events: []event.Event{
			{Kind: event.BudgetRefused, Component: "retry", Level: 0},
			{Kind: event.BudgetRefused, Component: "retry", Level: 0},
			{Kind: event.BreakerRejected, Component: "httpretry", Name: "api", Host: "api", Wait: time.Second},
			{Kind: event.ThrottleRejected, Component: "retry"},
			{Kind: event.ThrottleRejected, Component: "retry", Reason: "bulkhead_full"},
			{Kind: event.Replay, Component: "idempotency", Method: "POST", Status: 201, Key: "k1"},
			{Kind: event.Replay, Component: "idempotency", Method: "POST", Status: 201, Key: "k2"},
			{Kind: event.Conflict, Component: "idempotency", Method: "POST", Status: 409, Reason: "in_progress", Key: "k1"},
			{Kind: event.Conflict, Component: "idempotency", Method: "POST", Status: 422, Reason: "fingerprint_mismatch", Key: "k3"},
		},
		want: map[string]map[string]float64{
			yotel.MetricRejections: {
				"yaoki.component=retry,yaoki.reason=budget_exhausted":                                   2,
				"yaoki.component=httpretry,yaoki.name=api,yaoki.reason=breaker_open,server.address=api": 1,
				"yaoki.component=retry,yaoki.reason=rejected_locally":                                   1,
				"yaoki.component=retry,yaoki.reason=bulkhead_full":                                      1,
			},
			// The key is never an attribute: it would make a series per request.
			yotel.MetricReplays: {
				"http.request.method=POST,http.response.status_code=201,yaoki.component=idempotency,yaoki.status_class=2xx": 2,
			},
			yotel.MetricConflicts: {
				"http.request.method=POST,http.response.status_code=409,yaoki.component=idempotency,yaoki.reason=in_progress,yaoki.status_class=4xx":          1,
				"http.request.method=POST,http.response.status_code=422,yaoki.component=idempotency,yaoki.reason=fingerprint_mismatch,yaoki.status_class=4xx": 1,
			},
		},
	}, {
		// Hedges sent and won have their own counters; refused ones are
		// local rejections, by reason.
		name: "hedges",
		events: []event.Event{
			{Kind: event.Hedge, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 2, Wait: 50 * time.Millisecond},
			{Kind: event.Hedge, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 3, Wait: 100 * time.Millisecond},
			{Kind: event.HedgeWon, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 3, Duration: 120 * time.Millisecond},
			{Kind: event.HedgeRefused, Component: "httpretry", Method: "GET", Host: "api.example.com", Attempt: 2, Reason: "hedge_brownout"},
		},
		want: map[string]map[string]float64{
			yotel.MetricHedges:     {hedged: 2},
			yotel.MetricHedgesWon:  {hedged: 1},
			yotel.MetricRejections: {hedged + ",yaoki.reason=hedge_brownout": 1},
		},
	}, {
		name: "redrives",
		events: []event.Event{
			{Kind: event.Redrive, Component: "deadletter", Name: "payments", Outcome: event.Success, Key: "a", Attempt: 1},
			{Kind: event.Redrive, Component: "deadletter", Name: "payments", Outcome: event.Success, Key: "b", Attempt: 2},
			{Kind: event.Redrive, Component: "deadletter", Name: "payments", Outcome: event.Rejected, Reason: "permanent_error", Key: "c"},
			{Kind: event.Redrive, Component: "deadletter", Name: "orders", Outcome: event.Failure, Reason: "redrive_failed", Key: "d"},
		},
		want: map[string]map[string]float64{
			yotel.MetricRedrives: {
				redrive + "yaoki.name=payments,yaoki.outcome=success":                               2,
				redrive + "yaoki.name=payments,yaoki.outcome=rejected,yaoki.reason=permanent_error": 1,
				redrive + "yaoki.name=orders,yaoki.outcome=failure,yaoki.reason=redrive_failed":     1,
			},
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			o, collect := newObserver(t)
			for _, e := range c.events {
				o.Observe(t.Context(), e)
			}
			s := collect()
			for name, want := range c.want {
				s.expect(t, name, want)
			}
		})
	}
}

func TestBreakerGauge(t *testing.T) {
	o, collect := newObserver(t)
	ctx := context.Background()
	var mu sync.Mutex
	state := "closed"
	untrack := o.TrackBreakerFunc("payments", func() string { mu.Lock(); defer mu.Unlock(); return state })
	o.TrackBreakerFunc("broken", func() string { return "unknown" }) // not reported

	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=payments": 0})

	mu.Lock()
	state = "half-open"
	mu.Unlock()
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=payments": 1})

	// A breaker nobody tracks is learned from its transitions; a tracked
	// one is read, whatever its events say.
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: "api.example.com", From: "closed", To: "open"})
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: "payments", From: "half_open", To: "open"})
	s := collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=payments": 1, "yaoki.name=api.example.com": 2})
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"yaoki.component=breaker,yaoki.name=api.example.com,yaoki.state.from=closed,yaoki.state.to=open": 1,
		"yaoki.component=breaker,yaoki.name=payments,yaoki.state.from=half_open,yaoki.state.to=open":     1,
	})

	// Untracked, payments is gone: what its events said is not taken for
	// its state, nor what they say later. api.example.com is still learned.
	untrack()
	untrack()
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: "api.example.com", From: "open", To: "half_open"})
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: "payments", From: "open", To: "half_open"})
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=api.example.com": 1})
}

func TestBudgetGauge(t *testing.T) {
	o, collect := newObserver(t)
	level := 1.0
	untrack := o.TrackBudget("partner", func() float64 { return level })
	stale := o.TrackBudget("orders", func() float64 { return 0.5 })
	o.TrackBudget("orders", func() float64 { return 0.75 }) // replaces
	stale()                                                 // does not remove the replacement
	collect().expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=partner": 1, "yaoki.name=orders": 0.75})
	level = 0.1
	untrack()
	collect().expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=orders": 0.75})
}

// TestBreakerAndBudget wires a real breaker and a real token-bucket budget
// of the toolkit: the breaker reports its transitions and refusals to the
// Observer, the gauges read the breaker's state and the budget's level.
func TestBreakerAndBudget(t *testing.T) {
	o, collect := newObserver(t)
	inventory, err := breaker.New(breaker.Config{Name: "inventory", ConsecutiveFailures: 2,
		OpenTimeout: time.Minute, OpenJitter: breaker.Disabled, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	// search trips an hour ago: its open period is over, so it is
	// half-open for whoever asks, though no call has moved it yet.
	search, err := breaker.New(breaker.Config{Name: "search", ConsecutiveFailures: 1,
		OpenTimeout: time.Minute, OpenJitter: breaker.Disabled, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	quota, err := budget.NewBucket(budget.BucketConfig{}) // 500 tokens, 14 a retry
	if err != nil {
		t.Fatal(err)
	}
	o.TrackBudget("inventory", quota.Level)
	o.TrackBreaker(inventory)

	down := errors.New("connection refused")
	p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: 4, Env: &retry.Env{Breaker: inventory, Budget: quota, Observer: o}})
	// Attempts 1 and 2 fail and trip the breaker; attempt 3 is refused.
	err = retry.Do(context.Background(), p, retrytest.Script(down, down, down, down).Func())
	if !errors.Is(err, retry.ErrBreakerOpen) {
		t.Fatalf("Do = %v, want breaker open", err)
	}
	ago := time.Now().Add(-time.Hour)
	tk, _ := search.AllowAt(ago, false)
	search.DoneAt(ago, tk, time.Millisecond, down)

	s := collect()
	// inventory is read (open); search is learned from its one transition
	// (open), since nobody tracks it.
	s.expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=inventory": 2, "yaoki.name=search": 2})
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"yaoki.component=breaker,yaoki.name=inventory,yaoki.state.from=closed,yaoki.state.to=open": 1,
		"yaoki.component=breaker,yaoki.name=search,yaoki.state.from=closed,yaoki.state.to=open":    1,
	})
	// The refusal, reported by the breaker and by the loop that asked it.
	s.expect(t, yotel.MetricRejections, map[string]float64{
		"yaoki.component=breaker,yaoki.name=inventory,yaoki.reason=breaker_open": 1,
		"yaoki.component=retry,yaoki.reason=breaker_open":                        1,
	})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		"error.type=_OTHER,yaoki.component=retry,yaoki.reason=breaker_open": 1,
	})
	// Two retries granted (14 tokens each) and no success; the second,
	// refused by the breaker, hands its tokens back: 486 left.
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=inventory": 486})

	// Tracked, search shows half-open: its State says so before any call.
	o.TrackBreaker(search)
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=inventory": 2, "yaoki.name=search": 1})
}

func TestStateValue(t *testing.T) {
	for in, want := range map[string]int64{"closed": 0, "CLOSED": 0, "half_open": 1, "half-open": 1, "HalfOpen": 1, "half open": 1, "open": 2} {
		if got, ok := yotel.StateValue(in); !ok || got != want {
			t.Errorf("StateValue(%q) = %d, %v; want %d, true", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "opened", "half"} {
		if _, ok := yotel.StateValue(in); ok {
			t.Errorf("StateValue(%q) ok, want not", in)
		}
	}
}

func TestNewNilProvider(t *testing.T) {
	if _, err := yotel.New(nil); err == nil || !strings.HasPrefix(err.Error(), "otel: ") {
		t.Fatalf("New(nil) = %v, want an error starting with \"otel: \"", err)
	}
}

// TestManyDestinations goes past the cache of attribute sets: every event
// must still be counted under its own attributes.
func TestManyDestinations(t *testing.T) {
	o, collect := newObserver(t, sdkmetric.WithCardinalityLimit(0)) // the SDK's default keeps 2000 series
	ctx := context.Background()
	const n = 5000
	for i := range n {
		o.Observe(ctx, event.Event{Kind: event.GaveUp, Component: "httpretry", Host: fmt.Sprintf("h%d", i), Reason: "deadline"})
	}
	o.Observe(ctx, event.Event{Kind: event.GaveUp, Component: "httpretry", Host: "h4999", Reason: "deadline"})
	got := collect().values(yotel.MetricGiveUps)
	if len(got) != n || got["server.address=h4999,yaoki.component=httpretry,yaoki.reason=deadline"] != 2 {
		t.Fatalf("%d series, h4999 = %v; want %d series and 2", len(got), got["server.address=h4999,yaoki.component=httpretry,yaoki.reason=deadline"], n)
	}
}

// TestConcurrent records from many goroutines while collecting, under
// -race, and checks that nothing is lost.
func TestConcurrent(t *testing.T) {
	o, collect := newObserver(t)
	o.TrackBreakerFunc("b", func() string { return "closed" })
	const goroutines, calls = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: o}})
			for range calls {
				_ = retry.Do(context.Background(), p, retrytest.Script(errors.New("x")).Func())
				o.Observe(context.Background(), event.Event{Kind: event.BreakerStateChange, Name: fmt.Sprint(g), From: "closed", To: "open"})
			}
		}()
	}
	for range 5 {
		collect()
	}
	wg.Wait()
	s := collect()
	var attempts float64
	for _, v := range s.values(yotel.MetricAttempts) {
		attempts += v
	}
	if attempts != 2*goroutines*calls {
		t.Fatalf("%v attempts counted, want %d", attempts, 2*goroutines*calls)
	}
	if got := len(s[yotel.MetricBreakerState]); got != goroutines+1 {
		t.Fatalf("%d breaker series, want %d", got, goroutines+1)
	}
}

// TestArbitraryMethodsDoNotFillTheCache: a server observed by the
// idempotency middleware (or yaoki flaky) reports the methods its clients
// send, any token at all. They are all counted as "_OTHER", one series, and
// must not take the cache of attribute sets from the series that are real:
// after 5000 made-up methods, an event of a new, ordinary set is still
// cached and recorded without allocating.
func TestArbitraryMethodsDoNotFillTheCache(t *testing.T) {
	o, collect := newObserver(t)
	ctx := context.Background()
	for i := range 5000 {
		o.Observe(ctx, event.Event{Kind: event.Replay, Component: "idempotency", Method: fmt.Sprintf("M%d", i), Status: 200})
	}
	e := event.Event{Kind: event.Replay, Component: "idempotency", Method: "POST", Status: 201}
	o.Observe(ctx, e)
	if n := testing.AllocsPerRun(100, func() { o.Observe(ctx, e) }); n != 0 {
		t.Errorf("an event of an ordinary set allocates %v times after 5000 made-up methods, want 0 (its set was not cached)", n)
	}
	got := collect().values(yotel.MetricReplays)
	if len(got) != 2 || got["http.request.method=_OTHER,http.response.status_code=200,yaoki.component=idempotency,yaoki.status_class=2xx"] != 5000 {
		t.Errorf("replays = %v, want 5000 under _OTHER and the POSTs", got)
	}
}

// TestUnnamedBreakerNotOnTheGauge: breakers without a name (their events
// carry none) cannot be told apart, so their transitions are counted but
// none of them is put on the state gauge: two of them, one open and one
// closed, made one series without yaoki.name that showed whichever
// reported last, and an alert on it named no breaker.
func TestUnnamedBreakerNotOnTheGauge(t *testing.T) {
	o, collect := newObserver(t)
	ctx := context.Background()
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", From: "closed", To: "open"})
	o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", From: "open", To: "closed"})
	s := collect()
	if g := s[yotel.MetricBreakerState]; len(g) != 0 {
		t.Errorf("breaker state %v, want no series for unnamed breakers", g)
	}
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"yaoki.component=breaker,yaoki.state.from=closed,yaoki.state.to=open": 1,
		"yaoki.component=breaker,yaoki.state.from=open,yaoki.state.to=closed": 1,
	})
}
