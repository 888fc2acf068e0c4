// Package execcli is the yaoki exec command: it runs a command again, with
// a retry policy's waits, while it fails with an exit code worth retrying,
// and exits with the last attempt's code. NewCommand returns the command;
// docs/cli.md is its manual.
package execcli
