// Package budget limits retries to what a dependency can bear, so that
// retries help during a blip without multiplying the load during an outage.
//
// Three budgets, each a drop-in retry.Budget (AllowRetryAt before every
// retry, RecordAt after every attempt; package retry defines the interface,
// this package does not import it):
//
//   - Share: retries may be at most a
//     share of the requests that succeeded over a sliding window, plus a
//     small floor per second so that a client with little traffic can still
//     retry (20 % over 10 s, floor 10 retries/s: the figures of Finagle,
//     Linkerd, Envoy). Since a request succeeds at most once, retries stay
//     within 20 % of requests (plus the floor); since only successes earn
//     retries, a dependency that answers nothing gets the floor alone.
//   - Bucket, the AWS SDKs' retry quota in their 2026 behaviour: a bucket
//     of 500 tokens, a retry costs 14 (5 after a throttling answer), a
//     successful retry gives its cost back, a success at the first attempt
//     adds 1.
//   - GRPC, gRPC's retry throttling: a failed attempt takes a token, a
//     success gives back TokenRatio, and retries stop while the bucket is at
//     or below half of MaxTokens. With Recommended (10 tokens, 0.2 back per
//     success, starting at 8) it is yaoki's default, the budget
//     httpretry.Transport keeps per destination host: a client that only
//     ever meets a dead dependency sends two retries in all.
//
// A budget is meant to be shared by every call to one dependency (one per
// destination host is what httpretry keeps). Every method takes now, so that
// the simulator can drive a budget on virtual time; Allow-style shorthands
// are not provided because the retry loop is the only caller.
//
// A nil *Share, *Bucket or *GRPC allows every retry and records nothing, as
// the retry loop does for a nil retry.Env.Budget: a struct field of one of these
// types left nil disables the budget.
//
// Each budget reports its level for observability gauges through Level: the
// retries it would still grant (Share), or its tokens (Bucket, GRPC).
package budget

import (
	"errors"
	"sync/atomic"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// ErrInvalidConfig matches the errors the constructors return for a
// configuration field out of range; the message names the field, its value
// and what is accepted.
var ErrInvalidConfig = errors.New("budget: invalid configuration")

func invalid(field string, value any, want string) error {
	return configerr.Invalid(ErrInvalidConfig, field, value, want)
}

// tokens is the lock-free token count of Bucket and GRPC.
type tokens struct{ atomic.Int64 }

// refill adds n tokens, up to size. A full bucket is left as it is after a
// single load, so that the success path of a healthy dependency writes
// nothing.
func (t *tokens) refill(n, size int64) {
	for {
		v := t.Load()
		if v >= size {
			return
		}
		if t.CompareAndSwap(v, min(size, v+n)) {
			return
		}
	}
}
