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
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
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
}

// migrationLock is the advisory lock that serialises concurrent Migrate
// calls (several instances starting at once).
const migrationLock = 0x79616f6b69 // "yaoki"

// Migrate creates or updates the package's tables, in one transaction:
// each migration not yet recorded in MigrationsTable is applied and
// recorded. It is safe to call at every start, from several processes at
// once (an advisory lock serialises them). The tables go to the first
// schema of the connection's search_path.
func Migrate(ctx context.Context, db DB) (err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
	name       text        PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return fmt.Errorf("postgres: migrate: create %s: %w", MigrationsTable, err)
	}
	for _, m := range migrations {
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+MigrationsTable+` WHERE name = $1)`, m.name).Scan(&done); err != nil {
			return fmt.Errorf("postgres: migrate: %s: %w", m.name, err)
		}
		if done {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("postgres: migrate: apply %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+MigrationsTable+` (name) VALUES ($1)`, m.name); err != nil {
			return fmt.Errorf("postgres: migrate: record %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}
