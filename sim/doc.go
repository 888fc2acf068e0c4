// Package sim shows, on virtual time, what a retry policy does to a system.
//
// It is a deterministic discrete-event simulator (a priority queue of
// events, a clock that jumps from one to the next, and seeded PCG sources)
// and the scenarios built on it, most of them the model of a
// published result:
//
//   - Herd: the thundering herd of the AWS Architecture Blog's
//     "Exponential Backoff And Jitter" (2015): clients contending for one
//     row under optimistic concurrency. It reproduces the post's calls and
//     completion times for no backoff, exponential backoff, and full, equal
//     and decorrelated jitter (HerdStrategies explains how the post's
//     formulas map onto backoff.Schedule).
//   - Outage: Marc Brooker's "Fixing retries with token buckets and
//     circuit breakers" (2022): a server that fails a share of attempts,
//     and what each policy buys (success) for what it costs
//     (amplification). OutageAnchors are the post's policies.
//   - Collapse: a metastable failure: a server that slows down with the
//     work in flight, clients that time out and retry, and a short trigger
//     after which the retries alone keep the server down.
//   - RateLimit: an API behind a fixed-window rate limiter whose 429s say
//     "Retry-After: 0" (come back now): a call retried at once meets the
//     window that has just refused it, a backoff moves it to a later one
//     (RateLimitPolicies).
//   - Tail: Dean and Barroso's "The Tail at Scale" (2013): requests that
//     fan out to 100 backends, 1 % of whose answers are slow, hedged by
//     package hedge's Hedger (TailPolicies), then a brownout where every
//     answer is slow: latency gained for load added.
//
// The policies under test are the toolkit's real objects: a Policy holds a
// backoff.Schedule and builds, per client or once per run, the
// retry.Budget, retry.Breaker and retry.Throttle that package retry would
// consult, and each simulated request is retry.Loop, the state machine
// that retry.Do drives with timers, driven with virtual instants as now.
// So the simulator shows what production code does with the same settings.
//
// Every run is a pure function of its parameters, its policy and its seed;
// sweeps derive each run's seed from theirs, so results do not depend on
// the number of workers. Nothing in this package reads the clock or a
// global random source. Scenario values are safe for concurrent use.
package sim
