package hedge

import (
	"cmp"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/internal/window"
)

// Defaults that a zero Config field stands for.
const (
	// DefaultQuantile is the quantile of recent first-attempt latencies
	// after which an adaptive Hedger hedges. Dean and Barroso ("The Tail at
	// Scale", 2013) hedge after the 95th percentile, which sends about 5 %
	// more requests; 0.97 sends about 3 %, so that the hedges stay under
	// the default budget with room to spare: at 0.95 they would ask for the
	// whole budget, and its refusals would fall on slow calls as often as
	// on the others.
	DefaultQuantile = 0.97
	// DefaultMaxHedges is the most hedges of one call, beyond its first
	// attempt. Two rather than one: with a 1 % slow tail, a call that fans
	// out to 100 backends finds one whose first attempt and only hedge are
	// both slow once in 100 calls, which leaves the 99.9th percentile
	// slow; with a second hedge, once in 10 000.
	DefaultMaxHedges = 2
	// DefaultBudget is the share of calls that may be hedged: at most 5 %
	// more requests.
	DefaultBudget = 0.05
	// DefaultMinPerSecond is the budget's floor, so that a client with
	// little traffic can still hedge a slow call once in a while: 1 hedge
	// per second.
	DefaultMinPerSecond = 1.0
	// DefaultBrownout is the share of first attempts slower than the
	// hedge delay above which hedging stops: when most calls are slow, a
	// copy is most likely slow too, and hedging would only add load to a
	// dependency that is already struggling.
	DefaultBrownout = 0.5
	// DefaultWindow is how far back latencies are counted for the
	// adaptive delay; the budget counts over a fifth of it, the brownout
	// over a tenth.
	DefaultWindow = 10 * time.Second
	// MinSamples is how many first-attempt latencies an adaptive Hedger
	// needs in its window before it hedges, and how many first attempts
	// the brownout needs before it judges: below it, a 97th percentile or
	// a share is a guess.
	MinSamples = 50
	// Off, as Config.Budget or Config.Brownout, turns that limit off (for
	// comparison: naive hedging).
	Off = -1.0
)

// ErrInvalidConfig matches the errors of New for a Config field out of
// range.
var ErrInvalidConfig = errors.New("hedge: invalid configuration")

// Reasons why a hedge is not sent, matched with errors.Is.
var (
	// ErrBudget: the hedges of the last fifth of the window already reach
	// the budget.
	ErrBudget = errors.New("hedge: budget exhausted")
	// ErrBrownout: most first attempts of the last tenth of the window were
	// slower than the hedge delay, so hedging stopped until they are not.
	ErrBrownout = errors.New("hedge: brownout, most calls are slow")
)

// Config says when to hedge a call and how much. The zero value is the
// default: hedge after the 97th percentile of the first attempts' latencies
// of the last 10 s (once 50 are known), at most 2 hedges per call, hedges
// at most 5 % of the calls of the last 2 s (plus 1 per second), none while
// more than half of the first attempts of the last second are slower than
// the hedge delay.
type Config struct {
	// Delay, if set, is a fixed wait before the first hedge of a call and
	// between its hedges. Zero: adaptive, a quantile of recent latencies.
	// Accepted: ≥ 0.
	Delay time.Duration
	// Quantile is the quantile of the recent latencies of first attempts
	// after which an adaptive Hedger hedges. Ignored when Delay is set.
	// Zero: DefaultQuantile (0.97). Accepted: 0.5 ≤ Quantile < 1.
	Quantile float64
	// MaxHedges is the most hedges of one call, beyond its first attempt.
	// Zero: DefaultMaxHedges (2). Accepted: 1 to 10.
	MaxHedges int
	// Budget is the share of calls that may be hedged over the last fifth
	// of Window (with 0.05, 100 calls allow 5 hedges), plus MinPerSecond.
	// The budget looks back less far than the delay, so that what calm
	// times left unused cannot be spent in a burst when a brownout starts. Zero:
	// DefaultBudget (0.05). Off (-1): no budget. Accepted: Off, or
	// 0 < Budget ≤ 10.
	Budget float64
	// MinPerSecond is the budget's floor: this many hedges per second are
	// allowed whatever the traffic. Zero: DefaultMinPerSecond (1). Off
	// (-1): no floor. Accepted: Off, or 0 < MinPerSecond ≤ 1e6.
	MinPerSecond float64
	// Brownout is the share of first attempts slower than the hedge delay,
	// over the last tenth of Window, above which no hedge is sent. Zero: DefaultBrownout
	// (0.5). Off (-1): hedge whatever the share. Accepted: Off, or
	// 0 < Brownout ≤ 1.
	Brownout float64
	// Window is how far back latencies are counted for the adaptive delay;
	// the budget looks back a fifth of it, the brownout a tenth. Zero:
	// DefaultWindow (10 s). Accepted: 10 ms to 1 h.
	Window time.Duration
}

// Validate reports the first field of c out of range.
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return configerr.Invalid(ErrInvalidConfig, field, v, want)
	}
	switch {
	case c.Delay < 0:
		return bad("Delay", c.Delay, "≥ 0 (0 means adaptive)")
	case c.Quantile != 0 && !(c.Quantile >= 0.5 && c.Quantile < 1):
		return bad("Quantile", c.Quantile, "0.5 ≤ Quantile < 1 (0 means the default 0.97)")
	case c.MaxHedges < 0 || c.MaxHedges > 10:
		return bad("MaxHedges", c.MaxHedges, "1 to 10 (0 means the default 2)")
	case c.Budget != 0 && c.Budget != Off && !(c.Budget > 0 && c.Budget <= 10):
		return bad("Budget", c.Budget, "Off (-1) or 0 < Budget ≤ 10 (0 means the default 0.05)")
	case c.MinPerSecond != 0 && c.MinPerSecond != Off && !(c.MinPerSecond > 0 && c.MinPerSecond <= 1e6):
		return bad("MinPerSecond", c.MinPerSecond, "Off (-1) or 0 < MinPerSecond ≤ 1e6 (0 means the default 1)")
	case c.Brownout != 0 && c.Brownout != Off && !(c.Brownout > 0 && c.Brownout <= 1):
		return bad("Brownout", c.Brownout, "Off (-1) or 0 < Brownout ≤ 1 (0 means the default 0.5)")
	case c.Window != 0 && (c.Window < 10*time.Millisecond || c.Window > time.Hour):
		return bad("Window", c.Window, "10ms ≤ Window ≤ 1h (0 means the default 10s)")
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Quantile = cmp.Or(c.Quantile, DefaultQuantile)
	c.MaxHedges = cmp.Or(c.MaxHedges, DefaultMaxHedges)
	c.Budget = cmp.Or(c.Budget, DefaultBudget)
	c.MinPerSecond = cmp.Or(c.MinPerSecond, DefaultMinPerSecond)
	c.Brownout = cmp.Or(c.Brownout, DefaultBrownout)
	c.Window = cmp.Or(c.Window, DefaultWindow)
	return c
}

// The budget's and the brownout's horizons, as fractions of Config.Window,
// and how many steps their counters slide in.
const (
	budgetPart    = 5
	brownoutPart  = 10
	hedgerBuckets = 10
)

// Hedger decides, for the calls to one dependency, when a call is hedged
// and whether a hedge may be sent: the decisions of hedging, without the
// timers (a driver, such as Do or httpretry's Transport, moves the time;
// the simulator drives the same Hedger on virtual time). Every method takes
// now.
//
// For each call, the driver asks Plan when the call's first attempt is
// sent (the wait before the first hedge, and whether hedging is on), Allow
// before each hedge (the budget and the brownout), and tells Observe the
// first attempt's latency when it ends, or, if another attempt won and it
// was cancelled, the time it had run (a lower bound, which is all a
// quantile above the delay needs). retry's driver neither plans a call that sends no attempt
// (its context had ended, or a guard refused it) nor observes a first
// attempt that the call's end cut short before the delay: neither says
// anything of the dependency's latency, and the budget is a share of the
// requests sent. Nor does it ask anything about a call that may make one
// attempt only (retry.SingleAttempt, MaxAttempts 1): a hedge would be a
// second attempt, so such a call is not one of those that the budget
// counts.
//
// The delay is Config.Delay, or the Config.Quantile of the first attempts'
// latencies of the window (an Estimator), refreshed 64 times per window:
// the lower of the whole window's and its newest half's, so that the delay
// comes down within half a window when latencies fall.
// Hedges stop by themselves in two ways: the budget (hedges at most
// Config.Budget of the calls of the last fifth of the window, plus
// Config.MinPerSecond) and the brownout (more than Config.Brownout of the
// first attempts of the last tenth of the window slower than the delay: hedging cannot help when most copies will be
// slow, and would only add load to a dependency that is already
// struggling). With an adaptive delay a brownout is short-lived: the
// delay climbs with the latencies and only the slowest 3 % are hedged
// again, within the budget.
//
// A Hedger is shared by every call to one dependency; it is safe for
// concurrent use, lock-free, and allocates nothing after New. Concurrent
// callers are never granted more hedges than the budget together, over
// any horizon, also when the instants they pass straddle a step of the
// window in either order (a caller that read the clock just before others
// that were granted first); two that race for the last hedge may both be
// refused.
type Hedger struct {
	c     Config
	floor float64 // hedges per budget horizon from MinPerSecond

	lat   *Estimator     // nil with a fixed Delay
	calls horizon        // calls planned, over the budget's horizon
	sent  horizon        // hedges granted, over the budget's horizon
	seen  window.Counter // first attempts observed, over the brownout's
	slow  window.Counter // of which slower than the delay
	// newest is the latest epoch of sent that AllowAt was asked at: a
	// hedge asked at an earlier one also counts in the horizons that end
	// there.
	newest atomic.Int64

	refreshing sync.Mutex   // held by the one caller reading the adaptive delay again
	refresh    atomic.Int64 // UnixNano after which the adaptive delay is read again
	delay      atomic.Int64 // the adaptive delay, 0 until MinSamples are known
	every      int64        // refresh interval in ns
}

// New returns a Hedger configured by c, or an error naming the first field
// of c out of range (errors.Is(err, ErrInvalidConfig)).
func New(c Config) (*Hedger, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	h := &Hedger{c: c, every: int64(c.Window / 64)}
	if c.MinPerSecond > 0 {
		h.floor = c.MinPerSecond * (c.Window / budgetPart).Seconds()
	}
	if c.Delay == 0 {
		h.lat = NewEstimator(c.Window)
	}
	h.calls.init(c.Window / budgetPart)
	h.sent.init(c.Window / budgetPart)
	h.newest.Store(math.MinInt64)
	// The brownout looks at a tenth of the window (1 s by default), so
	// that hedging stops within half a second of most calls turning slow,
	// and resumes as soon after they recover.
	h.seen.Init(c.Window/brownoutPart, hedgerBuckets)
	h.slow.Init(c.Window/brownoutPart, hedgerBuckets)
	return h, nil
}

// Config returns h's configuration with its defaults filled in.
func (h *Hedger) Config() Config { return h.c }

// MaxHedges returns the most hedges of one call.
func (h *Hedger) MaxHedges() int { return h.c.MaxHedges }

// PlanAt counts a call whose first attempt is sent at now and returns the
// wait before its first hedge (the same wait separates its later hedges).
// ok is false when the call is not to be hedged: an adaptive Hedger that
// has not seen MinSamples latencies yet, or a brownout. delay is returned even then
// when it is known, so that the driver can still tell Observe whether the
// first attempt was slow.
func (h *Hedger) PlanAt(now time.Time) (delay time.Duration, ok bool) {
	h.calls.add(h.calls.epoch(now))
	delay = h.DelayAt(now)
	return delay, delay > 0 && h.brownoutAt(now) == nil
}

// DelayAt returns the hedge delay at now: Config.Delay, or the adaptive
// quantile (0 while fewer than MinSamples latencies are known).
func (h *Hedger) DelayAt(now time.Time) time.Duration {
	if h.lat == nil {
		return h.c.Delay
	}
	ns := now.UnixNano()
	// One caller at a time reads the delay again, and writes it and the
	// next refresh together; the others use the delay as it stands rather
	// than wait. (A refresh that found too few latencies must not store its
	// 0 over the delay of a later one that found enough, and an earlier
	// time must not read again once a later one has.)
	//
	// An instant more than two refresh intervals before the last reading
	// means that the clock stepped back: the delay is read again on the
	// stepped clock rather than held until it reaches the instant at which
	// the last reading was due to be renewed (an hour after a step of an
	// hour). Two intervals, so that a caller whose instant is a little older
	// than another's reading (it was descheduled) does not read again.
	if h.due(ns) && h.refreshing.TryLock() {
		defer h.refreshing.Unlock()
		if !h.due(ns) {
			return time.Duration(h.delay.Load()) // another caller read it meanwhile
		}
		d, n := h.lat.QuantileAt(now, h.c.Quantile)
		// The lower of the window's quantile and its newest half's: the
		// delay follows a fall in latency within half a window (after a
		// brownout, hedging resumes at the healthy delay), and a rise
		// within the whole window (the brownout stop and the budget cover
		// the time in between).
		if r, nr := h.lat.RecentQuantileAt(now, h.c.Quantile); nr >= MinSamples && r < d {
			d = r
		}
		if n < MinSamples {
			// Not enough latencies yet: read again at the next call rather
			// than a refresh interval later, so that a new Hedger starts
			// hedging as soon as it knows enough (a low-traffic client that
			// never does pays a histogram scan per call: BenchmarkEstimatorQuantile).
			d = 0
		} else {
			h.refresh.Store(ns + h.every)
		}
		h.delay.Store(int64(d))
		return d
	}
	return time.Duration(h.delay.Load())
}

// due reports whether the adaptive delay is to be read again at ns
// (UnixNano): its refresh instant has come, or the clock stepped back by
// more than two refresh intervals before the last reading (which was made
// one interval before its refresh instant).
func (h *Hedger) due(ns int64) bool {
	r := h.refresh.Load()
	return ns >= r || ns < r-3*h.every
}

// AllowAt reports whether a hedge may be sent at now and, if so, counts
// it: nil, or an error matching ErrBrownout or ErrBudget.
func (h *Hedger) AllowAt(now time.Time) error {
	if err := h.brownoutAt(now); err != nil {
		return err
	}
	if h.c.Budget == Off {
		h.sent.add(h.sent.epoch(now))
		return nil
	}
	// Count the hedge first and take it back if it goes beyond the budget:
	// concurrent callers each see the others' hedges, so that together
	// they are never granted more than the budget (at worst, two that
	// race are both refused where one would have fitted).
	e := h.sent.epoch(now)
	h.sent.add(e)
	// A caller whose instant is a step or more behind the others' (its
	// instant was read as they moved on) is counted in their horizons too:
	// each horizon from its own to the newest must have room for it, or
	// the room of the steps they share goes out twice. newest is read
	// after the hedge is counted: a caller that moved it on before
	// counting its own hedge either finds this one in its sums or is
	// found here. An instant a whole horizon behind the newest is a clock
	// that stepped back: the newest is then its. (One caller's instant
	// ahead of the others' holds them to the horizons up to it until their
	// clock gets there: stricter, never looser.)
	n := h.newest.Load()
	for n < e {
		if h.newest.CompareAndSwap(n, e) {
			n = e
			break
		}
		n = h.newest.Load()
	}
	if n-e >= hedgerBuckets {
		h.newest.CompareAndSwap(n, e)
		n = e
	}
	for w := e; w <= n; w++ {
		if float64(h.sent.sum(w)) > h.c.Budget*float64(h.calls.sum(w))+h.floor {
			h.sent.sub(e)
			return ErrBudget
		}
	}
	return nil
}

// brownoutAt returns ErrBrownout when more than Config.Brownout of the
// first attempts observed over the last tenth of the window (at least
// MinSamples of them) were slower than the delay.
func (h *Hedger) brownoutAt(now time.Time) error {
	if h.c.Brownout == Off {
		return nil
	}
	e := h.seen.Epoch(now)
	n := h.seen.SumEpoch(e)
	if n < MinSamples {
		return nil
	}
	if float64(h.slow.SumEpoch(e)) > h.c.Brownout*float64(n) {
		return ErrBrownout
	}
	return nil
}

// ObserveAt records, at now, the latency of a call's first attempt: its
// whole latency when it ended, or the time it had run when it was
// cancelled because another attempt won. slow says it ran past the delay
// that PlanAt returned for its call (a first attempt still running when the
// first hedge was due), which is what the brownout counts.
func (h *Hedger) ObserveAt(now time.Time, latency time.Duration, slow bool) {
	if h.lat != nil {
		h.lat.AddAt(now, latency)
	}
	e := h.seen.Epoch(now)
	h.seen.AddEpoch(e, 1)
	if slow {
		h.slow.AddEpoch(e, 1)
	}
}

// Stats are a Hedger's counts at an instant, each over its horizon.
type Stats struct {
	Calls  int           // calls planned (over the budget's fifth of the window)
	Hedges int           // hedges allowed (idem)
	Seen   int           // first attempts observed (over the brownout's tenth)
	Slow   int           // of which slower than the delay
	Delay  time.Duration // the hedge delay (0: not known yet)
}

// StatsAt returns h's counts at now.
func (h *Hedger) StatsAt(now time.Time) Stats {
	return Stats{Calls: int(h.calls.sum(h.calls.epoch(now))), Hedges: int(h.sent.sum(h.sent.epoch(now))), Seen: int(h.seen.Sum(now)),
		Slow: int(h.slow.Sum(now)), Delay: h.DelayAt(now)}
}

// Share returns the hedges per call of s (NaN without calls).
func (s Stats) Share() float64 {
	if s.Calls == 0 {
		return math.NaN()
	}
	return float64(s.Hedges) / float64(s.Calls)
}
