package main

import (
	"errors"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// ExitUsage, exit and usagef are package cli's, under the short names the
// commands of package main use.
const ExitUsage = cli.ExitUsage

// exit returns an error that makes the process exit with code, printing msg
// (if not empty) on stderr.
func exit(code int, msg string) error { return cli.Exit(code, msg) }

// usagef returns an error that makes the process exit with ExitUsage,
// printing the formatted message.
func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

func asExit(err error, target *interface{ ExitCode() int }) bool {
	return errors.As(err, target)
}
