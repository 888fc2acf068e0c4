package backoff

import "time"

// Bounds is what one retry's delay can be: its least and greatest value and
// its mean over the random draw.
type Bounds struct {
	Retry int           // the retry number, from 1
	Min   time.Duration // the smallest delay (draw u = 0)
	Max   time.Duration // the largest delay (draw u → 1)
	Mean  time.Duration // the expected delay
}

// Bounds returns the range of the delay before retry n. For Decorrelated
// jitter, whose delay depends on the previous one, Max is the largest delay
// reachable after n draws and Mean follows the expected previous delay
// (exact while the cap does not bind, a close estimate once it does).
// Fields that Validate refuses are read as Delay reads them (a negative
// Base or Cap as 0), so the bounds are never negative.
func (s Schedule) Bounds(n int) Bounds {
	if n < 1 {
		n = 1
	}
	s = s.WithDefaults()
	if s.Jitter == Decorrelated {
		return s.decorrelatedBounds(n)
	}
	c := s.ceiling(n)
	b := Bounds{Retry: n, Max: c}
	switch s.Jitter {
	case None:
		b.Min, b.Mean = c, c
	case Equal:
		b.Min = c - c/2
		b.Mean = b.Min + (c/2)/2
	default:
		b.Mean = c / 2
	}
	return b
}

func (s Schedule) decorrelatedBounds(n int) Bounds {
	if base, _, limit := s.params(); base >= limit {
		return Bounds{Retry: n, Min: limit, Max: limit, Mean: limit}
	}
	var m meanWalk
	m.init(s)
	return m.bounds(n)
}

// meanWalk estimates the means of a decorrelated schedule's delays, retry
// after retry. While even the largest delay stays below the cap, the mean
// follows the exact recursion E[d1] = 2·base, E[dn] = (base + 3·E[dn−1])/2.
// Once the cap can bind, it is estimated by running a fixed set of chains
// on deterministic hashed draws (no random source, the same answer every
// time; about 1 % error). After 100 retries every chain has long reached
// the cap's region, where the distribution no longer moves, so later
// retries reuse that step's mean. The chains are advanced as the retries
// are asked for in order, so that Plan walks them once, not once per
// retry.
type meanWalk struct {
	s      Schedule // with its defaults
	base   time.Duration
	limit  time.Duration // s's Base and Cap as Delay reads them (never negative)
	k      int           // the retry the chains stand at
	mean   float64       // the chains' mean at retry k
	exact  float64       // the exact recursion's mean at retry exactK
	exactK int
	prev   [chains]time.Duration
}

const (
	chains     = 4096
	chainSteps = 100 // the chains' distribution no longer moves after these
)

func (m *meanWalk) init(s Schedule) {
	m.s = s
	m.base, _, m.limit = s.params()
	m.exact = float64(m.base)
}

// bounds returns Bounds(n); n must not be below the last n asked.
func (m *meanWalk) bounds(n int) Bounds {
	return Bounds{Retry: n, Min: m.base, Max: m.s.ceiling(n), Mean: m.meanAt(n)}
}

func (m *meanWalk) meanAt(n int) time.Duration {
	base := float64(m.base)
	if m.s.ceiling(n) < m.limit {
		for ; m.exactK < n; m.exactK++ {
			m.exact = (base + 3*m.exact) / 2
		}
		return time.Duration(m.exact)
	}
	n = min(n, chainSteps)
	for ; m.k < n; m.k++ {
		var sum float64
		for i := range m.prev {
			u := float64(splitmix(uint64(m.k+1)<<32|uint64(i))>>11) / (1 << 53)
			m.prev[i] = m.s.decorrelated(m.prev[i], u)
			sum += float64(m.prev[i])
		}
		m.mean = sum / chains
	}
	return time.Duration(m.mean)
}

// splitmix is the SplitMix64 finaliser: a fixed, well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Plan returns the bounds of retries 1 to n, in order; it is what
// `yaoki plan` prints. It returns nil for n < 1.
func (s Schedule) Plan(n int) []Bounds {
	if n < 1 {
		return nil
	}
	out := make([]Bounds, n)
	base, _, limit := s.params()
	if s = s.WithDefaults(); s.Jitter == Decorrelated && base < limit {
		m := new(meanWalk) // its chains are 32 KiB
		m.init(s)
		for i := range out {
			out[i] = m.bounds(i + 1)
		}
		return out
	}
	for i := range out {
		out[i] = s.Bounds(i + 1)
	}
	return out
}
