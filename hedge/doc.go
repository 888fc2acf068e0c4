// Package hedge cuts the tail latency of calls that are merely slow: when a
// call's first attempt has not answered after a delay, it sends the same
// request again while the first still runs, and takes whichever answer
// comes first (the hedged request of Dean and Barroso, "The Tail at
// Scale", CACM 2013).
//
// A Hedger holds the decisions, for every call to one dependency: the
// delay (fixed, or adaptive: a quantile of the recent latencies of first
// attempts, from an Estimator, a constant-memory streaming histogram), a
// budget (hedges at most a share of calls, 5 % by default) and a brownout
// stop (no hedges while most first attempts are slower than the delay, so
// that hedging does not double the load on a dependency that is already
// struggling). Its methods take now, as the retry guards' do, so that the
// simulator (package sim) drives the same Hedger on virtual time.
//
// See docs/hedging.md for the model, the defaults and the figures.
package hedge
