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
	mean := float64(base)
	for i := 0; i < n; i++ {
		prev := mean
		lo, hi := float64(base), 3*mean
		if hi < lo {
			hi = lo
		}
		if c := float64(limit); hi <= c {
			mean = (lo + hi) / 2
		} else {
			p := (c - lo) / (hi - lo) // share of draws below the cap
			mean = p*(lo+c)/2 + (1-p)*c
			if p <= 0 {
				mean = c
			}
		}
		if mean >= float64(limit) {
			mean = float64(limit)
			break // every later retry stays at the cap on average too
		}
		if mean-prev < 0.5 {
			break // converged below the cap: later retries have the same mean
		}
	}
	return Bounds{Retry: n, Min: base, Max: s.ceiling(n), Mean: time.Duration(mean)}
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
