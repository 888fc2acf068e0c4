package throttle

import (
	"cmp"
	"math/rand/v2"
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// Defaults of AdaptiveConfig. K and the window are the Google SRE book's
// ("Handling Overload"). The bound on the rejection probability and the
// weight of a local rejection are ours, chosen by measurement (the table
// in docs/overload.md, go test -run TestAdaptiveFigures -v ./throttle/
// -args -figures): with both, a client sends about 1 % of its requests to
// a dependency that rejects everything, at 10 to 1000 requests/s, and
// comes back within about a minute after a 5-minute outage ends, where the
// book's counting takes 7 to 19 minutes.
const (
	DefaultK               = 2.0
	DefaultAdaptiveWindow  = 2 * time.Minute
	DefaultMaxProbability  = 0.99
	DefaultRejectionWeight = 0.1
)

const adaptiveBuckets = 12 // the window slides in steps of 10 s

// AdaptiveConfig configures Adaptive. The zero value is K = 2 over the last
// two minutes (the SRE book's), a rejection probability of at most 0.99 and
// local rejections counted at a tenth of a request;
// AdaptiveConfig{MaxProbability: 1, RejectionWeight: 1} is the book's
// formula unchanged.
type AdaptiveConfig struct {
	// K is how many requests the client lets through per request the
	// dependency accepts: nothing is rejected locally while accepts ≥
	// requests/K, and under overload the dependency receives about K times
	// what it accepts (with K = 2, about one overload answer per accepted
	// request; one that accepts nothing receives almost nothing). Lower is
	// more aggressive. Zero: DefaultK (2). Accepted: 1 ≤ K ≤ 100.
	K float64
	// Window is how far back requests and accepts are counted, sliding in
	// steps of a twelfth of it. Zero: DefaultAdaptiveWindow (2 min).
	// Accepted: 1 s to 1 h.
	Window time.Duration
	// MaxProbability bounds the rejection probability, as Envoy's
	// admission control does (its max_rejection_probability): at least
	// 1 − MaxProbability of the requests reach the dependency, so that
	// the client sees it recover even after a long outage. Zero:
	// DefaultMaxProbability (0.99: about 1 % of the requests reach a
	// dependency that rejects everything). 1: no bound (the formula stays
	// below 1 by itself). Accepted: 0 < MaxProbability ≤ 1.
	MaxProbability float64
	// RejectionWeight is how much a local rejection counts as a request
	// in the formula; outcomes count 1. The book counts rejections fully
	// (1): after an outage the window stays full of them, and the
	// probability falls only as fast as the few admitted requests are
	// accepted. At a tenth, a client at 1000 requests/s still sends
	// almost nothing to a dead dependency, and the rejections of the
	// outage weigh little against the acceptances that follow it. Zero:
	// DefaultRejectionWeight (0.1). Accepted: 0 < RejectionWeight ≤ 1.
	RejectionWeight float64
	// Rand returns draws in [0, 1); a request is rejected when its draw is
	// below the rejection probability. Nil: math/rand/v2's Float64. A
	// seeded source gives repeatable rejections; it must be safe for
	// concurrent use. A draw outside [0, 1) (NaN, an infinity, a negative
	// value, 1 or more) admits the request, as the breaker's jitter falls
	// on its safe side for such a draw: a broken source then throttles
	// nothing, instead of rejecting every request, raising the
	// probability with each rejection and never sending the request that
	// would see the dependency recover.
	Rand func() float64
}

// Adaptive is adaptive client-side throttling (Google SRE book, chapter
// "Handling Overload"). It counts, over the window, the requests the
// application tried to send (recorded outcomes, plus local rejections at
// RejectionWeight each) and those the dependency accepted (outcomes other
// than an overload answer), and rejects a new request locally with
// probability
//
//	min(MaxProbability, max(0, (requests − K·accepts) / (requests + 1)))
//
// Only overload answers (RecordAt with throttled true: 429, 503) lower the
// accepts; other failures count as accepted, since the dependency took the
// request.
//
// The book counts local rejections as whole requests and bounds nothing, so
// a client keeps shedding long after its dependency recovers: the outage's
// counts leave the window, but the rejections made meanwhile fill it, and
// the probability falls only as the few admitted requests are accepted.
// After 5 minutes in which every answer was an overload answer, that
// probability stays above 0.1 for 7 to 19 minutes after the dependency is
// back, for clients of 10 to 1000 requests/s. With the defaults (a bound of
// 0.99, rejections at a tenth) it drops below 0.1 within about a minute
// (go test -run TestAdaptiveRecoveryAfterOutage -v ./throttle/).
//
// Adaptive is lock-free, safe for concurrent use and allocates nothing when
// it admits. A nil *Adaptive admits everything.
type Adaptive struct {
	k, maxP, weight float64
	rand            func() float64
	requests        window.Counter // recorded outcomes and local rejections
	rejections      window.Counter // local rejections alone
	accepts         window.Counter
}

// NewAdaptive returns an Adaptive configured by c, or an error naming the
// first field of c out of range.
func NewAdaptive(c AdaptiveConfig) (*Adaptive, error) {
	c.K = cmp.Or(c.K, DefaultK)
	c.Window = cmp.Or(c.Window, DefaultAdaptiveWindow)
	c.MaxProbability = cmp.Or(c.MaxProbability, DefaultMaxProbability)
	c.RejectionWeight = cmp.Or(c.RejectionWeight, DefaultRejectionWeight)
	switch {
	case !(c.K >= 1 && c.K <= 100):
		return nil, invalid("AdaptiveConfig.K", c.K, "1 ≤ K ≤ 100 (0 means the default 2)")
	case c.Window < time.Second || c.Window > time.Hour:
		return nil, invalid("AdaptiveConfig.Window", c.Window, "1s ≤ Window ≤ 1h (0 means the default 2m)")
	case !(c.MaxProbability > 0 && c.MaxProbability <= 1):
		return nil, invalid("AdaptiveConfig.MaxProbability", c.MaxProbability, "0 < MaxProbability ≤ 1 (0 means the default 0.99, 1 no bound)")
	case !(c.RejectionWeight > 0 && c.RejectionWeight <= 1):
		return nil, invalid("AdaptiveConfig.RejectionWeight", c.RejectionWeight, "0 < RejectionWeight ≤ 1 (0 means the default 0.1, 1 the book's counting)")
	}
	a := &Adaptive{k: c.K, maxP: c.MaxProbability, weight: c.RejectionWeight, rand: c.Rand}
	if a.rand == nil {
		a.rand = rand.Float64
	}
	a.requests.Init(c.Window, adaptiveBuckets)
	a.rejections.Init(c.Window, adaptiveBuckets)
	a.accepts.Init(c.Window, adaptiveBuckets)
	return a, nil
}

// AdmitAt admits a request at now (wait 0, nil) or rejects it locally with
// a *RejectedError (matching ErrThrottled); a rejection counts as
// RejectionWeight of a request. Adaptive never asks to wait.
func (a *Adaptive) AdmitAt(now time.Time) (time.Duration, error) {
	if a == nil {
		return 0, nil
	}
	e := a.requests.Epoch(now)
	req, acc := a.requests.SumEpoch(e), a.accepts.SumEpoch(e)
	if float64(req) <= a.k*float64(acc) {
		// Weighing the rejections can only lower the probability: a
		// dependency accepting its share is never throttled, and the
		// usual path sums two counters, not three.
		return 0, nil
	}
	p := a.probability(req, a.rejections.SumEpoch(e), acc)
	if p <= 0 {
		return 0, nil
	}
	if u := a.rand(); !(u >= 0 && u < p) { // a NaN admits too
		return 0, nil
	}
	a.requests.AddEpoch(e, 1)
	a.rejections.AddEpoch(e, 1)
	return 0, &RejectedError{Probability: p, Requests: req + 1, Accepts: acc}
}

// RecordAt counts an admitted request's outcome: throttled is true for an
// overload answer, which is the only outcome not counted as accepted.
func (a *Adaptive) RecordAt(now time.Time, throttled bool) {
	if a == nil {
		return
	}
	e := a.requests.Epoch(now)
	a.requests.AddEpoch(e, 1)
	if !throttled {
		a.accepts.AddEpoch(e, 1)
	}
}

// ProbabilityAt returns the probability with which a request would be
// rejected at now, for observability gauges.
func (a *Adaptive) ProbabilityAt(now time.Time) float64 {
	if a == nil {
		return 0
	}
	e := a.requests.Epoch(now)
	return a.probability(a.requests.SumEpoch(e), a.rejections.SumEpoch(e), a.accepts.SumEpoch(e))
}

// probability is the book's formula over the requests with each local
// rejection weighing RejectionWeight, bounded by MaxProbability. The
// weighed count is kept at 0 or more: the counters are read one after the
// other, and a clock that steps may reset a bucket of one and not yet the
// other's.
func (a *Adaptive) probability(requests, rejections, accepts uint64) float64 {
	req := max(0, float64(requests)-(1-a.weight)*float64(rejections))
	return min(a.maxP, max(0, (req-a.k*float64(accepts))/(req+1)))
}
