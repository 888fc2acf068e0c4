package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/deadletter"
)

// DeadLettersTable is the table of DeadLetters' letters, created by Migrate.
const DeadLettersTable = "yaoki_dead_letters"

// DeadLetters is a deadletter.Store in PostgreSQL: letters survive restarts,
// and every process of a fleet that uses the same database shares them, each
// claim held by one redriver at a time.
//
// Each letter is a row. Every method is one statement, atomic in the
// database (Put of an ID already stored takes a second one, to compare the
// work). Claim is an UPDATE of the rows picked by a
// SELECT ... FOR UPDATE SKIP LOCKED: concurrent claimers, in one process or
// many, skip the rows another is taking instead of waiting for it, and never
// take the same letter while its lease runs. Each Claim makes a new claim
// token before the statement is sent, 32 hexadecimal digits from
// crypto/rand (128 random bits), and gives each letter it takes that
// token followed by 8 hexadecimal digits of its ID's MD5, so that each
// letter's differs: when the statement fails (the reply lost, the
// connection cut), Claim looks for the letters whose token starts with the
// claim's and returns them, so that letters claimed by an UPDATE whose
// reply never came are not left held by a claim nobody knows of (to be
// counted, when its lease ends, as redrives that ended with it). Done and
// Fail change the row only while it carries the token. Decisions compare the times stored with the now the caller passes
// (so the fleet's clocks should agree to well within a lease).
//
// It behaves as deadletter.Memory does (without a bound: ErrFull never
// happens), with three differences that the column types impose:
//   - Times are stored to the microsecond: Created, Due and LeaseEnd come
//     back truncated to it, in UTC, and the now passed to Claim and Count is
//     truncated too.
//   - ID, Queue and Key must be valid UTF-8 without NUL bytes (text
//     columns): Put refuses others with deadletter.ErrInvalidLetter, and List
//     refuses such an after. Looking up such an ID finds nothing.
//   - Reason and Error are stored with invalid UTF-8 and NUL bytes replaced
//     by U+FFFD (then cut to deadletter.MaxErrorBytes): they are messages,
//     and a letter is never refused for its message.
//
// Claim reads a partial index on (queue, due_at, id) of the unparked rows,
// so its cost does not grow with the letters waiting or parked; List reads
// the primary key in ID order; Count reads every row of the queue (of the
// table for ""). It is safe for concurrent use when db is (a
// *pgxpool.Pool is).
type DeadLetters struct {
	db DB
}

// NewDeadLetters returns a store over db. The table must exist: call
// Migrate first.
func NewDeadLetters(db DB) *DeadLetters {
	return &DeadLetters{db: db}
}

// letterColumns are the columns scanned into a Letter by scanLetter, in its
// order.
const letterColumns = `id, queue, key, payload, reason, error, attempts, redrives, created_at, due_at, parked, token, lease_end`

const putSQL = `INSERT INTO yaoki_dead_letters (` + letterColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, NULL)
ON CONFLICT (id) DO NOTHING`

// Put implements deadletter.Store. A new letter costs one statement; an ID
// already stored, a second one that compares the stored work with l's.
func (s *DeadLetters) Put(ctx context.Context, l deadletter.Letter) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := storable(&l); err != nil {
		return err
	}
	for range 10 {
		tag, err := s.db.Exec(ctx, putSQL, l.ID, l.Queue, l.Key, l.Payload, deadletter.Message(l.Reason), deadletter.Message(l.Error),
			l.Attempts, l.Redrives, l.Created, l.Due, l.Parked)
		if err != nil {
			return fmt.Errorf("postgres: dead letter put %q: %w", l.ID, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		// The ID is taken: a producer that retried its Put, or other work.
		var same bool
		// A nil and an empty payload are the same work, as in Memory.
		payload := l.Payload
		if payload == nil {
			payload = []byte{}
		}
		err = s.db.QueryRow(ctx, `SELECT queue = $2 AND key = $3 AND coalesce(payload, '') = $4 FROM yaoki_dead_letters WHERE id = $1`,
			l.ID, l.Queue, l.Key, payload).Scan(&same)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // deleted meanwhile: insert again
		case err != nil:
			return fmt.Errorf("postgres: dead letter put %q: %w", l.ID, err)
		case !same:
			return fmt.Errorf("%w: put %q", deadletter.ErrConflict, l.ID)
		}
		return nil
	}
	return fmt.Errorf("postgres: dead letter put %q: the letter was deleted and put again under 10 tries in a row", l.ID)
}

// claimSQL takes up to $3 claimable letters of queue $1 at $2 and holds
// them until $4. FOR UPDATE SKIP LOCKED passes over the rows that another
// transaction is claiming (or otherwise changing) instead of waiting: two
// claimers never take one row, and neither blocks the other. The picked IDs
// go through an array (= ANY (ARRAY(...)), an InitPlan) rather than IN
// (...): with IN, the generic plan of the prepared statement joins them
// with a scan of the whole table.
//
// $6 is the claim's token, which starts each letter's token (Claim finds
// by it the letters of a claim whose reply was lost).
//
// A row that still has a token carries a claim that ended with its lease,
// no outcome stored: SET, which reads the row as it was, counts it
// (deadletter.Store's Claim), up to deadletter.MaxCount, the integer
// column's largest value.
const claimSQL = `UPDATE yaoki_dead_letters
SET token = $6 || left(md5(id), 8), lease_end = $4,
	attempts = CASE WHEN token IS NULL OR attempts = 2147483647 THEN attempts ELSE attempts + 1 END,
	redrives = CASE WHEN token IS NULL OR redrives = 2147483647 THEN redrives ELSE redrives + 1 END,
	reason = CASE WHEN token IS NULL THEN reason ELSE $5 END
WHERE id = ANY (ARRAY(
	SELECT id FROM yaoki_dead_letters
	WHERE queue = $1 AND NOT parked AND due_at <= $2 AND (token IS NULL OR lease_end <= $2)
	ORDER BY due_at, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED))
RETURNING ` + letterColumns

// Claim implements deadletter.Store.
func (s *DeadLetters) Claim(ctx context.Context, queue string, now time.Time, max int, lease time.Duration) ([]deadletter.Letter, error) {
	if max < 1 {
		return nil, fmt.Errorf("%w: claim of %d letters: want ≥ 1", deadletter.ErrInvalidLetter, max)
	}
	if lease <= 0 {
		return nil, fmt.Errorf("%w: claim with lease %v: want > 0", deadletter.ErrInvalidLetter, lease)
	}
	if !storableText(queue) {
		return nil, nil // no letter has such a queue
	}
	token := deadletter.NewID()
	out, err := s.query(ctx, claimSQL, queue, now, max, now.Add(lease), deadletter.ReasonLeaseEnded, token)
	if err != nil {
		// The UPDATE may have run, its reply lost: the letters it took
		// carry the token. Look on a new connection, if the pool has
		// one, even when ctx has ended (the caller then lets them go).
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadletter.StoreTimeout)
		defer cancel()
		found, ferr := s.query(fctx, `SELECT `+letterColumns+` FROM yaoki_dead_letters WHERE queue = $1 AND left(token, 32) = $2`, queue, token)
		if ferr != nil || len(found) == 0 {
			return nil, fmt.Errorf("postgres: dead letter claim in queue %q: %w", queue, err)
		}
		out = found
	}
	// RETURNING follows no ORDER BY.
	slices.SortFunc(out, func(a, b deadletter.Letter) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Done implements deadletter.Store.
func (s *DeadLetters) Done(ctx context.Context, id, token string) error {
	lost := func() error { return fmt.Errorf("%w: %q", deadletter.ErrLeaseLost, id) }
	if !storableText(id) || !storableText(token) {
		return lost()
	}
	return s.change(ctx, "done", id, lost, `DELETE FROM yaoki_dead_letters WHERE id = $1 AND token = $2`, id, token)
}

// change runs sql, a statement on the row of letter id, and returns
// missing() when it changed none. what names the change in an error of
// the database.
func (s *DeadLetters) change(ctx context.Context, what, id string, missing func() error, sql string, args ...any) error {
	tag, err := s.db.Exec(ctx, sql, args...)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: dead letter %s %q: %w", what, id, err)
	case tag.RowsAffected() == 0:
		return missing()
	}
	return nil
}

// Fail implements deadletter.Store.
func (s *DeadLetters) Fail(ctx context.Context, l deadletter.Letter) error {
	if err := l.ValidateOutcome(); err != nil {
		return err
	}
	lost := func() error { return fmt.Errorf("%w: %q", deadletter.ErrLeaseLost, l.ID) }
	if !storableText(l.ID) || !storableText(l.Token) {
		return lost()
	}
	return s.change(ctx, "fail", l.ID, lost, `UPDATE yaoki_dead_letters
SET reason = $3, error = $4, attempts = $5, redrives = $6, due_at = $7, parked = $8, token = NULL, lease_end = NULL
WHERE id = $1 AND token = $2`, l.ID, l.Token, deadletter.Message(l.Reason), deadletter.Message(l.Error), l.Attempts, l.Redrives, l.Due, l.Parked)
}

// Get implements deadletter.Store.
func (s *DeadLetters) Get(ctx context.Context, id string) (deadletter.Letter, error) {
	if !storableText(id) {
		return deadletter.Letter{}, fmt.Errorf("%w: %q", deadletter.ErrNotFound, id)
	}
	var l deadletter.Letter
	err := scanLetter(s.db.QueryRow(ctx, `SELECT `+letterColumns+` FROM yaoki_dead_letters WHERE id = $1`, id), &l)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return deadletter.Letter{}, fmt.Errorf("%w: %q", deadletter.ErrNotFound, id)
	case err != nil:
		return deadletter.Letter{}, fmt.Errorf("postgres: dead letter get %q: %w", id, err)
	}
	return l, nil
}

// List implements deadletter.Store. It refuses with deadletter.ErrInvalidLetter
// an after that is not valid UTF-8 without NUL bytes (no ID is; pass the
// last ID of the previous page).
func (s *DeadLetters) List(ctx context.Context, queue, after string, max int) ([]deadletter.Letter, error) {
	if max < 1 {
		return nil, fmt.Errorf("%w: list of %d letters: want ≥ 1", deadletter.ErrInvalidLetter, max)
	}
	if !storableText(after) {
		return nil, fmt.Errorf("%w: list after %q: want valid UTF-8 without NUL bytes, as every stored ID is (the last ID of the previous page)", deadletter.ErrInvalidLetter, after)
	}
	var (
		out []deadletter.Letter
		err error
	)
	switch {
	case queue == "":
		out, err = s.query(ctx, `SELECT `+letterColumns+` FROM yaoki_dead_letters
WHERE id > $1 ORDER BY id LIMIT $2`, after, max)
	case !storableText(queue):
		return nil, nil // no letter has such a queue
	default:
		out, err = s.query(ctx, `SELECT `+letterColumns+` FROM yaoki_dead_letters
WHERE id > $1 AND queue = $3 ORDER BY id LIMIT $2`, after, max, queue)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: dead letter list of queue %q after %q: %w", queue, after, err)
	}
	return out, nil
}

// Requeue implements deadletter.Store.
func (s *DeadLetters) Requeue(ctx context.Context, id string, at time.Time) error {
	absent := func() error { return fmt.Errorf("%w: requeue %q", deadletter.ErrNotFound, id) }
	if !storableText(id) {
		return absent()
	}
	return s.change(ctx, "requeue", id, absent, `UPDATE yaoki_dead_letters
SET due_at = $2, parked = false, redrives = 0, token = NULL, lease_end = NULL WHERE id = $1`, id, at)
}

// ErrHeld is what RequeueUnheld returns, as a *HeldError, for a letter that
// a claim holds: errors.Is(err, ErrHeld).
var ErrHeld = errors.New("postgres: dead letter held by a claim")

// HeldError says which claim holds a letter that RequeueUnheld left as it
// was: the claim's Token and the end of its lease. Until then the redriver
// that holds it may be running it (an HTTP letter's request in flight).
type HeldError struct {
	ID       string    // the letter's ID
	Token    string    // the claim's token
	LeaseEnd time.Time // in UTC
}

// Error names the letter, the claim that holds it and its lease's end.
func (e *HeldError) Error() string {
	return fmt.Sprintf("postgres: dead letter %q is held by the claim %s until %s: its redriver may be running it now",
		e.ID, e.Token, e.LeaseEnd.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// RequeueUnheld is Requeue for a letter that no claim holds at now: it
// leaves a letter whose lease runs past now as it is and returns a
// *HeldError naming the claim. Requeue ends the claim, so that another
// redriver could claim the letter and run it again while its holder is
// still running it (the work done twice wherever the letter's key is not
// honoured); RequeueUnheld is for an operator who wants none of that. The
// decision is the UPDATE's own condition, atomic with the change: a claim
// taken between a read and the write cannot slip through. A claim whose
// lease ended, no outcome stored (its redriver was killed), does not hold
// the letter and is ended as Requeue ends it. ErrNotFound if there is no
// letter id. Safe for concurrent use.
func (s *DeadLetters) RequeueUnheld(ctx context.Context, id string, at, now time.Time) error {
	absent := func() error { return fmt.Errorf("%w: requeue %q", deadletter.ErrNotFound, id) }
	if !storableText(id) {
		return absent()
	}
	// A letter that the UPDATE passed over is held, or gone, or was held
	// and freed between the UPDATE and the read that says why: then try
	// again.
	for range 10 {
		tag, err := s.db.Exec(ctx, `UPDATE yaoki_dead_letters
SET due_at = $2, parked = false, redrives = 0, token = NULL, lease_end = NULL
WHERE id = $1 AND (token IS NULL OR lease_end <= $3)`, id, at, now)
		if err != nil {
			return fmt.Errorf("postgres: dead letter requeue %q: %w", id, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var (
			token    *string
			leaseEnd *time.Time
		)
		err = s.db.QueryRow(ctx, `SELECT token, lease_end FROM yaoki_dead_letters WHERE id = $1`, id).Scan(&token, &leaseEnd)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return absent()
		case err != nil:
			return fmt.Errorf("postgres: dead letter requeue %q: %w", id, err)
		case token != nil && leaseEnd != nil && leaseEnd.After(now):
			return &HeldError{ID: id, Token: *token, LeaseEnd: leaseEnd.UTC()}
		}
	}
	return fmt.Errorf("postgres: dead letter requeue %q: claimed and freed again under 10 tries in a row", id)
}

// Delete implements deadletter.Store.
func (s *DeadLetters) Delete(ctx context.Context, id string) error {
	absent := func() error { return fmt.Errorf("%w: delete %q", deadletter.ErrNotFound, id) }
	if !storableText(id) {
		return absent()
	}
	return s.change(ctx, "delete", id, absent, `DELETE FROM yaoki_dead_letters WHERE id = $1`, id)
}

// countSQL puts each letter in the one class deadletter.Counts gives it at
// $1: parked, else held (a lease runs past now), else waiting (not due),
// else due. It reads every row of the queue (or of the table).
const countSQL = `SELECT
	count(*) FILTER (WHERE c = 0), count(*) FILTER (WHERE c = 1),
	count(*) FILTER (WHERE c = 2), count(*) FILTER (WHERE c = 3)
FROM (SELECT CASE
		WHEN parked THEN 3
		WHEN token IS NOT NULL AND lease_end > $1 THEN 2
		WHEN due_at > $1 THEN 0
		ELSE 1
	END AS c
	FROM yaoki_dead_letters WHERE $2 = '' OR queue = $2) AS classes`

// Count implements deadletter.Store.
func (s *DeadLetters) Count(ctx context.Context, queue string, now time.Time) (deadletter.Counts, error) {
	var c deadletter.Counts
	if !storableText(queue) {
		return c, nil // no letter has such a queue
	}
	if err := s.db.QueryRow(ctx, countSQL, now, queue).Scan(&c.Waiting, &c.Due, &c.Held, &c.Parked); err != nil {
		return deadletter.Counts{}, fmt.Errorf("postgres: dead letter count of queue %q: %w", queue, err)
	}
	return c, nil
}

// query runs a statement that returns letters.
func (s *DeadLetters) query(ctx context.Context, sql string, args ...any) ([]deadletter.Letter, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deadletter.Letter
	for rows.Next() {
		var l deadletter.Letter
		if err := scanLetter(rows, &l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// scanLetter reads the letterColumns of one row into l, its times in UTC.
func scanLetter(row pgx.Row, l *deadletter.Letter) error {
	var (
		token    *string
		leaseEnd *time.Time
	)
	if err := row.Scan(&l.ID, &l.Queue, &l.Key, &l.Payload, &l.Reason, &l.Error, &l.Attempts, &l.Redrives,
		&l.Created, &l.Due, &l.Parked, &token, &leaseEnd); err != nil {
		return err
	}
	l.Created, l.Due = l.Created.UTC(), l.Due.UTC()
	if token != nil && leaseEnd != nil {
		l.Token, l.LeaseEnd = *token, leaseEnd.UTC()
	}
	return nil
}

// storable reports, as deadletter.ErrInvalidLetter, a field of l that a text
// column cannot hold.
func storable(l *deadletter.Letter) error {
	for _, f := range [...]struct{ name, v string }{{"ID", l.ID}, {"Queue", l.Queue}, {"Key", l.Key}} {
		if !storableText(f.v) {
			return fmt.Errorf("%w: put %q: %s %q is not valid UTF-8 without NUL bytes, which this store's text columns need", deadletter.ErrInvalidLetter, l.ID, f.name, f.v)
		}
	}
	return nil
}

// storableText reports whether a PostgreSQL text column can hold s.
func storableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
