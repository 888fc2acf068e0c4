// Package cli holds what the yaoki command's subcommands share: an error
// that carries the process's exit code through cobra, the code of a
// command line that cannot be used as given, what a flag accepts when its
// value does not parse, the command's version, the plural of its messages
// and what counts as a timeout. Its functions are
// safe for concurrent use.
package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/yaoki-go/yaoki/retry"
)

// ExitUsage is the exit code for a command line that could not be used as
// given (unknown flag, bad value, missing argument).
const ExitUsage = 2

// ExitError carries a process exit code and an optional message through
// cobra's error return.
type ExitError struct {
	Code int
	Msg  string // written on stderr after "yaoki: "; "" writes nothing
}

// Error returns the message.
func (e *ExitError) Error() string { return e.Msg }

// ExitCode returns the code the process exits with.
func (e *ExitError) ExitCode() int { return e.Code }

// Exit returns an error that makes the process exit with code, printing
// msg (if not empty) on stderr.
func Exit(code int, msg string) error { return &ExitError{Code: code, Msg: msg} }

// Usagef returns an error that makes the process exit with ExitUsage,
// printing the message formatted as fmt.Sprintf does.
func Usagef(format string, args ...any) error {
	return Exit(ExitUsage, fmt.Sprintf(format, args...))
}

// Version returns the module version the binary was built from
// ("(devel)" for a build inside the repository), as the Go toolchain
// stamped it.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}

// Plural is "s" unless n is 1, for messages that count things.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// IsTimeout reports whether err is a timeout: an attempt timeout, a
// connect timeout, a deadline (yaoki http exits 28 for one, yaoki proxy
// answers 504).
func IsTimeout(err error) bool {
	if errors.Is(err, retry.ErrAttemptTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
