// Package flaky is the yaoki flaky command: an HTTP server on a loopback
// port that fails on purpose (a script of answers, or answers drawn at
// given rates: 429 with Retry-After, 5xx, resets, slow answers), so that
// clients in any language can test their retries against it. NewCommand
// returns the command; docs/cli.md is its manual.
package flaky
