// Package otel records the toolkit's events as OpenTelemetry metrics, so
// that an operator sees a retry storm coming: the 429 rate rising, retries
// as a share of calls, give-ups by reason, breakers opening, budgets running
// dry.
//
// It uses the OpenTelemetry metrics API only: the application brings the
// SDK and its exporter (Prometheus, OTLP, ...). Wiring it up:
//
//	exporter, _ := prometheus.New()                       // go.opentelemetry.io/otel/exporters/prometheus
//	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
//	obs, err := otel.New(provider)                        // this package
//	if err != nil { ... }
//	client := &http.Client{Transport: &httpretry.Transport{Observer: obs}}
//	p := retry.Policy{Env: &retry.Env{Observer: obs}}                      // or on a policy
//
// # Metrics
//
// Names are OpenTelemetry's; the Prometheus exporter (with its default
// translation) writes dots as underscores and adds the unit and _total
// suffixes, as the second column shows. Histograms are in seconds.
//
//	OpenTelemetry name           Prometheus name                        type       unit          attributes
//	yaoki.attempts               yaoki_attempts_total                   counter    {attempt}     C N M S H O E
//	yaoki.attempt.duration       yaoki_attempt_duration_seconds         histogram  s             C N M S H O E
//	yaoki.retries                yaoki_retries_total                    counter    {retry}       C N M S H W E
//	yaoki.retry.wait             yaoki_retry_wait_seconds               histogram  s             C N M S H W R E
//	yaoki.give_ups               yaoki_give_ups_total                   counter    {call}        C N M S H R E
//	yaoki.rejections             yaoki_rejections_total                 counter    {attempt}     C N M H R
//	yaoki.hedges                 yaoki_hedges_total                     counter    {hedge}       C N M H
//	yaoki.hedges_won             yaoki_hedges_won_total                 counter    {call}        C N M H
//	yaoki.breaker.transitions    yaoki_breaker_transitions_total        counter    {transition}  C N F
//	yaoki.breaker.state          yaoki_breaker_state                    gauge      {state}       N
//	yaoki.budget.level           yaoki_budget_level                     gauge                    N
//	yaoki.idempotency.replays    yaoki_idempotency_replays_total        counter    {request}     C M S H
//	yaoki.idempotency.conflicts  yaoki_idempotency_conflicts_total      counter    {request}     C M S R
//	yaoki.deadletter.letters     yaoki_deadletter_letters               gauge      {letter}      N D
//	yaoki.deadletter.redrives    yaoki_deadletter_redrives_total        counter    {letter}      C N O R
//
// Attributes (the letters above; Prometheus label names replace the dots
// with underscores). An attribute is present only when the event has it:
// a retry loop outside HTTP has no method, destination or status.
//
//	C  yaoki.component            the reporting package: retry, httpretry, breaker, redis, idempotency,
//	                              deadletter, flaky (yaoki flaky)
//	N  yaoki.name                 the breaker's, budget's or dead-letter queue's name, when it has one
//	M  http.request.method        semantic convention; methods outside RFC 9110 and PATCH, QUERY are _OTHER
//	S  http.response.status_code  semantic convention (an int), with yaoki.status_class: 2xx, 4xx, 5xx
//	H  server.address             semantic convention: the destination host; server.port when the host has a port
//	O  yaoki.outcome              success, failure (retryable), throttled (429, 503), rejected (not retryable), cancelled;
//	                              redrives: success (done), failure (due again), rejected (parked)
//	W  yaoki.wait.source          backoff (the schedule), server (Retry-After or another hint), rate_limit
//	                              (a throttle's wait before an attempt, the first one too, or a
//	                              wait for a bulkhead's slot, with R bulkhead: in yaoki.retry.wait
//	                              only, since it schedules no retry)
//	R  yaoki.reason               give-ups: attempts_exhausted, deadline, permanent_error, hint_too_long,
//	                              cancelled, budget_exhausted, breaker_open, rejected_locally,
//	                              outer_layer_retries, and from httpretry not_idempotent,
//	                              body_not_replayable, do_not_retry; rejections: budget_exhausted,
//	                              breaker_open, rejected_locally, deadline (a throttle's wait
//	                              that would end after it), and for hedges not sent
//	                              attempts_exhausted, outer_layer_retries, hedge_budget_exhausted,
//	                              hedge_brownout; waits: bulkhead (a wait for a full bulkhead's
//	                              slot, source rate_limit); conflicts: the middleware's reason
//	                              (idempotency.Reason…: key_missing, key_malformed, in_progress,
//	                              key_reused, ...);
//	                              redrives: redrive_failed, redrives_exhausted, permanent_error, lease_lost
//	E  error.type                 semantic convention: the status code ("503") for statuses ≥ 400, else
//	                              timeout, cancelled, connection_refused, connection_reset, eof, the
//	                              error's Go type, or _OTHER (see event.Event.ErrorType)
//	F  yaoki.state.from, yaoki.state.to   closed, half_open, open
//	D  yaoki.deadletter.state     waiting, due, held, parked (N is the queue)
//
// The breaker state gauge is 0 closed, 1 half-open, 2 open; breakers are
// read when registered with TrackBreaker, and otherwise learned from their
// state-change events (give the Observer to breaker.Config.Observer), if
// they have a name. The
// budget level is what a budget registered with TrackBudget says: retries
// still granted (share-of-traffic budget) or tokens (token bucket).
// TrackTransport reads the guards an httpretry.Transport keeps per
// destination host (its default share-of-traffic budget, and breakers if
// it makes them), named by the host. TrackDeadLetters counts a dead-letter
// queue's letters by state at each collection (deadletter.Store.Count).
// What is untracked leaves the gauges at the next collection, with the
// names it served: a breaker's later events do not bring its name back,
// and a host whose transport was replaced shows the new transport's guards
// once it has made them. A breaker known only from its events stays for
// as long as the Observer.
//
// A breaker that has the Observer reports its refusals itself
// (yaoki.component "breaker"), and so does the retry loop that asked it
// (yaoki.component "retry" or "httpretry"): sum one or the other.
//
// The same attribute names are used by package eventlog for log lines, so
// a log line and a series about the same call match.
package otel
