package budget

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// Defaults of GRPCConfig. gRPC's service config has no defaults for retry
// throttling; these are the values of the example in gRPC's retry design
// (proposal A6).
const (
	DefaultMaxTokens  = 10
	DefaultTokenRatio = 0.1
)

// GRPCConfig configures a GRPC budget. The zero value is gRPC's example:
// MaxTokens 10, TokenRatio 0.1, full at the start. Recommended returns
// yaoki's default.
type GRPCConfig struct {
	// MaxTokens is the bucket's size, kept to three decimals as the token
	// count is. Zero: DefaultMaxTokens (10). Accepted: 0.001 ≤ MaxTokens ≤
	// 1000 (gRPC's range, 0 < MaxTokens ≤ 1000, to three decimals: a
	// smaller value would be a bucket of no tokens that never grants a
	// retry).
	MaxTokens float64
	// TokenRatio is what a successful attempt gives back (a failed one
	// takes 1), kept to three decimals as gRPC does. Zero:
	// DefaultTokenRatio (0.1). Accepted: 0.001 ≤ TokenRatio ≤ 1.
	TokenRatio float64
	// Start is what the bucket holds when it is built, kept to three
	// decimals. Zero: MaxTokens (full, as in gRPC). A bucket that starts
	// just above half of MaxTokens grants a new client only the retries
	// of its first failures, and earns the rest from successes: a client
	// that only ever meets a dead dependency sends few retries in all.
	// Accepted: 0 < Start ≤ MaxTokens.
	Start float64
}

// Recommended returns the configuration of yaoki's default budget, the one
// httpretry.Transport keeps per destination host and sim.Yaoki per client:
// MaxTokens 10, TokenRatio 0.2, Start 8. A failed attempt takes a token and
// retries stop at 5 (half), so a new client's first failed call gets its
// two retries (8 → 7, retry, → 6, retry, → 5) before any success; each
// success gives back 0.2, so failures up to about 16 % of attempts are all
// retried, and after a long healthy spell the full bucket lets 5 failures
// in a row pass before retries stop. Nothing in it refuses a first attempt.
//
// On the simulator's outage scenario, clients of 10 calls/s down to
// 0.1 call/s over runs of 10 s and 100 s (go test ./sim -run
// TestYaokiGoals -v; docs/simulator.md): ≥ 99.98 % of calls succeed at
// failure rates ≤ 5 %; against a dead dependency each client sends two
// retries in all: 1.02 attempts per call for clients of 10 calls/s over
// 10 s, 1.20 for clients of 1 call/s over 10 s or 0.1 call/s over 100 s.
// For clients that make fewer calls than that, one process cannot tell a
// blip from an outage: share one budget across the fleet (redis.Budget in
// module yaoki/redis, with its fleet's floor of DefaultFleetMinPerSecond:
// 1.01 for a fleet of 100 calls/s).
func Recommended() GRPCConfig {
	return GRPCConfig{MaxTokens: 10, TokenRatio: 0.2, Start: 8}
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
	tokens     tokens
}

// NewGRPC returns a GRPC budget configured by c, or an error naming the
// first field of c out of range.
func NewGRPC(c GRPCConfig) (*GRPC, error) {
	c.MaxTokens = cmp.Or(c.MaxTokens, DefaultMaxTokens)
	c.TokenRatio = cmp.Or(c.TokenRatio, DefaultTokenRatio)
	switch {
	case !(c.MaxTokens >= 0.001 && c.MaxTokens <= 1000):
		return nil, invalid("GRPCConfig.MaxTokens", c.MaxTokens, "0.001 ≤ MaxTokens ≤ 1000 (0 means the default 10)")
	case !(c.TokenRatio >= 0.001 && c.TokenRatio <= 1):
		return nil, invalid("GRPCConfig.TokenRatio", c.TokenRatio, "0.001 ≤ TokenRatio ≤ 1 (0 means the default 0.1)")
	case !(c.Start >= 0 && c.Start <= c.MaxTokens):
		return nil, invalid("GRPCConfig.Start", c.Start, fmt.Sprintf("0 < Start ≤ MaxTokens (%v) (0 means full)", c.MaxTokens))
	}
	g := &GRPC{max: int64(math.Round(c.MaxTokens * 1000)), ratio: int64(math.Round(c.TokenRatio * 1000))}
	g.tokens.Store(g.max)
	if c.Start > 0 {
		g.tokens.Store(int64(math.Round(c.Start * 1000)))
	}
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
// for a successful one, first attempt or retry alike. As in gRPC, only the
// failures that would be retried take a token: the retry loop does not
// report a permanent failure (a 400 from the application's own check), so
// malformed requests do not spend the retries of transient failures (go
// test -run TestGRPCPermanentErrorsTakeNoTokens ./budget).
func (g *GRPC) RecordAt(now time.Time, first, success bool) {
	if g == nil {
		return
	}
	if success {
		g.tokens.refill(g.ratio, g.max)
		return
	}
	for {
		t := g.tokens.Load()
		if n := max(0, t-1000); n == t || g.tokens.CompareAndSwap(t, n) {
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
