package retry

import (
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
)

// FuzzQuick checks that quick, the fast check on Do's success path, never
// admits a policy that Validate refuses or that is not plain: when it says
// yes, Do skips both.
func FuzzQuick(f *testing.F) {
	f.Add(0, int64(0), int64(0), int64(0), int64(0), uint8(0), uint8(0), int64(0), int64(0), 0.0, false)
	f.Add(-1, int64(0), int64(0), int64(0), int64(0), uint8(1), uint8(3), int64(time.Second), int64(time.Minute), 1.5, false)
	f.Add(-2, int64(-1), int64(1), int64(-5), int64(7), uint8(3), uint8(4), int64(-1), int64(-1), math.NaN(), true)
	f.Add(math.MaxInt, int64(0), int64(0), int64(0), int64(0), uint8(2), uint8(0), int64(0), int64(0), math.Inf(1), false)
	f.Add(5, int64(0), int64(0), int64(math.MinInt64), int64(0), uint8(255), uint8(255), int64(0), int64(math.MaxInt64), 1e308, false)
	f.Fuzz(func(t *testing.T, attempts int, elapsed, timeout, throttle, maxHint int64, kind, jitter uint8, base, cap int64, mult float64, env bool) {
		p := Policy{
			MaxAttempts:    attempts,
			MaxElapsed:     time.Duration(elapsed),
			AttemptTimeout: time.Duration(timeout),
			ThrottleBase:   time.Duration(throttle),
			MaxRetryAfter:  time.Duration(maxHint),
			Backoff: backoff.Schedule{Kind: backoff.Kind(kind), Jitter: backoff.Jitter(jitter),
				Base: time.Duration(base), Cap: time.Duration(cap), Multiplier: mult},
		}
		if env {
			p.Env = &Env{}
		}
		if !p.quick() {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("quick admits %+v, which Validate refuses: %v", p, err)
		}
		if !p.plain() {
			t.Fatalf("quick admits %+v, which is not plain", p)
		}
	})
}
