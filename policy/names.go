package policy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/yaoki-go/yaoki/retry"
)

// Error names, as written in ErrorEquals. See the package comment for what
// each one matches.
const (
	All         = "States.ALL"
	TaskFailed  = "States.TaskFailed"
	Timeout     = "States.Timeout"
	Permissions = "States.Permissions"
	HTTPSocket  = "States.Http.Socket"
	NetTimeout  = "Net.Timeout"
	NetReset    = "Net.Reset"
	NetRefused  = "Net.Refused"
	NetDNS      = "Net.DNS"
)

// statesNames are the error names Step Functions defines. The ones not
// given a meaning here match only an error whose ErrorName returns them.
var statesNames = []string{
	All, "States.BranchFailed", dataLimitExceeded, "States.ExceedToleratedFailureThreshold",
	"States.HeartbeatTimeout", HTTPSocket, "States.IntrinsicFailure", "States.ItemReaderFailed",
	"States.NoChoiceMatched", "States.ParameterPathFailure", Permissions, "States.QueryEvaluationError",
	"States.ResultPathMatchFailure", "States.ResultWriterFailed", runtimeError, TaskFailed, Timeout,
}

var netNames = []string{NetDNS, NetRefused, NetReset, NetTimeout}

// The terminal error names that States.ALL does not match.
const (
	dataLimitExceeded = "States.DataLimitExceeded"
	runtimeError      = "States.Runtime"
)

// Named is implemented by errors that carry their own name, such as
// "Lambda.ServiceException" or an application's "Orders.Conflict": a
// retrier or catcher whose ErrorEquals lists that name matches them. A name
// in a namespace this package owns (HTTP., Net., States.) is matched by its
// meaning here, so an error named "HTTP.503" is an HTTP 503.
type Named interface {
	ErrorName() string
}

// StatusCoder is implemented by errors that stand for an HTTP answer; an
// error with StatusCode 503 is matched by HTTP.503 and HTTP.5XX.
type StatusCoder interface {
	StatusCode() int
}

// Name returns the most specific name of err that ErrorEquals can list:
// States.Timeout for an attempt that ran past TimeoutSeconds (whatever the
// attempt's own error: a command that the timeout stopped exits with a
// code of its own, as Step Functions names a task that timed out
// States.Timeout), the error's own ErrorName, HTTP.<status>, Net.Timeout,
// Net.Reset, Net.Refused, Net.DNS, and States.TaskFailed for every other
// error. Name(nil) is "".
func Name(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, retry.ErrAttemptTimeout) {
		return Timeout
	}
	if n, ok := as[Named](err); ok {
		if name := n.ErrorName(); name != "" {
			return name
		}
	}
	if code := statusOf(err); code > 0 {
		return "HTTP." + strconv.Itoa(code)
	}
	if s := netName(err); s != "" {
		return s
	}
	return TaskFailed
}

func statusOf(err error) int {
	if sc, ok := as[StatusCoder](err); ok {
		return sc.StatusCode()
	}
	return 0
}

// netName classifies network failures; "" when err is none.
func netName(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return NetRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return NetReset
	case isDNSFailure(err):
		return NetDNS
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return NetTimeout
	}
	if ne, ok := as[net.Error](err); ok && ne.Timeout() {
		return NetTimeout
	}
	return ""
}

// isDNSFailure reports whether err is a failed name lookup that did not
// time out.
func isDNSFailure(err error) bool {
	dns, ok := as[*net.DNSError](err)
	return ok && !dns.IsTimeout
}

// Matches reports whether the ErrorEquals entry name matches err. It is
// how retriers and catchers are chosen; see the package comment for each
// name's meaning.
func Matches(name string, err error) bool {
	if err == nil {
		return false
	}
	return infoOf(err).matches(name)
}

// info is what matching needs to know of an error, computed once.
type info struct {
	name string // Name(err)
	code int    // HTTP status, 0 if none
}

func infoOf(err error) info {
	in := info{name: Name(err), code: statusOf(err)}
	if in.code == 0 && strings.HasPrefix(in.name, "HTTP.") {
		in.code, _ = strconv.Atoi(in.name[len("HTTP."):])
	}
	return in
}

func (in info) matches(name string) bool {
	own := in.name
	if name == own {
		return true
	}
	switch name {
	case All:
		// As in Step Functions, the wildcard does not catch the terminal
		// errors States.DataLimitExceeded and States.Runtime.
		return own != dataLimitExceeded && own != runtimeError
	case TaskFailed:
		return !isTimeout(own)
	case Timeout, NetTimeout:
		return isTimeout(own)
	case Permissions:
		return in.code == 401 || in.code == 403
	case HTTPSocket:
		return strings.HasPrefix(own, "Net.")
	}
	if c, ok := statusClass(name); ok {
		return in.code/100 == c
	}
	return false
}

func isTimeout(name string) bool { return name == Timeout || name == NetTimeout }

// statusClass parses "HTTP.5XX" into 5.
func statusClass(name string) (int, bool) {
	if len(name) == len("HTTP.5XX") && strings.HasPrefix(name, "HTTP.") && name[6:] == "XX" &&
		name[5] >= '1' && name[5] <= '5' {
		return int(name[5] - '0'), true
	}
	return 0, false
}

// checkName returns "" if name may appear in ErrorEquals, or what is wrong
// with it. Names in the HTTP., Net., States. and Exit. namespaces must be ones
// this package knows (a typo there would silently match nothing); other
// names are the application's own and are accepted as they are.
func checkName(name string) string {
	switch {
	case name == "":
		return "an error name is empty: write a name such as HTTP.503, Net.Timeout or States.ALL"
	case name != strings.TrimSpace(name) || strings.ContainsFunc(name, unicode.IsControl):
		// No error is named so: such a name would silently match nothing.
		return "error name " + quote(name) + " has a space at an end or a control character: write the name alone, such as \"HTTP.503\""
	case strings.HasPrefix(name, "HTTP."):
		rest := name[len("HTTP."):]
		if _, ok := statusClass(name); ok {
			return ""
		}
		if len(rest) == 3 {
			if code, err := strconv.Atoi(rest); err == nil && code >= 100 && code <= 599 {
				return ""
			}
		}
		return "unknown HTTP error name " + quote(name) + ": want HTTP.<status> with a status from 100 to 599 (HTTP.503) or a class HTTP.1XX to HTTP.5XX (upper-case XX)"
	case strings.HasPrefix(name, "Exit."):
		// The exit codes of commands that yaoki exec runs: Exit.0 to Exit.255.
		rest := name[len("Exit."):]
		if code, err := strconv.Atoi(rest); err == nil && code >= 0 && code <= 255 && strconv.Itoa(code) == rest {
			return ""
		}
		return "unknown exit error name " + quote(name) + ": want Exit.<code> with an exit code from 0 to 255, such as Exit.75"
	case strings.HasPrefix(name, "Net."):
		for _, n := range netNames {
			if n == name {
				return ""
			}
		}
		return "unknown network error name " + quote(name) + ": want one of " + strings.Join(netNames, ", ")
	case strings.HasPrefix(name, "States."):
		for _, n := range statesNames {
			if n == name {
				return ""
			}
		}
		msg := "unknown Step Functions error name " + quote(name)
		for _, n := range statesNames {
			if strings.EqualFold(n, name) {
				return msg + ": did you mean " + n + "? (names are case-sensitive)"
			}
		}
		return msg + ": want one of " + strings.Join(statesNames, ", ")
	}
	for _, prefix := range []string{"http.", "net.", "states.", "exit."} {
		if strings.HasPrefix(strings.ToLower(name), prefix) {
			return "error name " + quote(name) + " looks like a built-in name in the wrong case: write HTTP., Net., States. or Exit. as shown"
		}
	}
	return ""
}

// as is errors.As for a target of type T, without its cost when no error
// in err's chain has an As method (every error of the standard library and
// of the toolkit): a type assertion on each, allocating nothing. From the
// first error that has one, errors.As decides, so that the method is
// asked as errors.As would ask it.
func as[T any](err error) (T, bool) {
	var zero T
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		if _, ok := err.(interface{ As(any) bool }); ok {
			var t T
			if errors.As(err, &t) {
				return t, true
			}
			return zero, false
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if t, ok := as[T](e); ok {
					return t, true
				}
			}
			return zero, false
		default:
			return zero, false
		}
	}
	return zero, false
}
