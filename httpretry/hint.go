package httpretry

import (
	"net/http"
	"time"
)

// Hint returns how long resp asks its client to wait before it comes
// back, read as the Transport reads it before a retry: the longest valid
// Retry-After, a date read against the answer's Date and Age (the
// server's clock) when it has a valid Date; without one, the rate-limit
// fields (see RateLimitReset), on 429 and 503 answers and on others that
// say the quota is spent. ok is false when resp asks for no wait. It is
// meant for code that relays an answer (a gateway telling its own
// clients, yaoki proxy deciding whether a retry of its client could
// help); the Transport itself honours the hint within
// retry.Policy.MaxRetryAfter.
func Hint(resp *http.Response, now time.Time) (d time.Duration, ok bool) {
	d = hint(resp, now)
	return max(d, 0), d >= 0
}
