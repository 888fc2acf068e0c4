package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/yaoki-go/yaoki/event"
)

// ScopeName is the instrumentation scope of the meter the Observer creates
// (the otel_scope_name label in Prometheus).
const ScopeName = "github.com/yaoki-go/yaoki/otel"

// Instrument names, as OpenTelemetry names them; the package documentation
// gives their Prometheus names, units and attributes.
const (
	MetricAttempts           = "yaoki.attempts"
	MetricRetries            = "yaoki.retries"
	MetricGiveUps            = "yaoki.give_ups"
	MetricRejections         = "yaoki.rejections"
	MetricReplays            = "yaoki.idempotency.replays"
	MetricConflicts          = "yaoki.idempotency.conflicts"
	MetricBreakerTransitions = "yaoki.breaker.transitions"
	MetricRetryWait          = "yaoki.retry.wait"
	MetricAttemptDuration    = "yaoki.attempt.duration"
	MetricBreakerState       = "yaoki.breaker.state"
	MetricBudgetLevel        = "yaoki.budget.level"
	MetricRedrives           = "yaoki.deadletter.redrives"
	MetricHedges             = "yaoki.hedges"
	MetricHedgesWon          = "yaoki.hedges_won"
)

// Bucket boundaries, in seconds, of the two histograms (an SDK View can
// change them). Both run from 1 ms to 10 min with no bucket wider than a
// factor of 3 (TestBucketsFitWaitsAndDurations): a wait drawn by full
// jitter may be close to 0, the default schedule's cap is 20 s and its
// largest server hint 60 s, and a throttle's wait, a hint under a larger
// MaxRetryAfter or a batch job's attempt can last minutes. The
// durations keep every bound of the semantic conventions'
// http.client.request.duration (5 ms to 10 s).
var (
	waitBuckets     = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300, 600}
)

// maxSets bounds the cache of attribute sets: past it (a cardinality
// explosion in server.address, say), sets are built per event and not kept.
const maxSets = 4096

// Observer is an event.Observer that records the toolkit's events as
// OpenTelemetry metrics: counters of attempts, retries, give-ups, local
// rejections, breaker transitions, idempotent replays and conflicts;
// histograms of retry waits and attempt durations; and two observable
// gauges, the state of circuit breakers and the level of retry budgets (see
// TrackBreaker and TrackBudget).
//
// Build it with New and attach it wherever an event.Observer is taken (a
// retry.Policy's Observer, the transports and middleware of the toolkit).
// One Observer is meant to be shared by every caller of a program; it is
// safe for concurrent use. Recording allocates nothing once the attribute
// set of an event has been seen (the sets are cached, up to 4096 of them).
type Observer struct {
	attempts    metric.Int64Counter
	retries     metric.Int64Counter
	giveUps     metric.Int64Counter
	rejections  metric.Int64Counter
	replays     metric.Int64Counter
	conflicts   metric.Int64Counter
	transitions metric.Int64Counter
	redrives    metric.Int64Counter
	hedges      metric.Int64Counter
	hedgesWon   metric.Int64Counter
	waits       metric.Float64Histogram
	durations   metric.Float64Histogram

	gauges      gauges
	deadLetters deadLetters

	mu   sync.RWMutex
	sets map[setKey]*measure
}

// New returns an Observer that records on a meter of mp named ScopeName.
// mp is typically the application's SDK MeterProvider; New fails if it is
// nil or refuses an instrument.
func New(mp metric.MeterProvider) (*Observer, error) {
	if mp == nil {
		return nil, errors.New("otel: New: nil MeterProvider (pass the SDK's MeterProvider, or otel.GetMeterProvider())")
	}
	m := mp.Meter(ScopeName)
	o := &Observer{sets: make(map[setKey]*measure)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, bounds []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	o.attempts = counter(MetricAttempts, "{attempt}", "Attempts made, by outcome, status and destination.")
	o.retries = counter(MetricRetries, "{retry}", "Retries scheduled (each followed by a wait), by wait source.")
	o.giveUps = counter(MetricGiveUps, "{call}", "Calls that stopped without success, by reason.")
	o.rejections = counter(MetricRejections, "{attempt}", "Attempts or retries refused locally by a budget, a breaker or a throttle, by reason.")
	o.replays = counter(MetricReplays, "{request}", "Requests answered with a stored response by the idempotency middleware.")
	o.conflicts = counter(MetricConflicts, "{request}", "Requests refused by the idempotency middleware (409, 422, 400), by reason.")
	o.transitions = counter(MetricBreakerTransitions, "{transition}", "Circuit breaker state changes, by breaker and states.")
	o.redrives = counter(MetricRedrives, "{letter}", "Dead letters redriven, by queue, outcome (success: done; failure: due again; rejected: parked) and reason.")
	o.hedges = counter(MetricHedges, "{hedge}", "Hedges sent: copies of calls whose earlier attempts had not answered yet.")
	o.hedgesWon = counter(MetricHedgesWon, "{call}", "Calls whose answer came from a hedge rather than from the first attempt.")
	o.waits = histogram(MetricRetryWait, "Waits before attempts, by source: the backoff schedule or the server's hint before a retry, or a client-side rate limiter.", waitBuckets)
	o.durations = histogram(MetricAttemptDuration, "Durations of attempts, by outcome, status and destination.", durationBuckets)
	errs = append(errs, o.gauges.register(m), o.deadLetters.register(m))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otel: New: creating instruments: %w", err)
	}
	return o, nil
}

// Observe records e. Events of kinds that no instrument counts
// (event.AttemptStart) are ignored. A panic of the meter provider's
// instruments (a bug of the SDK or of an exporter) is recovered and handed
// to OpenTelemetry's error handler (otel.Handle): the loops of the toolkit
// let an observer's panic go on, and a call must not fail because its
// metrics could not be recorded.
func (o *Observer) Observe(ctx context.Context, e event.Event) {
	defer recovered(e.Kind)
	switch e.Kind {
	case event.AttemptEnd:
		m := o.measure(e)
		o.attempts.Add(ctx, 1, m.add...)
		o.durations.Record(ctx, e.Duration.Seconds(), m.record...)
	case event.RetryScheduled:
		m := o.measure(e)
		if e.Source != event.RateLimit { // a throttle's wait delays an attempt: no retry
			o.retries.Add(ctx, 1, m.add...)
		}
		o.waits.Record(ctx, e.Wait.Seconds(), m.record...)
	case event.GaveUp:
		o.giveUps.Add(ctx, 1, o.measure(e).add...)
	case event.BudgetRefused, event.BreakerRejected, event.ThrottleRejected, event.HedgeRefused:
		o.rejections.Add(ctx, 1, o.measure(e).add...)
	case event.Hedge:
		o.hedges.Add(ctx, 1, o.measure(e).add...)
	case event.HedgeWon:
		o.hedgesWon.Add(ctx, 1, o.measure(e).add...)
	case event.Replay:
		o.replays.Add(ctx, 1, o.measure(e).add...)
	case event.Conflict:
		o.conflicts.Add(ctx, 1, o.measure(e).add...)
	case event.BreakerStateChange:
		if e.Name != "" { // unnamed breakers cannot be told apart on the gauge
			o.gauges.learn(e.Name, e.To)
		}
		o.transitions.Add(ctx, 1, o.measure(e).add...)
	case event.Redrive:
		o.redrives.Add(ctx, 1, o.measure(e).add...)
	}
}

// recovered, deferred by Observe, recovers a panic of the instruments and
// reports it to OpenTelemetry's error handler.
func recovered(k event.Kind) {
	if r := recover(); r != nil {
		otel.Handle(fmt.Errorf("otel: recording event %s: the meter provider panicked: %v (the call goes on, without this measurement)", k, r))
	}
}

// setKey is what an event's attribute set depends on; the fields that do
// not apply to the event's kind are left zero, so that events that differ
// only in them share a set.
type setKey struct {
	kind      event.Kind
	outcome   event.Outcome
	source    event.Source
	status    int
	component string
	name      string
	method    string
	host      string
	reason    string
	errType   string
	from, to  string
}

// measure holds the options that carry one attribute set, ready to pass to
// Add and Record without allocating.
type measure struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func keyOf(e event.Event) setKey {
	// The method is normalized here, not in attributesOf, so that the
	// methods a server's clients make up share one cached set, "_OTHER".
	k := setKey{kind: e.Kind, component: e.Component, name: e.Name, method: e.KnownMethod(), host: e.Host, status: e.Status}
	switch e.Kind {
	case event.AttemptEnd:
		k.outcome = e.Outcome
		k.errType = e.ErrorType()
	case event.RetryScheduled:
		k.source = e.Source
		k.reason = e.Reason // "bulkhead": a wait for a bulkhead's slot, not a throttle's
		k.errType = e.ErrorType()
	case event.GaveUp:
		k.reason = e.Reason
		k.errType = e.ErrorType()
	case event.BudgetRefused, event.BreakerRejected, event.ThrottleRejected, event.HedgeRefused:
		k.reason = rejectionReason(e)
		k.status = 0
	case event.Hedge, event.HedgeWon:
		k.status = 0
	case event.Conflict:
		k.reason = e.Reason
	case event.BreakerStateChange:
		k.from, k.to = e.From, e.To
		k.status = 0
	case event.Redrive:
		k.outcome, k.reason = e.Outcome, e.Reason
	}
	return k
}

// rejectionReason names a local refusal as the give-up that follows it
// does (retry.Reason.Key): budget_exhausted, breaker_open or
// rejected_locally, unless the event says otherwise.
func rejectionReason(e event.Event) string {
	if e.Reason != "" {
		return e.Reason
	}
	switch e.Kind {
	case event.BudgetRefused:
		return "budget_exhausted"
	case event.BreakerRejected:
		return "breaker_open"
	}
	return "rejected_locally"
}

func (o *Observer) measure(e event.Event) *measure {
	k := keyOf(e)
	o.mu.RLock()
	m, ok := o.sets[k]
	o.mu.RUnlock()
	if ok {
		return m
	}
	if k.component == "httpretry" && k.host != "" {
		o.gauges.sawHost(k.host)
	}
	set := attributesOf(k)
	opt := metric.WithAttributeSet(set)
	m = &measure{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	o.mu.Lock()
	if len(o.sets) < maxSets {
		o.sets[k] = m
	}
	o.mu.Unlock()
	return m
}

// attributesOf builds the attribute set of k; see the package
// documentation for which instrument carries which attributes.
func attributesOf(k setKey) attribute.Set {
	kv := make([]attribute.KeyValue, 0, 12)
	kv = append(kv, attribute.String(event.AttrComponent, k.component))
	if k.name != "" {
		kv = append(kv, attribute.String(event.AttrName, k.name))
	}
	if k.method != "" {
		kv = append(kv, attribute.String(event.AttrMethod, k.method))
	}
	if k.host != "" {
		addr, port := event.Event{Host: k.host}.Server()
		kv = append(kv, attribute.String(event.AttrServerAddress, addr))
		if port != 0 {
			kv = append(kv, attribute.Int(event.AttrServerPort, port))
		}
	}
	if k.status != 0 {
		e := event.Event{Status: k.status}
		kv = append(kv, attribute.Int(event.AttrStatusCode, k.status))
		if c := e.StatusClass(); c != "" {
			kv = append(kv, attribute.String(event.AttrStatusClass, c))
		}
	}
	if k.outcome != 0 {
		kv = append(kv, attribute.String(event.AttrOutcome, k.outcome.String()))
	}
	if k.source != 0 {
		kv = append(kv, attribute.String(event.AttrWaitSource, k.source.String()))
	}
	if k.reason != "" {
		kv = append(kv, attribute.String(event.AttrReason, k.reason))
	}
	if k.errType != "" {
		kv = append(kv, attribute.String(event.AttrErrorType, k.errType))
	}
	if k.kind == event.BreakerStateChange {
		kv = append(kv, attribute.String(event.AttrStateFrom, k.from), attribute.String(event.AttrStateTo, k.to))
	}
	return attribute.NewSet(kv...)
}
