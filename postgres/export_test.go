package postgres

import "context"

// Migrations is the number of migrations Migrate applies.
const Migrations = len(migrations)

// MigrateFirst applies the first n migrations only: the schema of an
// earlier release, for the tests that upgrade it.
func MigrateFirst(ctx context.Context, db DB, n int) error {
	return migrate(ctx, db, migrations[:n])
}
