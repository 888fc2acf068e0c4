// Package problem writes the answers that the toolkit's servers make
// themselves (the idempotency middleware, the yaoki proxy) as RFC 9457
// problem details, so that both send them with the same headers.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/yaoki-go/yaoki/header"
)

// ContentType is the media type of problem details (RFC 9457 §3).
const ContentType = "application/problem+json"

// Write sends body, a problem details object (a struct with the RFC's type,
// title, status and detail members and the caller's own), as the answer
// with status: application/problem+json, its length, Cache-Control:
// no-store, no Content-Encoding, and Retry-After when retryAfter ≥ 0
// (seconds). A body that does not marshal is sent as {"type":"about:blank"}.
func Write(w http.ResponseWriter, status int, body any, retryAfter int) {
	b, err := json.Marshal(body)
	if err != nil {
		b = []byte(`{"type":"about:blank"}`)
	}
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Encoding")
	if retryAfter >= 0 {
		h.Set(header.RetryAfter, strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
