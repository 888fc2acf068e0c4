package deadletter

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/retry"
)

// Capture puts work that a retry loop gave up on into s, as l filled from
// err and now: Reason is the *retry.Error's reason in words ("attempts
// exhausted", ...; "failed" for another error), Error err's message (cut to
// MaxErrorBytes), Attempts the *retry.Error's count (up to MaxCount; 1 for another error);
// an empty ID gets NewID, a zero Created and a zero Due get now. Fields of l
// that are set are kept. It returns the letter as put, so that the caller
// can log its ID. A nil err is refused: nothing failed.
//
// A letter that Put refuses (invalid, or the store full or unreachable) is
// returned with the error, so that nothing is lost: the caller still holds
// it.
func Capture(ctx context.Context, s Store, l Letter, err error, now time.Time) (Letter, error) {
	if err == nil {
		return l, invalidf("Capture with a nil error: nothing failed, so there is nothing to redrive")
	}
	if l.ID == "" {
		l.ID = NewID()
	}
	if l.Created.IsZero() {
		l.Created = now
	}
	if l.Due.IsZero() {
		l.Due = now
	}
	reason, attempts := "failed", 1
	var ge *retry.Error
	if errors.As(err, &ge) {
		reason, attempts = ge.Reason.String(), ge.Attempts
	}
	if l.Reason == "" {
		l.Reason = reason
	}
	l.Reason = Message(l.Reason)
	if l.Attempts == 0 {
		l.Attempts = min(attempts, MaxCount)
	}
	if l.Error == "" {
		l.Error = cut(Message(err.Error()), MaxErrorBytes)
	}
	return l, s.Put(ctx, l)
}

// cut returns s shortened to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
