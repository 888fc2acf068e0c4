package deadletter

import (
	"context"
	"time"
)

// Store keeps letters. Every method is one atomic step: implementations
// must be safe for concurrent use, and across processes when the store is
// shared by a fleet (the postgres module's), so that one claim at a time
// holds a letter. Methods that decide by time take now; processes sharing a
// store rely on their clocks being roughly in step (well within a lease).
//
// A letter's life: Put stores it, due at its Due; Claim holds it for a
// lease and gives it a token; the holder then either deletes it (Done: the
// redrive worked) or stores the outcome of the failed redrive and ends the
// claim (Fail), which may park it. A claim whose lease ended without Done
// or Fail ends by itself: the letter can be claimed again, and that claim
// counts as a failed redrive that made an attempt (its redriver may have
// been killed by the letter). An operator may Requeue or Delete any letter,
// claimed or not.
type Store interface {
	// Put stores l, unclaimed (its Token and LeaseEnd are ignored), after
	// checking it with Validate. When l.ID is stored already, Put changes
	// nothing and returns nil if the stored letter is the same work (same
	// Queue, Key and Payload: a producer that retried its Put), ErrConflict
	// otherwise.
	Put(ctx context.Context, l Letter) error
	// Claim holds up to max letters of queue that are due at now (Due ≤
	// now), not parked and not held by a claim whose lease runs past now.
	// Each gets a new Token and LeaseEnd now+lease. A letter still
	// carrying an earlier claim (which ended with its lease, neither Done
	// nor Fail stored) has that claim counted: Attempts and Redrives one
	// more (up to MaxCount), Reason ReasonLeaseEnded, Error kept. They are returned
	// earliest Due first (then by ID). max must be ≥ 1 and lease > 0.
	Claim(ctx context.Context, queue string, now time.Time, max int, lease time.Duration) ([]Letter, error)
	// Done deletes the letter id held by token: its redrive worked. It
	// returns ErrLeaseLost, deleting nothing, when token does not hold the
	// letter (another claim took it after the lease ended, or an operator
	// requeued or deleted it).
	Done(ctx context.Context, id, token string) error
	// Fail records a failed redrive of the letter held by l.Token: it
	// stores l's Reason, Error, Attempts, Redrives, Due and Parked, and ends
	// the claim. It returns ErrLeaseLost, storing nothing, when l.Token does
	// not hold the letter.
	Fail(ctx context.Context, l Letter) error
	// Get returns the letter id, with its claim if one holds it (Token and
	// LeaseEnd, which may have passed). ErrNotFound if there is none.
	Get(ctx context.Context, id string) (Letter, error)
	// List returns up to max letters of queue ("" for every queue) whose
	// IDs sort after after ("" to start), in ID order: one page; pass the
	// last ID returned to get the next. max must be ≥ 1.
	List(ctx context.Context, queue, after string, max int) ([]Letter, error)
	// Requeue makes the letter id due at at, unparked, with its Redrives
	// count reset (an operator's fresh start), and ends any claim on it.
	// ErrNotFound if there is none.
	Requeue(ctx context.Context, id string, at time.Time) error
	// Delete removes the letter id, claimed or not. ErrNotFound if there is
	// none.
	Delete(ctx context.Context, id string) error
	// Count counts the letters of queue ("" for every queue) at now.
	Count(ctx context.Context, queue string, now time.Time) (Counts, error)
}

// Counts is what a store holds, for operators and metrics. Every letter is
// in exactly one of Waiting, Due, Held and Parked.
type Counts struct {
	Waiting int // not due yet
	Due     int // due, not held: a redriver may claim it now
	Held    int // held by a claim whose lease runs past now
	Parked  int // waiting for an operator
}

// Total is the number of letters.
func (c Counts) Total() int { return c.Waiting + c.Due + c.Held + c.Parked }
