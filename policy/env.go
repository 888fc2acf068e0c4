package policy

import (
	"strconv"
	"strings"

	"github.com/yaoki-go/yaoki/internal/enum"
)

// Environment variables that override a document, in the way the AWS SDKs
// read AWS_MAX_ATTEMPTS and AWS_RETRY_MODE.
const (
	// EnvMaxAttempts sets MaxTotalAttempts: attempts of a call, counting
	// the first (1 means no retry).
	EnvMaxAttempts = "YAOKI_MAX_ATTEMPTS"
	// EnvRetryMode sets Mode: standard, adaptive or off.
	EnvRetryMode = "YAOKI_RETRY_MODE"
)

// ApplyEnv overrides d with the environment variables YAOKI_MAX_ATTEMPTS
// and YAOKI_RETRY_MODE, read through lookup (pass os.LookupEnv; tests pass
// a map's lookup). A variable that is unset or empty changes nothing. A
// value that cannot be used is an error naming the variable, its value and
// what is accepted, and leaves d unchanged.
//
// YAOKI_MAX_ATTEMPTS counts attempts including the first, like
// AWS_MAX_ATTEMPTS: it bounds the whole call whatever the retriers'
// MaxAttempts say (it cannot raise a retrier's own limit).
func (d *Document) ApplyEnv(lookup func(string) (string, bool)) error {
	total, mode := d.MaxTotalAttempts, d.Mode
	if v, ok := lookup(EnvMaxAttempts); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxMaxAttempts {
			return &Error{Path: "$" + EnvMaxAttempts, Msg: quote(v) + " is not a number of attempts: want an integer from 1 to 99999999 (attempts, counting the first; 1 means no retry)"}
		}
		total = n
	}
	if v, ok := lookup(EnvRetryMode); ok && strings.TrimSpace(v) != "" {
		m, ok := ParseMode(strings.ToLower(strings.TrimSpace(v)))
		if !ok {
			want := enum.List(modeNames[:])
			msg := quote(v) + " is not a retry mode: want " + want
			if strings.EqualFold(strings.TrimSpace(v), "legacy") {
				msg = quote(v) + ": legacy is each AWS SDK's own older behaviour and has no equivalent here: want " + want
			}
			return &Error{Path: "$" + EnvRetryMode, Msg: msg}
		}
		mode = m
	}
	d.MaxTotalAttempts, d.Mode = total, mode
	return nil
}
