package main

import "errors"

// exitError carries a process exit code and an optional message through
// cobra's error return.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

// exit returns an error that makes the process exit with code, printing msg
// (if not empty) on stderr.
func exit(code int, msg string) error { return &exitError{code: code, msg: msg} }

func asExit(err error, target *interface{ ExitCode() int }) bool {
	return errors.As(err, target)
}
