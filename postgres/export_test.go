package postgres

import "context"

// Migrations is the number of migrations Migrate applies.
const Migrations = len(migrations)

// MigrateFirst applies the first n migrations only: the schema of an
// earlier release, for the tests that upgrade it.
func MigrateFirst(ctx context.Context, db DB, n int) error {
	_, err := migrate(ctx, db, migrations[:n])
	return err
}

// MigrationLock is the advisory lock that serialises Migrate.
const MigrationLock = migrationLock

// SetAtomicStep makes a call step at the named steps of each keyed request
// ("claimed", "recorded", "committed"), for the tests that stop or kill the
// process there.
func SetAtomicStep(a *Atomic, step func(name string)) { a.step = step }
