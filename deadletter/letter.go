package deadletter

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a letter, checked by Letter.Validate (and so by every Store's
// Put) so that a store never holds what another store would refuse.
const (
	// MaxIDBytes is the longest ID and the longest Queue.
	MaxIDBytes = 200
	// MaxKeyBytes is the longest Key (the IETF draft bounds none; 255 is
	// what Stripe accepts).
	MaxKeyBytes = 255
	// MaxPayloadBytes is the largest Payload: 1 MiB. Larger work belongs in
	// a blob store, with its address in the payload.
	MaxPayloadBytes = 1 << 20
	// MaxErrorBytes is the longest Error kept; Capture truncates longer
	// messages to it (on a rune boundary) rather than refusing the letter.
	MaxErrorBytes = 4 << 10
	// MaxCount is the largest Attempts and Redrives (a 32-bit integer's,
	// what a database's integer column holds). The Redriver stops counting
	// at it.
	MaxCount = 1<<31 - 1
)

// Letter is one piece of work that a retry loop gave up on.
type Letter struct {
	// ID identifies the letter in its store. Required; NewID makes one
	// (Capture does when it is empty).
	ID string
	// Queue is the kind of work, which says how to redrive it: each
	// Redriver serves one queue. Required.
	Queue string
	// Key is the work's idempotency key, if it has one; a handler sends it
	// unchanged on every redrive, so that the receiver executes the work
	// once however often it is redriven.
	Key string
	// Payload is the work itself, in whatever form the queue's handler
	// reads (JSON, an encoded request). At most MaxPayloadBytes.
	Payload []byte
	// Reason says why the work was last given up: a retry.Reason in words
	// ("attempts exhausted", "deadline", ...) or the redriver's own
	// ("redrives exhausted").
	Reason string
	// Error is the last error's message, at most MaxErrorBytes.
	Error string
	// Attempts counts the attempts made: by the first run, then one per
	// redrive (or, when the handler's error is a *retry.Error, its count).
	Attempts int
	// Redrives counts the redrives that failed.
	Redrives int
	// Created is when the letter was first put.
	Created time.Time
	// Due is the earliest time of the next redrive.
	Due time.Time
	// Parked letters are never claimed: they wait for an operator to
	// Requeue or Delete them.
	Parked bool

	// Token identifies the claim that holds the letter; Done and Fail must
	// present it. Set by Store.Claim, empty otherwise. Stores ignore it in
	// Put.
	Token string
	// LeaseEnd is when the claim that holds the letter ends. Set by
	// Store.Claim, zero otherwise.
	LeaseEnd time.Time
}

// Validate reports the first field out of range, with its value and what is
// accepted. Every store's Put checks it.
func (l *Letter) Validate() error {
	switch {
	case l.ID == "" || len(l.ID) > MaxIDBytes:
		return invalidf("ID %q: want 1 to %d bytes (NewID makes one)", clip(l.ID), MaxIDBytes)
	case !text(l.ID):
		return invalidf("ID %q: want UTF-8 text without NUL", clip(l.ID))
	case l.Queue == "" || len(l.Queue) > MaxIDBytes:
		return invalidf("Queue %q: want 1 to %d bytes", clip(l.Queue), MaxIDBytes)
	case !text(l.Queue):
		return invalidf("Queue %q: want UTF-8 text without NUL", clip(l.Queue))
	case len(l.Key) > MaxKeyBytes:
		return invalidf("Key of %d bytes: want at most %d", len(l.Key), MaxKeyBytes)
	case !text(l.Key):
		return invalidf("Key %q: want UTF-8 text without NUL", clip(l.Key))
	case len(l.Payload) > MaxPayloadBytes:
		return invalidf("Payload of %d bytes: want at most %d (1 MiB); keep larger work elsewhere and put its address in the payload", len(l.Payload), MaxPayloadBytes)
	case l.Created.IsZero():
		return invalidf("Created is the zero time: want when the work was given up")
	}
	return l.ValidateOutcome()
}

// ValidateOutcome checks the fields that Store.Fail stores: Error, Attempts
// and Redrives (0 to MaxCount). Every store's Fail checks it.
func (l *Letter) ValidateOutcome() error {
	switch {
	case len(l.Error) > MaxErrorBytes:
		return invalidf("Error of %d bytes: want at most %d", len(l.Error), MaxErrorBytes)
	case l.Attempts < 0 || l.Attempts > MaxCount:
		return invalidf("Attempts %d: want 0 to %d", l.Attempts, MaxCount)
	case l.Redrives < 0 || l.Redrives > MaxCount:
		return invalidf("Redrives %d: want 0 to %d", l.Redrives, MaxCount)
	}
	return nil
}

// text reports whether s is UTF-8 without NUL, which every store can keep
// as text (PostgreSQL's text type holds no NUL and no invalid UTF-8).
func text(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// Message returns s as every store keeps a letter's Reason and Error: as is
// when it is UTF-8 text without NUL, and otherwise with invalid bytes and
// NULs replaced by U+FFFD, cut back to MaxErrorBytes (on a rune boundary)
// if it was within it before. Stores call it in Put and Fail, so that a
// letter is never refused, nor stored differently, because of its message.
func Message(s string) string {
	if text(s) {
		return s
	}
	fits := len(s) <= MaxErrorBytes
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if fits {
		s = cut(s, MaxErrorBytes)
	}
	return s
}

// same reports whether l and o are the same work: Put of a letter whose ID
// is stored succeeds only then (a producer that retried its Put), and is
// refused with ErrConflict otherwise.
func (l *Letter) same(o *Letter) bool {
	return l.Queue == o.Queue && l.Key == o.Key && string(l.Payload) == string(o.Payload)
}

// NewID returns a new random letter ID: 128 bits in hexadecimal.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Errors of stores and redrivers. Stores return them wrapped with the
// letter's ID; errors.Is sees through.
var (
	// ErrInvalidLetter: a letter, or an argument of a Store method, is out
	// of range.
	ErrInvalidLetter = errors.New("deadletter: invalid")
	// ErrInvalidConfig: a Config field of NewRedriver, or NewMemory's max,
	// is out of range; the message names it, its value and what is
	// accepted.
	ErrInvalidConfig = errors.New("deadletter: invalid configuration")
	// ErrConflict: Put of an ID that is stored with other work (another
	// queue, key or payload).
	ErrConflict = errors.New("deadletter: conflict: the ID is stored with other work")
	// ErrNotFound: no letter has the ID.
	ErrNotFound = errors.New("deadletter: not found")
	// ErrLeaseLost: the token no longer holds the letter (its lease ended
	// and another claim took it, or an operator requeued or deleted it).
	ErrLeaseLost = errors.New("deadletter: lease lost: the letter is no longer held by this claim")
	// ErrFull: a bounded store has no room for another letter.
	ErrFull = errors.New("deadletter: store full")
	// ErrNotAttempted marks a handler's error that says the work was not
	// tried (its letter could not be read, or the request not built): the
	// Redriver counts no attempt for it. Wrap it with the cause, e.g.
	// fmt.Errorf("%w: %w", deadletter.ErrNotAttempted, err), and with
	// retry.Permanent when no redrive can do better.
	ErrNotAttempted = errors.New("deadletter: not attempted")
)

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return "deadletter: invalid letter: " + e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalidLetter }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
