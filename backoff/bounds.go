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
	base, limit := s.Base, s.Cap
	if base >= limit {
		return Bounds{Retry: n, Min: limit, Max: limit, Mean: limit}
	}
	return Bounds{Retry: n, Min: base, Max: s.ceiling(n), Mean: s.decorrelatedMean(n)}
}

// decorrelatedMean returns the expected delay of retry n. While even the
// largest delay stays below the cap, it follows the exact recursion
// E[d1] = 2·base, E[dn] = (base + 3·E[dn−1])/2. Once the cap can bind, it is
// estimated by running a fixed set of chains on deterministic hashed draws
// (no random source, the same answer every time; about 1 % error). After
// 100 retries every chain has long reached the cap's region, where the
// distribution no longer moves, so later retries reuse that step's mean.
func (s Schedule) decorrelatedMean(n int) time.Duration {
	base := float64(s.Base)
	if s.ceiling(n) < s.Cap {
		mean := base
		for k := 1; k <= n; k++ {
			mean = (base + 3*mean) / 2
		}
		return time.Duration(mean)
	}
	const chains = 4096
	if n > 100 {
		n = 100
	}
	var prev [chains]time.Duration
	var sum float64
	for k := 1; k <= n; k++ {
		sum = 0
		for i := range prev {
			u := float64(splitmix(uint64(k)<<32|uint64(i))>>11) / (1 << 53)
			prev[i] = s.decorrelated(prev[i], u)
			sum += float64(prev[i])
		}
	}
	return time.Duration(sum / chains)
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
	for i := range out {
		out[i] = s.Bounds(i + 1)
	}
	return out
}
