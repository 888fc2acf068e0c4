// Package simcli is the yaoki sim command: it runs the scenarios of
// package sim (herd, outage, collapse, tail, ratelimit) from the command
// line, with the published policies, yaoki's defaults and the user's own
// policy (flags or a policy document), and prints tables (or CSV, JSON)
// and writes a report folder of plots with an index.html. NewCommand
// returns the command; docs/simulator.md is its manual.
package simcli
