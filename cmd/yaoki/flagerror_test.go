package main

import "testing"

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
		if code := run(args); code != ExitUsage {
			t.Errorf("yaoki %v exited %d, want %d (bad usage)", args, code, ExitUsage)
		}
	}
}
