package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafeServer matches the error of CheckServer when a PostgreSQL
// server may lose what the stores committed.
var ErrUnsafeServer = errors.New("postgres: the server may lose what the stores commit")

// UnsafeServerError is what CheckServer found wrong with a server.
// errors.Is(err, ErrUnsafeServer) is true.
type UnsafeServerError struct {
	// FsyncOff is true when fsync is off: PostgreSQL does not wait for its
	// writes to reach the disk, so a crash of the machine loses commits
	// it acknowledged (a claim, a completed record: a retry then runs its
	// request again), or corrupts the cluster.
	FsyncOff bool
	// FullPageWritesOff is true when full_page_writes is off: a crash in
	// the middle of a page's write can leave the table corrupt.
	FullPageWritesOff bool
}

// Error lists each setting of the server that makes the stores unsafe,
// and the value it needs.
func (e *UnsafeServerError) Error() string {
	var why []string
	if e.FsyncOff {
		why = append(why, "fsync is off, so a crash of the machine loses acknowledged commits: set fsync = on")
	}
	if e.FullPageWritesOff {
		why = append(why, "full_page_writes is off, so a crash while a page is written can corrupt the table: set full_page_writes = on")
	}
	return "postgres: the server may lose what the stores commit: " + strings.Join(why, "; ")
}

// Is matches ErrUnsafeServer.
func (e *UnsafeServerError) Is(target error) bool { return target == ErrUnsafeServer }

// CheckServer asks the server that db reaches whether it keeps what the
// stores (IdempotencyStore, Atomic, DeadLetterStore) commit through a
// crash: fsync and full_page_writes on, their defaults.
// synchronous_commit needs no check: the stores' own writes commit with
// at least "local" whatever it is. It returns nil when the server does,
// an *UnsafeServerError (matching ErrUnsafeServer) naming what it found
// when it does not, and another error when it could not ask. Call it at
// start and log what it returns: the stores work on an unsafe server, but
// their promises (one execution per key, no letter lost) hold only as
// long as the server keeps its commits.
func CheckServer(ctx context.Context, db DB) error {
	var fsync, fpw string
	if err := db.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('full_page_writes')`).Scan(&fsync, &fpw); err != nil {
		return fmt.Errorf("postgres: checking the server's fsync and full_page_writes: %w", err)
	}
	e := &UnsafeServerError{FsyncOff: fsync != "on", FullPageWritesOff: fpw != "on"}
	if e.FsyncOff || e.FullPageWritesOff {
		return e
	}
	return nil
}

// Check is CheckServer for the server of the store.
func (s *IdempotencyStore) Check(ctx context.Context) error { return CheckServer(ctx, s.db) }
