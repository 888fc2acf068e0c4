package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/idempotency"
)

// IdempotencyTable is the table of IdempotencyStore's records, created by
// Migrate.
const IdempotencyTable = "yaoki_idempotency"

// IdempotencyStore is an idempotency.Store in PostgreSQL: records survive
// restarts of the servers that wrote them (and of the database), and every
// process that uses the same database shares them.
//
// Each record is a row keyed by (scope, key). Every transition is one
// statement, atomic in the database: Begin is an INSERT ... ON CONFLICT DO
// UPDATE that takes over a row only when its expiry has passed, so that of
// many processes that Begin the same key at once exactly one claims it; the
// others read the live row. Extend, Complete and Release change the row only
// if it is still in progress and held by the caller's token. Decisions
// compare expiry times with the now the caller passes (so the fleet's clocks
// should agree to well within the lease). Rows whose time has passed are
// ignored, taken over by the next Begin of their key, and deleted by
// Cleanup, which should run periodically (see its example); a holder whose
// lease has passed can still complete its record while nobody claimed it,
// and Cleanup keeps such a row idempotency.CompleteGrace past its lease.
//
// Its writes that the middleware acts on (a claim, a renewal, a completed
// record) commit durably even when synchronous_commit is off: they set it
// to local for their own transaction, so that a crash of PostgreSQL cannot
// lose a record it acknowledged (and a retry run the handler again).
// fsync must be on.
//
// Scopes must be valid UTF-8 without NUL bytes (the column is text); keys
// are printable ASCII by the middleware's rules. It is safe for concurrent
// use when db is (a *pgxpool.Pool is).
type IdempotencyStore struct {
	db DB
}

// NewIdempotencyStore returns a store over db. The table must exist: call
// Migrate first.
func NewIdempotencyStore(db DB) *IdempotencyStore {
	return &IdempotencyStore{db: db}
}

const (
	stateInProgress = 1
	stateCompleted  = 2
)

// durable, evaluated in a statement that writes a record, makes the commit
// of that statement's (implicit) transaction wait until its WAL is on disk
// when synchronous_commit is off (for the database, the role or the
// server, often for throughput): the middleware acts on the write as soon
// as it is acknowledged (a claim runs the handler, a completed record ends
// the request), and an acknowledged write that a crash of PostgreSQL then
// loses lets a retry run the handler again. The setting is the
// transaction's own (set_config's is_local), so nothing else changes; any
// other value (on, local, remote_write, remote_apply) is the operator's
// and stays. It costs no round trip.
const durable = `set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'off' THEN 'local' ELSE current_setting('synchronous_commit') END, true)`

// beginSQL claims the row or, when it is live, returns it: one round trip.
// A row in progress held by the same token is claimed again (the statement
// sent again after its reply was lost), with its lease moved to now+lease.
// The token of a completed row is not returned: nobody needs it from Begin.
// The claimed flag comes from the INSERT; the row from the statement's
// snapshot, which misses a row committed by a concurrent claimer after the
// statement started: Begin then reads again.
const beginSQL = `
WITH claim AS (
	INSERT INTO yaoki_idempotency AS r (scope, key, state, fingerprint, token, expires_at, response, created_at)
	VALUES ($1, $2, 1, $3, $4, $5, NULL, $6)
	ON CONFLICT (scope, key) DO UPDATE
		SET state = 1, fingerprint = EXCLUDED.fingerprint, token = EXCLUDED.token,
		    expires_at = EXCLUDED.expires_at, response = NULL, created_at = EXCLUDED.created_at
		WHERE r.expires_at <= EXCLUDED.created_at OR r.state = 1 AND r.token = EXCLUDED.token
	RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM claim), r.state, r.fingerprint, CASE WHEN r.state = 1 THEN r.token END, r.expires_at, r.response
FROM (SELECT ` + durable + `) AS one
LEFT JOIN yaoki_idempotency AS r ON r.scope = $1 AND r.key = $2 AND r.expires_at > $6`

const getSQL = `
SELECT state, fingerprint, token, expires_at, response FROM yaoki_idempotency
WHERE scope = $1 AND key = $2 AND expires_at > $3`

// Begin implements idempotency.Store.
func (s *IdempotencyStore) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	for range 10 {
		var (
			claimed bool
			row     rowFields
		)
		err := s.db.QueryRow(ctx, beginSQL, id.Scope, id.Key, fp[:], token, now.Add(lease), now).
			Scan(&claimed, &row.state, &row.fp, &row.token, &row.expires, &row.response)
		if err != nil {
			return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency begin %s: %w", id, err)
		}
		if claimed {
			return idempotency.Record{}, true, nil
		}
		if row.state == nil {
			// The live row was committed after this statement's snapshot:
			// read it now.
			rec, ok, err := s.Get(ctx, id, now)
			if err != nil {
				return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency begin %s: %w", id, err)
			}
			if ok {
				return rec, false, nil
			}
			continue // released or expired meanwhile: try to claim again
		}
		rec, err := row.record()
		if err != nil {
			return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency begin %s: %w", id, err)
		}
		return rec, false, nil
	}
	return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency begin %s: the record changed under 10 tries in a row", id)
}

// Extend implements idempotency.Store.
func (s *IdempotencyStore) Extend(ctx context.Context, id idempotency.ID, token string, now time.Time, lease time.Duration) error {
	tag, err := s.db.Exec(ctx, `UPDATE yaoki_idempotency SET expires_at = $4 FROM (SELECT `+durable+`) AS durable
WHERE scope = $1 AND key = $2 AND state = 1 AND token = $3`, id.Scope, id.Key, token, now.Add(lease))
	switch {
	case err != nil:
		return fmt.Errorf("postgres: idempotency extend %s: %w", id, err)
	case tag.RowsAffected() == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Complete implements idempotency.Store. A holder whose lease has passed
// can still complete as long as no other request has claimed the row. The
// completed row keeps the token, so that a Complete sent again after its
// reply was lost finds its own work done.
func (s *IdempotencyStore) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	b, _ := resp.MarshalBinary()
	tag, err := s.db.Exec(ctx, `UPDATE yaoki_idempotency SET state = 2, response = $4, expires_at = $5 FROM (SELECT `+durable+`) AS durable
WHERE scope = $1 AND key = $2 AND state = 1 AND token = $3`, id.Scope, id.Key, token, b, now.Add(ttl))
	if err != nil {
		return fmt.Errorf("postgres: idempotency complete %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var done bool
	err = s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM yaoki_idempotency
WHERE scope = $1 AND key = $2 AND state = 2 AND token = $3)`, id.Scope, id.Key, token).Scan(&done)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: idempotency complete %s: see whether it was completed already: %w", id, err)
	case !done:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, id idempotency.ID, token string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM yaoki_idempotency
WHERE scope = $1 AND key = $2 AND state = 1 AND token = $3`, id.Scope, id.Key, token)
	if err != nil {
		return fmt.Errorf("postgres: idempotency release %s: %w", id, err)
	}
	return nil
}

// Get implements idempotency.Store.
func (s *IdempotencyStore) Get(ctx context.Context, id idempotency.ID, now time.Time) (idempotency.Record, bool, error) {
	var row rowFields
	err := s.db.QueryRow(ctx, getSQL, id.Scope, id.Key, now).Scan(&row.state, &row.fp, &row.token, &row.expires, &row.response)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return idempotency.Record{}, false, nil
	case err != nil:
		return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency get %s: %w", id, err)
	}
	rec, err := row.record()
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("postgres: idempotency get %s: %w", id, err)
	}
	return rec, true, nil
}

// DefaultCleanupBatch is how many rows Cleanup deletes per statement.
const DefaultCleanupBatch = 1000

// Cleanup deletes the records whose time had passed at now (completed
// records past their retention, records in progress
// idempotency.CompleteGrace past their lease, so that a holder that answers
// late still stores its response when nobody claimed its key meanwhile),
// DefaultCleanupBatch rows per statement so that no statement holds many
// locks, and returns how many it deleted. Run it periodically, from one
// process or several (they do not conflict).
func (s *IdempotencyStore) Cleanup(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.db.Exec(ctx, `DELETE FROM yaoki_idempotency WHERE ctid IN (
	SELECT ctid FROM yaoki_idempotency WHERE expires_at <= $1 AND (state <> 1 OR expires_at <= $3) LIMIT $2 FOR UPDATE SKIP LOCKED)`,
			now, DefaultCleanupBatch, now.Add(-idempotency.CompleteGrace))
		if err != nil {
			return total, fmt.Errorf("postgres: idempotency cleanup after %d rows: %w", total, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < DefaultCleanupBatch {
			return total, nil
		}
	}
}

type rowFields struct {
	state    *int16
	fp       []byte
	token    *string
	expires  *time.Time
	response []byte
}

func (r *rowFields) record() (idempotency.Record, error) {
	var rec idempotency.Record
	if r.state == nil || r.expires == nil {
		return rec, errors.New("bad record: no state or expiry")
	}
	switch *r.state {
	case stateInProgress:
		rec.State = idempotency.InProgress
	case stateCompleted:
		rec.State = idempotency.Completed
	default:
		return rec, fmt.Errorf("bad record: state %d", *r.state)
	}
	if len(r.fp) != len(rec.Fingerprint) {
		return rec, fmt.Errorf("bad record: fingerprint of %d bytes", len(r.fp))
	}
	copy(rec.Fingerprint[:], r.fp)
	if r.token != nil {
		rec.Token = *r.token
	}
	rec.Expires = *r.expires
	if rec.State == idempotency.Completed {
		if err := rec.Response.UnmarshalBinary(r.response); err != nil {
			return rec, err
		}
	}
	return rec, nil
}
