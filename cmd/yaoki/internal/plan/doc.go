// Package plan is the yaoki plan command: it prints what a retry policy
// (flags or a policy document) will do before it runs, attempt by attempt:
// the waits, the worst case, the calls a failing request costs, and
// warnings about schedules that hurt a dependency. NewCommand returns the
// command; docs/cli.md is its manual.
package plan
