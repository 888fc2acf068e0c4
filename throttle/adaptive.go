package throttle

import (
	"cmp"
	"math/rand/v2"
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// Defaults of AdaptiveConfig (Google SRE book, "Handling Overload").
const (
	DefaultK              = 2.0
	DefaultAdaptiveWindow = 2 * time.Minute
)

const adaptiveBuckets = 12 // the window slides in steps of 10 s

// AdaptiveConfig configures Adaptive. The zero value is the SRE book's: K =
// 2 over the last two minutes.
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
// application tried to send (recorded outcomes plus local rejections) and
// those the dependency accepted (outcomes other than an overload answer),
// and rejects a new request locally with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// Only overload answers (RecordAt with throttled true: 429, 503) lower the
// accepts; other failures count as accepted, since the dependency took the
// request.
//
// Local rejections count as requests, as the book counts them, so a client
// keeps shedding for a while after its dependency recovers: the outage's
// counts leave the window, but the rejections made meanwhile fill it, and
// the probability falls only as the few admitted requests are accepted.
// After 5 minutes in which every answer was an overload answer, the
// probability drops below 0.1 between 7 and 12 minutes after the
// dependency is back, with the defaults, for clients of 10 and 100
// requests/s (go test -run TestAdaptiveRecoveryAfterOutage -v
// ./throttle; 4 seeds each).
//
// Adaptive is lock-free, safe for concurrent use and allocates nothing when
// it admits. A nil *Adaptive admits everything.
type Adaptive struct {
	k        float64
	rand     func() float64
	requests window.Counter
	accepts  window.Counter
}

// NewAdaptive returns an Adaptive configured by c, or an error naming the
// first field of c out of range.
func NewAdaptive(c AdaptiveConfig) (*Adaptive, error) {
	c.K = cmp.Or(c.K, DefaultK)
	c.Window = cmp.Or(c.Window, DefaultAdaptiveWindow)
	switch {
	case !(c.K >= 1 && c.K <= 100):
		return nil, invalid("AdaptiveConfig.K", c.K, "1 ≤ K ≤ 100 (0 means the default 2)")
	case c.Window < time.Second || c.Window > time.Hour:
		return nil, invalid("AdaptiveConfig.Window", c.Window, "1s ≤ Window ≤ 1h (0 means the default 2m)")
	}
	a := &Adaptive{k: c.K, rand: c.Rand}
	if a.rand == nil {
		a.rand = rand.Float64
	}
	a.requests.Init(c.Window, adaptiveBuckets)
	a.accepts.Init(c.Window, adaptiveBuckets)
	return a, nil
}

// AdmitAt admits a request at now (wait 0, nil) or rejects it locally with
// a *RejectedError (matching ErrThrottled); a rejection counts as a request.
// Adaptive never asks to wait.
func (a *Adaptive) AdmitAt(now time.Time) (time.Duration, error) {
	if a == nil {
		return 0, nil
	}
	e := a.requests.Epoch(now)
	req, acc := a.requests.SumEpoch(e), a.accepts.SumEpoch(e)
	p := probability(req, acc, a.k)
	if p <= 0 {
		return 0, nil
	}
	if u := a.rand(); !(u >= 0 && u < p) { // a NaN admits too
		return 0, nil
	}
	a.requests.AddEpoch(e, 1)
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
	return probability(a.requests.SumEpoch(e), a.accepts.SumEpoch(e), a.k)
}

func probability(requests, accepts uint64, k float64) float64 {
	return max(0, (float64(requests)-k*float64(accepts))/(float64(requests)+1))
}
