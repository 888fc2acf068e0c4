package budget

import (
	"math"
	"sync/atomic"
	"time"
)

// Defaults of GRPCConfig. gRPC's service config has no defaults for retry
// throttling; these are the values of the example in gRPC's retry design
// (proposal A6).
const (
	DefaultMaxTokens  = 10
	DefaultTokenRatio = 0.1
)

// GRPCConfig configures a GRPC budget. The zero value is MaxTokens 10,
// TokenRatio 0.1.
type GRPCConfig struct {
	// MaxTokens is the bucket's size and its initial content. Zero:
	// DefaultMaxTokens (10). Accepted: 0 < MaxTokens ≤ 1000 (gRPC's range).
	MaxTokens float64
	// TokenRatio is what a successful attempt gives back (a failed one
	// takes 1), kept to three decimals as gRPC does. Zero:
	// DefaultTokenRatio (0.1). Accepted: 0.001 ≤ TokenRatio ≤ 1.
	TokenRatio float64
}

// GRPC is gRPC's retry throttling as a budget: every failed attempt takes
// one token, every successful attempt gives back TokenRatio, within
// [0, MaxTokens]; retries are granted while the bucket holds more than half
// of MaxTokens and cost nothing themselves. With the defaults, a dependency
// that keeps failing gets retries until 5 attempts have failed in a row, and
// then one retry for every 10 successes.
//
// GRPC is lock-free, safe for concurrent use and allocates nothing. A nil
// *GRPC allows every retry.
type GRPC struct {
	max, ratio int64 // in thousandths of a token
	tokens     atomic.Int64
}

// NewGRPC returns a full GRPC budget configured by c, or an error naming the
// first field of c out of range.
func NewGRPC(c GRPCConfig) (*GRPC, error) {
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.TokenRatio == 0 {
		c.TokenRatio = DefaultTokenRatio
	}
	switch {
	case !(c.MaxTokens > 0 && c.MaxTokens <= 1000):
		return nil, invalid("GRPCConfig.MaxTokens", c.MaxTokens, "0 < MaxTokens ≤ 1000 (0 means the default 10)")
	case !(c.TokenRatio >= 0.001 && c.TokenRatio <= 1):
		return nil, invalid("GRPCConfig.TokenRatio", c.TokenRatio, "0.001 ≤ TokenRatio ≤ 1 (0 means the default 0.1)")
	}
	g := &GRPC{max: int64(math.Round(c.MaxTokens * 1000)), ratio: int64(math.Round(c.TokenRatio * 1000))}
	g.tokens.Store(g.max)
	return g, nil
}

// AllowRetryAt reports whether the bucket holds more than half of
// MaxTokens. It takes nothing: the failure that led to the retry already
// took its token.
func (g *GRPC) AllowRetryAt(now time.Time, timeout bool) bool {
	if g == nil {
		return true
	}
	return g.tokens.Load()*2 > g.max
}

// RecordAt takes one token for a failed attempt and gives back TokenRatio
// for a successful one, first attempt or retry alike.
func (g *GRPC) RecordAt(now time.Time, first, success bool) {
	if g == nil {
		return
	}
	for {
		t := g.tokens.Load()
		var n int64
		if success {
			if t >= g.max {
				return
			}
			n = min(g.max, t+g.ratio)
		} else {
			n = max(0, t-1000)
		}
		if n == t || g.tokens.CompareAndSwap(t, n) {
			return
		}
	}
}

// Level returns the tokens in the bucket. A nil *GRPC returns +Inf.
func (g *GRPC) Level() float64 {
	if g == nil {
		return math.Inf(1)
	}
	return float64(g.tokens.Load()) / 1000
}
