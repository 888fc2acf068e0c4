package retry_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// FuzzLoopWait checks the wait the Loop asks for after a failed attempt,
// for any server hint, deadline, MaxRetryAfter, schedule, attempt number
// and random draw (a draw out of [0, 1) included): a wait is never
// negative and always ends before the deadline; a hint the loop honours
// is waited for in full, plus at most HintJitter of it; a hint above
// MaxRetryAfter gives up (ReasonHintTooLong), one that cannot end before
// the deadline gives up (ReasonDeadline, the server's); without a hint the
// wait is the schedule's, within its cap.
func FuzzLoopWait(f *testing.F) {
	f.Add(int64(10e9), int64(0), int64(0), 3, 0.5, int64(50e6), int64(20e9), uint8(0))
	f.Add(int64(-1), int64(5e9), int64(0), 1, math.NaN(), int64(0), int64(0), uint8(3))
	f.Add(int64(math.MaxInt64), int64(0), int64(math.MaxInt64), 2, 1.0, int64(1), int64(math.MaxInt64), uint8(2))
	f.Add(int64(59e9), int64(61e9), int64(0), 7, -3.0, int64(1e9), int64(1e9), uint8(1))
	f.Fuzz(func(t *testing.T, hint, elapsed, maxRA int64, attempts int, u float64, base, limit int64, jitter uint8) {
		if elapsed < 0 || maxRA < 0 || base < 0 || limit < 0 {
			return
		}
		attempts = 1 + int(uint(attempts)%50)
		p := retry.Policy{MaxAttempts: attempts + 1, MaxElapsed: time.Duration(elapsed), MaxRetryAfter: time.Duration(maxRA),
			Backoff: backoff.Schedule{Base: time.Duration(base), Cap: time.Duration(limit), Jitter: backoff.Jitter(jitter % 4)},
			Env:     &retry.Env{Rand: func() float64 { return u }}}
		if p.Validate() != nil {
			return
		}
		err := errFlaky
		if hint >= 0 {
			err = retry.After(errFlaky, time.Duration(hint))
		}
		ctx := context.Background()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var l retry.Loop
		l.Start(ctx, &p, now)
		var d retry.Decision
		for i := 1; i <= attempts; i++ {
			var tk retry.Ticket
			if d = l.Before(ctx, now, &tk); d.Verdict != retry.Send {
				return // MaxElapsed of 0 ns, say: nothing to check
			}
			d = l.After(ctx, now, &tk, err)
			if d.Verdict != retry.Sleep || i == attempts {
				break
			}
		}
		h, maxWait := time.Duration(hint), p.MaxRetryAfter
		if maxWait == 0 {
			maxWait = retry.DefaultMaxRetryAfter
		}
		left := time.Duration(math.MaxInt64)
		if elapsed > 0 {
			left = time.Duration(elapsed)
		}
		switch d.Verdict {
		case retry.Sleep:
			if d.Wait < 0 || elapsed > 0 && d.Wait >= left {
				t.Fatalf("wait %v with %v left", d.Wait, left)
			}
			if hint > 0 {
				if d.Source != event.ServerHint || d.Wait < h || float64(d.Wait-h) > float64(h)*retry.HintJitter+1 {
					t.Fatalf("hint %v: wait %v from %v, want the hint + up to %v", h, d.Wait, d.Source, retry.HintJitter)
				}
			} else if d.Wait > p.Backoff.WithDefaults().Cap && d.Wait > p.ThrottleBase {
				t.Fatalf("no hint: wait %v above the cap %v", d.Wait, p.Backoff.WithDefaults().Cap)
			}
		case retry.GiveUp:
			e := l.Err()
			switch e.Reason {
			case retry.ReasonHintTooLong:
				if !(hint > 0 && h > maxWait) {
					t.Fatalf("hint %v refused as too long (max %v)", h, maxWait)
				}
			case retry.ReasonDeadline:
				if hint > 0 && (e.Source != event.ServerHint || h < left) {
					t.Fatalf("hint %v with %v left: gave up %+v", h, left, e)
				}
			case retry.ReasonExhausted:
			default:
				t.Fatalf("gave up for %v: %v", e.Reason, e)
			}
		default:
			t.Fatalf("verdict %v", d.Verdict)
		}
	})
}
