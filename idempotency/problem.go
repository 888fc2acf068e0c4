package idempotency

import (
	"net/http"

	"github.com/yaoki-go/yaoki/internal/problem"
)

// Problem is the body of every answer the middleware gives itself: an RFC
// 9457 problem details object, sent as application/problem+json. Type is
// "about:blank" (the status says what kind of problem it is), Title the
// status text, Detail what was wrong in words, and Reason the same as one
// snake_case word for programs (and for event.Event.Reason):
//
//	status  reason               when
//	400     key_missing          the route requires a key and none was sent
//	400     key_malformed        the key is empty, too long, not printable ASCII, sent twice, or two keys in one field (a, b)
//	400     body_unreadable      the request body could not be read
//	400     scope_malformed      Config.Scope returned text that is not UTF-8 or holds a control character
//	409     in_progress          a request with this key is still running (Retry-After is set)
//	410     response_too_large   the request was executed but its response was too large to keep
//	410     response_cut         the request was executed but its handler wrote another length than the Content-Length it declared
//	413     body_too_large       the request body is over Config.MaxRequestBytes
//	422     key_reused           the key was used before with a different request
//	503     store_unavailable    the store failed or is full (Retry-After is set)
type Problem struct {
	Type   string `json:"type"`   // "about:blank"
	Title  string `json:"title"`  // the status text
	Status int    `json:"status"` // the answer's status code
	Detail string `json:"detail"` // what was wrong, in words
	Reason string `json:"reason"` // the same as one snake_case word (the table above)
	// OriginalStatus is the status of the executed request whose response
	// was too large to keep or broken (410 only).
	OriginalStatus int `json:"original_status,omitempty"`
}

// Reasons, as in the Problem table.
const (
	ReasonKeyMissing       = "key_missing"
	ReasonKeyMalformed     = "key_malformed"
	ReasonBodyUnreadable   = "body_unreadable"
	ReasonScopeMalformed   = "scope_malformed"
	ReasonInProgress       = "in_progress"
	ReasonResponseTooLarge = "response_too_large"
	ReasonResponseCut      = "response_cut"
	ReasonBodyTooLarge     = "body_too_large"
	ReasonKeyReused        = "key_reused"
	ReasonStoreUnavailable = "store_unavailable"
)

// ProblemContentType is the media type of a Problem (RFC 9457 §3).
const ProblemContentType = problem.ContentType

func writeProblem(w http.ResponseWriter, p Problem, retryAfter int) {
	p.Type = "about:blank"
	p.Title = http.StatusText(p.Status)
	problem.Write(w, p.Status, p, retryAfter)
}
