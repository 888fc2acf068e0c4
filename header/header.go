// Package header names the HTTP header fields that the toolkit reads and
// writes, so that every package (httpretry, idempotency, layer,
// deadletter/httpletter, the yaoki command) spells each one in one place.
// Names are in canonical form (http.CanonicalHeaderKey), ready for
// http.Header's map.
package header

// The header fields of retrying clients and the servers they call.
const (
	// IdempotencyKey carries the key of one logical request, the same on
	// every attempt (IETF draft "The Idempotency-Key HTTP Header Field").
	IdempotencyKey = "Idempotency-Key"
	// XIdempotencyKey is the older spelling some APIs still read; a request
	// that has it counts as keyed too.
	XIdempotencyKey = "X-Idempotency-Key"
	// IdempotentReplayed marks a response that the server replayed from its
	// record of the key instead of running the request again ("true").
	IdempotentReplayed = "Idempotent-Replayed"
	// AttemptCount carries the attempt number of a retrying client: 1 for
	// the first attempt, 2 for the first retry.
	AttemptCount = "Attempt-Count"
	// DoNotRetry on a response ("true") tells the client that retrying
	// cannot help, for example because a layer behind it already retried.
	DoNotRetry = "Do-Not-Retry"
	// RetryAfter is the server's word on when to come back (RFC 9110
	// §10.2.3): seconds or an HTTP date.
	RetryAfter = "Retry-After"
	// RateLimit is the structured field of the IETF draft "RateLimit header
	// fields for HTTP"; RateLimitReset and RateLimitRemaining are its
	// earlier separate fields, XRateLimitReset and XRateLimitRemaining the
	// common vendor spellings.
	RateLimit           = "Ratelimit"
	RateLimitReset      = "Ratelimit-Reset"
	RateLimitRemaining  = "Ratelimit-Remaining"
	XRateLimitReset     = "X-Ratelimit-Reset"
	XRateLimitRemaining = "X-Ratelimit-Remaining"
	// Date is when the server made the response, by its clock (RFC 9110
	// §6.6.1); Age, how many seconds a cache has held it since (RFC 9111
	// §5.1). A date in Retry-After is read against them.
	Date = "Date"
	Age  = "Age"
)

// ValidName reports whether name is a field name (an RFC 9110 token: one or
// more letters, digits or !#$%&'*+-.^_`|~).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return false
		}
	}
	return true
}

func tokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
