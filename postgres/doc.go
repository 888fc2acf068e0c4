// Package postgres keeps the toolkit's durable state in PostgreSQL:
// IdempotencyStore holds the records of the idempotency middleware in a
// table that Migrate creates, with every transition done atomically by the
// database (INSERT ... ON CONFLICT, conditional UPDATE and DELETE), so that
// a fleet of processes shares them and they survive restarts. Atomic goes
// further for handlers whose work is in the same database: the handler's
// statements (through Tx) and the request's record commit in one
// transaction, so that a process that dies at any step leaves either both
// or neither. DeadLetters is a deadletter.Store in another table of the same
// migration history: work that ran out of retries, claimed by redrivers
// across processes with FOR UPDATE SKIP LOCKED.
//
// The package is a module of its own (github.com/yaoki-go/yaoki/postgres),
// so that users of the root module never download a database driver. It
// uses github.com/jackc/pgx/v5: a *pgxpool.Pool is the usual DB.
package postgres
