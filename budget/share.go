package budget

import (
	"cmp"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// Defaults of ShareConfig (Finagle's RetryBudget, Linkerd's retry budget;
// Envoy's retry budget uses the same 20 %).
const (
	DefaultRatio        = 0.2
	DefaultWindow       = 10 * time.Second
	DefaultMinPerSecond = 10.0
	// DefaultFleetMinPerSecond is the floor of a budget that a whole fleet
	// of processes shares (redis.Budget in module yaoki/redis): one floor
	// between them all, so against a dead dependency the fleet sends
	// 1 + DefaultFleetMinPerSecond / (its calls per second) attempts per
	// call (1.01 for a fleet of 100 calls/s, 1.10 for one of 10 calls/s),
	// while Ratio × the fleet's successes covers its blips. The floor of
	// one process (DefaultMinPerSecond) would be 10 % of a fleet of 100
	// calls/s (1.10, the bound of the simulator's goals; go test ./sim
	// -run TestYaokiGoals -v).
	DefaultFleetMinPerSecond = 1.0
	// NoFloor as ShareConfig.MinPerSecond removes the floor: retries are
	// then granted only as a share of successful requests.
	NoFloor = -1.0
)

// shareBuckets is how many steps a Share's window slides in: a tenth of the
// window (1 s of the default 10 s).
const shareBuckets = 10

// ShareConfig configures a Share. The zero value is the default budget:
// retries ≤ 20 % of the requests that succeeded over the last 10 s, plus 10
// retries per second.
type ShareConfig struct {
	// Ratio is the share of successful requests that may be retried over
	// Window: with 0.2, 100 requests that succeeded allow 20 retries. Zero:
	// DefaultRatio (0.2). Accepted: 0 < Ratio ≤ 100.
	Ratio float64
	// Window is how far back successes and retries are counted. It slides
	// in steps of a tenth of itself. Zero: DefaultWindow (10 s). Accepted:
	// 10 ms to 1 h.
	Window time.Duration
	// MinPerSecond is the floor: this many retries per second are allowed
	// whatever the traffic and its outcomes (MinPerSecond × Window per
	// window), so that a client with little traffic can still retry a
	// blip. It is also all a Share grants while nothing succeeds. Zero:
	// DefaultMinPerSecond (10). NoFloor (-1): no floor. Accepted: NoFloor,
	// or 0 < MinPerSecond ≤ 1e6.
	MinPerSecond float64
}

// Share is a share-of-traffic retry budget that earns its retries from
// successes: a retry is granted when the retries granted over the window,
// this one included, stay within Ratio × successes + MinPerSecond × Window,
// where successes are the requests that succeeded over the window (at
// their first attempt or at a retry; a logical request succeeds at most
// once, so this is also at most Ratio × requests plus the floor).
//
// What it does: during a blip (a few percent of first attempts failing,
// their retries succeeding) every retry is granted, since the successes
// earn more retries (20 % of them) than the failures ask for. During a
// partial outage retries are at most Ratio × the successes plus the floor.
// During a full outage nothing succeeds, so only the floor is granted:
// attempts per first attempt are at most 1 + floor / first attempts over
// the window (1.02 with the defaults for 5000 first attempts in 5 s),
// against MaxAttempts (3) without a budget. The retries earned by the last
// successes before an outage stay available until the window slides past
// them. The AWS SDKs' and gRPC's budgets behave alike: they refill on
// success.
//
// Share is lock-free and safe for concurrent use; recording a success is
// one atomic add and allocates nothing. A retry is counted before it is
// checked against the allowance and taken back if it does not fit, so that
// concurrent callers never get more than the allowance between them (one
// may be refused while another's refused retry is being taken back). A nil
// *Share allows every retry.
type Share struct {
	ratio     float64
	floor     float64 // retries per window from MinPerSecond
	successes window.Counter
	retries   window.Counter
}

// NewShare returns a Share configured by c, or an error naming the first
// field of c out of range.
func NewShare(c ShareConfig) (*Share, error) {
	c.Ratio = cmp.Or(c.Ratio, DefaultRatio)
	c.Window = cmp.Or(c.Window, DefaultWindow)
	c.MinPerSecond = cmp.Or(c.MinPerSecond, DefaultMinPerSecond)
	switch {
	case !(c.Ratio > 0 && c.Ratio <= 100):
		return nil, invalid("ShareConfig.Ratio", c.Ratio, "0 < Ratio ≤ 100 (0 means the default 0.2)")
	case c.Window < 10*time.Millisecond || c.Window > time.Hour:
		return nil, invalid("ShareConfig.Window", c.Window, "10ms ≤ Window ≤ 1h (0 means the default 10s)")
	case c.MinPerSecond != NoFloor && !(c.MinPerSecond > 0 && c.MinPerSecond <= 1e6):
		return nil, invalid("ShareConfig.MinPerSecond", c.MinPerSecond, "NoFloor (-1) or 0 < MinPerSecond ≤ 1e6 (0 means the default 10)")
	}
	s := &Share{ratio: c.Ratio}
	if c.MinPerSecond > 0 {
		s.floor = c.MinPerSecond * c.Window.Seconds()
	}
	s.successes.Init(c.Window, shareBuckets)
	s.retries.Init(c.Window, shareBuckets)
	return s, nil
}

// AllowRetryAt reports whether one more retry may be sent at now and, if
// so, counts it. timeout is ignored: every retry costs the same.
func (s *Share) AllowRetryAt(now time.Time, timeout bool) bool {
	if s == nil {
		return true
	}
	e := s.successes.Epoch(now)
	a := s.allowance(e)
	if float64(s.retries.SumEpoch(e)+1) > a {
		return false // no room: refused without touching the count
	}
	// Count, then check again: a caller that only checked before counting
	// could grant beyond the allowance beside another doing the same.
	s.retries.AddEpoch(e, 1)
	if float64(s.retries.SumEpoch(e)) > a {
		s.retries.SubEpoch(e, 1)
		return false
	}
	return true
}

// CancelRetryAt takes back a retry that AllowRetryAt granted at granted
// but the caller did not send (its breaker refused it, its caller left
// during the wait): it no longer counts against the allowance, unless the
// window has slid past it. The flags are not used. It implements
// retry.BudgetCanceller. Call it once per retry not sent: grants carry no
// identity, so a second call takes back another retry granted in the same
// step of the window, and one more retry than the allowance may follow.
func (s *Share) CancelRetryAt(granted time.Time, throttled, timeout bool) {
	if s == nil {
		return
	}
	s.retries.SubEpoch(s.successes.Epoch(granted), 1)
}

// RecordAt counts a successful request when success is true, whether the
// attempt was a first one or a retry (a logical request succeeds at most
// once). A failed attempt adds nothing; retries were counted when they were
// granted.
func (s *Share) RecordAt(now time.Time, first, success bool) {
	if s == nil || !success {
		return
	}
	s.successes.Add(now, 1)
}

// LevelAt returns how many retries would still be granted at now: the
// allowance minus the retries already granted over the window, at least 0.
// A nil *Share returns +Inf.
func (s *Share) LevelAt(now time.Time) float64 {
	if s == nil {
		return math.Inf(1)
	}
	e := s.successes.Epoch(now)
	return max(0, s.allowance(e)-float64(s.retries.SumEpoch(e)))
}

// Level is shorthand for LevelAt(time.Now()).
func (s *Share) Level() float64 { return s.LevelAt(time.Now()) }

func (s *Share) allowance(e int64) float64 {
	return s.ratio*float64(s.successes.SumEpoch(e)) + s.floor
}
