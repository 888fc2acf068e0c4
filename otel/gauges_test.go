package otel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// get sends a GET to url through tr and closes the answer.
func get(t *testing.T, tr *httpretry.Transport, url string) {
	t.Helper()
	client := tr.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// guardedTransport returns a transport over base whose hosts get a token
// bucket and a breaker that trips after three failures in a row and
// reports its transitions to o, as a program that wants the transitions
// counted sets them up.
func guardedTransport(base http.RoundTripper, o *yotel.Observer) *httpretry.Transport {
	p, _ := retrytest.NoWait(retry.Policy{})
	return &httpretry.Transport{Base: base, Policy: p, Observer: o, Guards: httpretry.Guards{
		Budget: func(string) retry.Budget { b, _ := budget.NewBucket(budget.BucketConfig{}); return b },
		Breaker: func(host string) retry.Breaker {
			b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 3, OpenJitter: breaker.Disabled, Observer: o})
			return b
		},
	}}
}

// finishLate moves b as a call still in flight on a retired transport
// does: a probe hours after b tripped finds the open period over (open to
// half-open) and fails (half-open to open), each move reported to b's
// Observer.
func finishLate(t *testing.T, b retry.Breaker, hours int) {
	t.Helper()
	br, ok := b.(*breaker.Breaker)
	if !ok {
		t.Fatalf("breaker %T, want *breaker.Breaker", b)
	}
	later := time.Now().Add(time.Duration(hours) * time.Hour)
	tk, err := br.AllowAt(later, true)
	if err != nil {
		t.Fatalf("probe refused: %v", err)
	}
	br.DoneAt(later, tk, time.Millisecond, errors.New("connection refused"))
	if s := br.StateAt(later); s != breaker.Open {
		t.Fatalf("breaker %v after the failed probe, want open", s)
	}
}

// TestUntrackedBreakerIsNotReported tracks a breaker that also reports its
// transitions: once untracked, its name leaves the gauge, and transitions
// it reports later (a call still finishing on it) do not bring it back.
func TestUntrackedBreakerIsNotReported(t *testing.T) {
	o, collect := newObserver(t)
	b, err := breaker.New(breaker.Config{Name: "payments", ConsecutiveFailures: 1, OpenJitter: breaker.Disabled, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	untrack := o.TrackBreaker(b)
	now := time.Now()
	tk, _ := b.AllowAt(now, false)
	b.DoneAt(now, tk, time.Millisecond, errors.New("connection refused"))
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=payments": 2})

	untrack()
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{})
	finishLate(t, b, 1)
	s := collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{})
	// The transitions are counted all the same.
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"yaoki.component=breaker,yaoki.name=payments,yaoki.state.from=closed,yaoki.state.to=open":    1,
		"yaoki.component=breaker,yaoki.name=payments,yaoki.state.from=open,yaoki.state.to=half_open": 1,
		"yaoki.component=breaker,yaoki.name=payments,yaoki.state.from=half_open,yaoki.state.to=open": 1,
	})

	// Tracked again (a new breaker of that name), it is read.
	fresh, _ := breaker.New(breaker.Config{Name: "payments", Observer: o})
	defer o.TrackBreaker(fresh)()
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=payments": 0})
}

// TestTrackTransportReload replaces a tracked transport as yaoki proxy
// does on SIGHUP: the new transport is tracked, then the old one
// untracked. The old one called hosts A (its breaker tripped) and B; the
// new one calls A only. Each host shows the guards of a tracked transport
// that has guards for it, and nothing otherwise: not the old breaker's
// last state, even when a call still finishing on the old transport moves
// that breaker.
func TestTrackTransportReload(t *testing.T) {
	o, collect := newObserver(t)
	a, b := retrytest.NewServer(t, "503,503,503,200"), retrytest.NewServer(t, "200")
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	nameA, nameB := "yaoki.name="+hostA, "yaoki.name="+hostB

	base := a.Client().Transport // both servers are plain HTTP on loopback
	old := guardedTransport(base, o)
	untrackOld := o.TrackTransport(old)
	get(t, old, a.URL+"/") // 503 three times: A's breaker trips
	get(t, old, b.URL+"/")
	s := collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{nameA: 2, nameB: 0})
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{nameA: 490, nameB: 500})

	renewed := guardedTransport(base, o)
	untrackNew := o.TrackTransport(renewed)
	untrackOld()
	// The new transport has not called A yet: it has no guards to show.
	s = collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{})
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{})

	_, oldA, _ := old.GuardsFor(hostA) // made already: GuardsFor makes none
	finishLate(t, oldA, 1)
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{})

	get(t, renewed, a.URL+"/") // 200
	s = collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{nameA: 0})
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{nameA: 500})
	finishLate(t, oldA, 2) // the old breaker moves again: the new one is still what shows
	collect().expect(t, yotel.MetricBreakerState, map[string]float64{nameA: 0})

	untrackNew()
	s = collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{})
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{})
}

// TestUntrackedSeriesLeaveTheScrape checks, through the Prometheus
// exporter, that an untracked breaker's and budget's series are gone from
// the next scrape (so that Prometheus marks them stale and an alert on
// them resolves), while a breaker known only from its events stays.
func TestUntrackedSeriesLeaveTheScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := promObserver(t, reg)
	trip := func(name string) *breaker.Breaker {
		b, err := breaker.New(breaker.Config{Name: name, ConsecutiveFailures: 1, Observer: o})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		tk, _ := b.AllowAt(now, false)
		b.DoneAt(now, tk, time.Millisecond, errors.New("connection refused"))
		return b
	}
	untrackBreaker := o.TrackBreaker(trip("payments"))
	trip("search") // never tracked: known from its transition
	untrackBudget := o.TrackBudget("payments", func() float64 { return 0 })
	series := func() map[string]float64 {
		families, _ := scrape(t, reg)
		out := map[string]float64{}
		for _, name := range []string{"yaoki_breaker_state", "yaoki_budget_level"} {
			for _, m := range families[name].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "yaoki_name" {
						out[name+"{"+l.GetValue()+"}"] = m.GetGauge().GetValue()
					}
				}
			}
		}
		return out
	}
	want := map[string]float64{"yaoki_breaker_state{payments}": 2, "yaoki_breaker_state{search}": 2, "yaoki_budget_level{payments}": 0}
	if got := series(); !equal(got, want) {
		t.Fatalf("tracked: %v, want %v", got, want)
	}
	untrackBreaker()
	untrackBudget()
	want = map[string]float64{"yaoki_breaker_state{search}": 2}
	if got := series(); !equal(got, want) {
		t.Fatalf("untracked: %v, want %v", got, want)
	}
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestTrackTransportsSharingAHost tracks two transports that call the same
// host (two routes of yaoki proxy to one upstream), each with guards of its
// own: one's breaker is open and its budget spent in part, the other's
// closed and full. The host's series is the worse of the two at every
// collection (the breaker's highest state, the budget's lowest level), as
// the dashboard aggregates replicas, rather than whichever transport a
// collection happens to read last.
func TestTrackTransportsSharingAHost(t *testing.T) {
	o, collect := newObserver(t)
	srv := retrytest.NewServer(t, "503,503,503,200")
	host := "yaoki.name=" + strings.TrimPrefix(srv.URL, "http://")
	failing, healthy := guardedTransport(srv.Client().Transport, o), guardedTransport(srv.Client().Transport, o)
	defer o.TrackTransport(healthy)()
	defer o.TrackTransport(failing)()
	get(t, failing, srv.URL+"/") // 503 three times: its breaker trips
	get(t, healthy, srv.URL+"/") // 200
	for i := 0; i < 20 && !t.Failed(); i++ {
		s := collect()
		s.expect(t, yotel.MetricBreakerState, map[string]float64{host: 2})
		s.expect(t, yotel.MetricBudgetLevel, map[string]float64{host: 490})
	}
	// Tracked by name, a breaker and a budget are what shows, whatever the
	// transports' guards of that host say.
	name := strings.TrimPrefix(host, "yaoki.name=")
	closed, _ := breaker.New(breaker.Config{Name: name})
	defer o.TrackBreaker(closed)()
	defer o.TrackBudget(name, func() float64 { return 1000 })()
	for i := 0; i < 20 && !t.Failed(); i++ {
		s := collect()
		s.expect(t, yotel.MetricBreakerState, map[string]float64{host: 0})
		s.expect(t, yotel.MetricBudgetLevel, map[string]float64{host: 1000})
	}
}

// TestTrackingConcurrent tracks and untracks transports and breakers on
// several goroutines while their breakers move, other breakers report
// transitions and the gauges are collected (run with -race). Once all is
// untracked, only the breakers known from their events alone are left.
func TestTrackingConcurrent(t *testing.T) {
	o, collect := newObserver(t)
	ctx := context.Background()
	const goroutines, rounds = 4, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			host := fmt.Sprintf("h%d.example:8443", g)
			for range rounds {
				tr := guardedTransport(nil, o) // sends nothing: its guards are made with GuardsFor
				untrackTransport := o.TrackTransport(tr)
				untrackBreaker := o.TrackBreakerFunc(fmt.Sprint("named", g), func() string { return "open" })
				o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Component: "httpretry", Host: host, Method: "GET",
					Status: 503, Outcome: event.Throttled})
				_, b, _ := tr.GuardsFor(host)
				br := b.(*breaker.Breaker)
				now := time.Now()
				for range 3 {
					tk, err := br.AllowAt(now, false)
					if err == nil {
						br.DoneAt(now, tk, time.Millisecond, errors.New("connection refused"))
					}
				}
				o.Observe(ctx, event.Event{Kind: event.BreakerStateChange, Component: "breaker", Name: fmt.Sprint("learned", g),
					From: "closed", To: "open"})
				untrackBreaker()
				untrackTransport()
			}
		})
	}
	for range 20 {
		collect()
	}
	wg.Wait()
	s := collect()
	s.expect(t, yotel.MetricBreakerState, map[string]float64{
		"yaoki.name=learned0": 2, "yaoki.name=learned1": 2, "yaoki.name=learned2": 2, "yaoki.name=learned3": 2,
	})
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{})
}
