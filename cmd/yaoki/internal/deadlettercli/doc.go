// Package deadlettercli is the yaoki deadletter command: it shows, counts,
// requeues, deletes and redrives the dead letters that the postgres
// module's store keeps in PostgreSQL, and migrates that store's schema.
// NewCommand returns the command; docs/dead-letters.md is its manual.
package deadlettercli
