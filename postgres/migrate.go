package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the package needs of a database handle: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it. A pool is safe for concurrent use; a
// single *pgx.Conn is not.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) // as pgx's
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)         // as pgx's
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row                // as pgx's
	Begin(ctx context.Context) (pgx.Tx, error)                                    // as pgx's
}

// MigrationsTable records which migrations have been applied.
const MigrationsTable = "yaoki_migrations"

// migration is one schema change, applied once, in order.
type migration struct {
	name string
	sql  string
}

// migrations: append only, never edit one that was released.
var migrations = [...]migration{
	{"0001_idempotency", `
CREATE TABLE yaoki_idempotency (
	scope       text        NOT NULL,
	key         text        NOT NULL,
	state       smallint    NOT NULL CHECK (state IN (1, 2)), -- 1 in progress, 2 completed
	fingerprint bytea       NOT NULL,
	token       text,                                         -- the holder, while in progress
	expires_at  timestamptz NOT NULL,                         -- end of the lease, or of the retention
	response    bytea,                                        -- idempotency.Response's binary form, once completed
	created_at  timestamptz NOT NULL,
	PRIMARY KEY (scope, key)
);
CREATE INDEX yaoki_idempotency_expires_at ON yaoki_idempotency (expires_at);
`},
	// IDs compare bytewise (COLLATE "C"), as Go compares strings: List's
	// pages come in the order deadletter.Memory's do. The partial index
	// serves Claim: a queue's unparked letters, earliest due first.
	{"0002_dead_letters", `
CREATE TABLE yaoki_dead_letters (
	id         text COLLATE "C" PRIMARY KEY,
	queue      text COLLATE "C" NOT NULL,
	key        text        NOT NULL,
	payload    bytea,                 -- NULL for a nil payload, so that Get gives back nil
	reason     text        NOT NULL,
	error      text        NOT NULL,
	attempts   integer     NOT NULL CHECK (attempts >= 0),
	redrives   integer     NOT NULL CHECK (redrives >= 0),
	created_at timestamptz NOT NULL,
	due_at     timestamptz NOT NULL,
	parked     boolean     NOT NULL,
	token      text,                  -- the claim that holds the letter, if any
	lease_end  timestamptz,           -- when that claim ends
	CHECK ((token IS NULL) = (lease_end IS NULL))
);
CREATE INDEX yaoki_dead_letters_claim ON yaoki_dead_letters (queue, due_at, id) WHERE NOT parked;
`},
}

// migrationLock is the advisory lock that serialises concurrent Migrate
// calls (several instances starting at once).
const migrationLock = 0x79616f6b69 // "yaoki"

// Migrate creates or updates the package's tables, in one transaction:
// each migration not yet recorded in MigrationsTable is applied and
// recorded. It is safe to call at every start, from several processes at
// once (an advisory lock serialises them). The tables go to the first
// schema of the connection's search_path.
func Migrate(ctx context.Context, db DB) error {
	_, err := migrate(ctx, db, migrations[:])
	return err
}

// MigrateApplied is Migrate, returning the names of the migrations that
// this call applied, in order: none when the database had them all, or
// when another process running Migrate at the same time applied them first
// (a tool that reads the applied names before Migrate and after it would
// tell both processes that they applied them).
func MigrateApplied(ctx context.Context, db DB) (applied []string, err error) {
	return migrate(ctx, db, migrations[:])
}

// migrate applies the migrations of ms not yet applied and returns their
// names.
func migrate(ctx context.Context, db DB, ms []migration) (applied []string, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return nil, fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
	name       text        PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return nil, fmt.Errorf("postgres: migrate: create %s: %w", MigrationsTable, err)
	}
	for _, m := range ms {
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+MigrationsTable+` WHERE name = $1)`, m.name).Scan(&done); err != nil {
			return nil, fmt.Errorf("postgres: migrate: %s: %w", m.name, err)
		}
		if done {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return nil, fmt.Errorf("postgres: migrate: apply %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+MigrationsTable+` (name) VALUES ($1)`, m.name); err != nil {
			return nil, fmt.Errorf("postgres: migrate: record %s: %w", m.name, err)
		}
		applied = append(applied, m.name)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return applied, nil
}
