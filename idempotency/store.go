package idempotency

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// ID is the identity of a record: the scope (the principal the key belongs
// to, "" when keys are global; see Config.Scope) and the key. Two requests
// share a record only when both are equal, so that one principal can never
// replay another's response.
type ID struct {
	Scope string // Config.Scope's answer for the request; "" when keys are global
	Key   string // the Idempotency-Key as the client sent it
}

// String encodes the ID unambiguously (the scope's length first), for
// stores that need one string: "5:alice:k1", "0::k1".
func (id ID) String() string {
	return strconv.Itoa(len(id.Scope)) + ":" + id.Scope + ":" + id.Key
}

// Fingerprint identifies a request's content: a SHA-256 over its method,
// target (path and query, as the client sent them), selected headers
// (Config.FingerprintHeaders) and body, and the form that a layer outside
// the middleware parsed from the body before the middleware could read it.
type Fingerprint [32]byte

// String returns the fingerprint in hexadecimal.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// State is the state of a record.
type State uint8

const (
	// InProgress: a request holds the key and its handler is running.
	InProgress State = iota + 1
	// Completed: the handler finished and its response is stored.
	Completed
)

// String returns "in_progress" or "completed".
func (s State) String() string {
	switch s {
	case InProgress:
		return "in_progress"
	case Completed:
		return "completed"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Record is what a store holds for one ID.
type Record struct {
	State       State       // InProgress while a request holds the key, then Completed
	Fingerprint Fingerprint // the request that claimed the key; a retry must match it (else 422)
	// Token identifies the request that holds an InProgress record (only
	// that request may extend, complete or release it). Stores keep the
	// token of the request that completed a Completed record, so that its
	// Complete sent again is recognised, but Begin need not return it.
	Token string
	// Expires is when the record stops counting: the end of the lease for
	// an InProgress record, the end of its retention for a Completed one.
	Expires time.Time
	// Response is the stored response of a Completed record.
	Response Response
}

// Response is a stored response, replayed to later requests with the same
// key and fingerprint.
type Response struct {
	Status int // the status the handler wrote (200 when it wrote none)
	// Header holds the header fields to replay and, under names that
	// start with http.TrailerPrefix, the trailers.
	Header http.Header
	Body   []byte // the body as written, up to Config.MaxResponseBytes
	// Omitted says the body was larger than Config.MaxResponseBytes and was
	// not kept (Body is empty); a retry gets a 410 problem instead of the
	// response. See Config.MaxResponseBytes.
	Omitted bool
	// Size is the body's length as written by the handler (which, when
	// Omitted, is more than len(Body)).
	Size int64
	// Cut says the handler declared a Content-Length and wrote another
	// number of bytes (Size): its client got a broken answer (net/http
	// closes the connection of a body shorter than declared, and refuses
	// a write that goes past it). The body is not kept (Body is empty); a retry
	// gets a 410 problem instead of the broken answer made whole.
	Cut bool
}

// Store keeps idempotency records. Every method is one atomic transition:
// implementations must be safe for concurrent use, also across processes
// when the store is shared by a fleet (Redis, PostgreSQL), so that exactly
// one request at a time holds a key. Methods take now, the time the caller
// decides by; stores shared by several processes rely on their clocks being
// roughly in step (well within the lease).
//
// The record's life: Begin creates it InProgress with a lease; the request
// that holds it extends it while its handler runs (Extend), then either
// Completes it with the response (kept for ttl) or Releases it (deleted, so
// the next request runs the handler again). A record whose lease or
// retention has passed counts as absent: Begin claims it afresh.
type Store interface {
	// Begin claims id for the request identified by token: when the store
	// has no live record of id it writes an InProgress record with fp,
	// token and Expires now+lease, and returns claimed true. Otherwise it
	// writes nothing and returns the live record (InProgress held by
	// another request, or Completed), claimed false. A Begin by the token
	// that already holds id (the same call sent again after its reply was
	// lost) returns claimed true.
	Begin(ctx context.Context, id ID, fp Fingerprint, token string, now time.Time, lease time.Duration) (rec Record, claimed bool, err error)
	// Extend moves the lease of the InProgress record held by token to
	// now+lease. It returns ErrLeaseLost when token no longer holds id.
	Extend(ctx context.Context, id ID, token string, now time.Time, lease time.Duration) error
	// Complete stores resp in the record held by token, makes it Completed
	// and keeps it until now+ttl. A holder whose lease has passed holds the
	// record until another request claims it: its Complete stores resp
	// for at least CompleteGrace past the lease. It returns ErrLeaseLost,
	// storing nothing, when token no longer holds id (another request
	// claimed it after the lease passed, whatever that request did since;
	// the store dropped the record later than CompleteGrace past the
	// lease, or the MemoryStore to make room): the token fences a stale
	// holder off. Completing a record that token completed already (the
	// call sent again after its reply was lost) changes nothing and
	// returns nil.
	Complete(ctx context.Context, id ID, token string, resp Response, now time.Time, ttl time.Duration) error
	// Release deletes the InProgress record held by token, so that the next
	// request with the key runs its handler. Releasing a record that token
	// does not hold (any more) does nothing and returns nil.
	Release(ctx context.Context, id ID, token string) error
	// Get returns the live record of id at now; ok is false when there is
	// none.
	Get(ctx context.Context, id ID, now time.Time) (rec Record, ok bool, err error)
}

// CompleteGrace is how long past its lease a record in progress that
// nobody else claimed can still be completed by its holder: every store
// keeps such a record at least that long (Redis keeps its key, PostgreSQL's
// Cleanup its row, the MemoryStore its entry, but for room it must make at
// its bound), and the middleware tries on that long to store a response
// whose Complete failed. A holder whose store comes back after its lease,
// before any retry claimed the key, so stores its response instead of
// leaving the retry to run the handler again.
const CompleteGrace = 10 * time.Minute

// Errors of stores.
var (
	// ErrLeaseLost: the request no longer holds the record it tried to
	// extend or complete.
	ErrLeaseLost = errors.New("idempotency: lease lost: the record is no longer held by this request")
	// ErrStoreFull: a bounded store has no room for a new record and none
	// it may evict (every record is in progress).
	ErrStoreFull = errors.New("idempotency: store full: every record is in progress")
)
