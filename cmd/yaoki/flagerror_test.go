package main

import (
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// TestBadFlagValueIsUsageError: a flag value that does not parse exits with
// the bad-usage code (and points at --help), for every subcommand.
func TestBadFlagValueIsUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--max-attempts", "x"},
		{"exec", "--max-attempts", "x", "--", "true"},
		{"http", "--max-attempts", "x", "http://127.0.0.1:1/"},
		{"deadletter", "list", "--limit", "x", "--postgres", "postgres://127.0.0.1:1/x"},
		{"deadletter", "redrive", "--queue", "q", "--lease", "soon", "--postgres", "postgres://127.0.0.1:1/x"},
	} {
		if code := run(args); code != cli.ExitUsage {
			t.Errorf("yaoki %v exited %d, want %d (bad usage)", args, code, cli.ExitUsage)
		}
	}
}

// TestSimZeroIsRefused: a sim flag for which 0 means nothing (no clients, no
// time) is refused as bad usage instead of being read as the default; one
// for which 0 is meaningful (--p 0, --hop-sd 0) is accepted.
func TestSimZeroIsRefused(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"sim", "outage", "--clients", "0"},
		{"sim", "outage", "--clients", "10,0", "--p", "1"},
		{"sim", "outage", "--total-rate", "0"},
		{"sim", "herd", "--hop-mean", "0s"},
		{"sim", "collapse", "--width", "0s,5s"},
		{"sim", "collapse", "--peak", "0"},
		{"sim", "tail", "--fanout", "0"},
		{"sim", "herd", "--base", "0"},
	} {
		if code := run(append(args, "--out", out)); code != cli.ExitUsage {
			t.Errorf("yaoki %v exited %d, want %d (bad usage)", args, code, cli.ExitUsage)
		}
	}
	if code := run([]string{"sim", "herd", "--clients", "3", "--hop-sd", "0", "--runs", "1", "--out", out, "--format", "csv"}); code != 0 {
		t.Errorf("yaoki sim herd --hop-sd 0 exited %d, want 0 (a spread of 0 is meaningful)", code)
	}
}
