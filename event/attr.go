package event

import (
	"context"
	"io"
	"reflect"
	"syscall"
)

// Attribute names shared by every observer (the log/slog observer in package
// eventlog, the OpenTelemetry observer in module yaoki/otel), so that a log
// line and a metric series about the same thing carry the same names. Where
// an OpenTelemetry semantic convention exists it is used as is; the others
// live in the "yaoki." namespace, as the metrics' names do (no attribute
// name is a metric's name, nor a namespace of one: yaoki.attempt.number
// beside the metric yaoki.attempt.duration, yaoki.budget_level beside
// yaoki.budget.level).
const (
	// AttrMethod is the HTTP method (semantic convention).
	AttrMethod = "http.request.method"
	// AttrMethodOriginal is the HTTP method as sent, when AttrMethod says
	// "_OTHER" (semantic convention; in logs only).
	AttrMethodOriginal = "http.request.method_original"
	// AttrStatusCode is the HTTP response status code (semantic convention).
	AttrStatusCode = "http.response.status_code"
	// AttrServerAddress is the destination host without its port (semantic
	// convention).
	AttrServerAddress = "server.address"
	// AttrServerPort is the destination port, when the host names one
	// (semantic convention).
	AttrServerPort = "server.port"
	// AttrErrorType is a low-cardinality name for the error: see
	// Event.ErrorType (semantic convention).
	AttrErrorType = "error.type"
	// AttrErrorMessage is the error's text, in logs only (semantic
	// convention; never a metric attribute: unbounded cardinality).
	AttrErrorMessage = "error.message"

	// AttrComponent is the reporting package: Event.Component.
	AttrComponent = "yaoki.component"
	// AttrName is the name of the breaker, budget or throttle: Event.Name.
	AttrName = "yaoki.name"
	// AttrAttempt is the attempt number from 1 (attempts made, for a
	// give-up): Event.Attempt.
	AttrAttempt = "yaoki.attempt.number"
	// AttrOutcome is how an attempt ended: Event.Outcome.String().
	AttrOutcome = "yaoki.outcome"
	// AttrStatusClass is the status code's class, "2xx" to "5xx":
	// Event.StatusClass.
	AttrStatusClass = "yaoki.status_class"
	// AttrWait is the wait before the next attempt (or, for a breaker's
	// refusal, until its next probe): Event.Wait, in seconds (the unit is
	// in the name, so that a JSON log reads 0.025, not 25000000).
	AttrWait = "yaoki.wait_seconds"
	// AttrWaitSource is where the wait came from, "backoff", "server" or
	// "rate_limit": Event.Source.String().
	AttrWaitSource = "yaoki.wait.source"
	// AttrReason is why a call gave up, a retry was refused or an
	// idempotent request was refused, as a snake_case word: Event.Reason.
	AttrReason = "yaoki.reason"
	// AttrDuration is the attempt's duration, or the time spent for a
	// give-up: Event.Duration, in seconds.
	AttrDuration = "yaoki.duration_seconds"
	// AttrStateFrom and AttrStateTo are a breaker's states before and
	// after a transition: Event.From and Event.To.
	AttrStateFrom = "yaoki.state.from"
	AttrStateTo   = "yaoki.state.to"
	// AttrLevel is a budget's level when it refused: Event.Level.
	AttrLevel = "yaoki.budget_level"
	// AttrKey is the Idempotency-Key of a replay or conflict, in logs
	// only: Event.Key.
	AttrKey = "yaoki.idempotency.key"
)

// Breaker states as Event.From and Event.To name them.
const (
	StateClosed   = "closed"
	StateOpen     = "open"
	StateHalfOpen = "half_open"
)

// MethodOther is what KnownMethod returns for a method it does not know
// (semantic convention).
const MethodOther = "_OTHER"

// KnownMethod returns e.Method if it is one of the methods the semantic
// conventions know (those of RFC 9110, PATCH of RFC 5789, and QUERY),
// MethodOther for any other (methods are case-sensitive: "get" is not
// known), and "" when there is none. It allocates nothing: a server's
// clients cannot give the http.request.method attribute unbounded values.
func (e Event) KnownMethod() string {
	switch e.Method {
	case "", "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY":
		return e.Method
	}
	return MethodOther
}

// StatusClass returns the class of e.Status: "1xx", "2xx", "3xx", "4xx" or
// "5xx", and "" when there is no status (0) or it is out of range.
func (e Event) StatusClass() string {
	switch e.Status / 100 {
	case 1:
		return "1xx"
	case 2:
		return "2xx"
	case 3:
		return "3xx"
	case 4:
		return "4xx"
	case 5:
		return "5xx"
	}
	return ""
}

// Server splits e.Host into the server.address and server.port attributes:
// "example.com:8443" gives ("example.com", 8443), "[::1]:80" gives ("::1",
// 80), and a host without a port (or with one that is not a number in
// [1, 65535]) gives the host and 0. It allocates nothing.
func (e Event) Server() (address string, port int) {
	h := e.Host
	var rest string
	switch i := lastColon(h); {
	case len(h) > 0 && h[0] == '[':
		end := indexByte(h, ']')
		if end < 0 {
			return h, 0
		}
		address, rest = h[1:end], h[end+1:]
		if indexByte(address, '[') >= 0 {
			return h, 0
		}
		if rest == "" {
			return address, 0
		}
		if rest[0] != ':' {
			return h, 0
		}
		rest = rest[1:]
	case i < 0 || indexByte(h, ':') != i:
		return h, 0 // no port, or a bare IPv6 address
	case indexByte(h, '[') >= 0 || indexByte(h, ']') >= 0:
		return h, 0 // brackets only around a whole IPv6 address
	default:
		address, rest = h[:i], h[i+1:]
	}
	if len(rest) == 0 || len(rest) > 5 {
		return address, 0
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c < '0' || c > '9' {
			return address, 0
		}
		port = port*10 + int(c-'0')
	}
	if port > 65535 {
		return address, 0
	}
	return address, port
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}

// Error types that ErrorType returns for common causes.
const (
	ErrorTimeout           = "timeout"            // a deadline or an attempt timeout, or an error whose Timeout() is true
	ErrorCancelled         = "cancelled"          // context.Canceled
	ErrorConnectionRefused = "connection_refused" // ECONNREFUSED
	ErrorConnectionReset   = "connection_reset"   // ECONNRESET or EPIPE
	ErrorEOF               = "eof"                // io.EOF or io.ErrUnexpectedEOF: the peer closed the connection
	ErrorOther             = "_OTHER"             // semantic convention's fallback
)

// ErrorType returns a low-cardinality name for what went wrong, for the
// error.type attribute of the OpenTelemetry semantic conventions:
//
//   - "" when nothing did (no error and a status below 400);
//   - the status code as a string ("503") when the server answered with a
//     status ≥ 400, whatever the error;
//   - the answer of the first error in the chain that has a method
//     ErrorType() string returning a non-empty name (so that an
//     application's error can name itself, e.g. "exit_1");
//   - ErrorTimeout, ErrorCancelled, ErrorConnectionRefused,
//     ErrorConnectionReset or ErrorEOF when the error's chain holds such a
//     cause;
//   - otherwise the Go type of the innermost error of the chain (following
//     the first branch of a joined error), e.g. "*net.DNSError", or
//     ErrorOther for errors made by errors.New and fmt.Errorf, whose type
//     says nothing.
//
// It allocates nothing.
func (e Event) ErrorType() string {
	if e.Status >= 400 && e.Status <= 599 {
		return statusText(e.Status)
	}
	if e.Err == nil {
		return ""
	}
	err := e.Err
	for depth := 0; depth < 64; depth++ {
		switch err {
		case context.Canceled:
			return ErrorCancelled
		case context.DeadlineExceeded:
			return ErrorTimeout
		case io.EOF, io.ErrUnexpectedEOF:
			return ErrorEOF
		}
		switch x := err.(type) {
		case interface{ ErrorType() string }:
			if t := x.ErrorType(); t != "" {
				return t
			}
		case syscall.Errno:
			switch x {
			case syscall.ECONNREFUSED:
				return ErrorConnectionRefused
			case syscall.ECONNRESET, syscall.EPIPE:
				return ErrorConnectionReset
			case syscall.ETIMEDOUT:
				return ErrorTimeout
			}
		case interface{ Timeout() bool }:
			if x.Timeout() {
				return ErrorTimeout
			}
		}
		next := unwrapFirst(err)
		if next == nil {
			break
		}
		err = next
	}
	switch name := reflect.TypeOf(err).String(); name {
	case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return ErrorOther
	default:
		return name
	}
}

// unwrapFirst returns the error err wraps, or the first of those it joins.
func unwrapFirst(err error) error {
	switch x := err.(type) {
	case interface{ Unwrap() error }:
		return x.Unwrap()
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			if e != nil {
				return e
			}
		}
	}
	return nil
}

// statusText returns code, in [400, 599], in decimal without allocating:
// a slice of statusCodes.
func statusText(code int) string {
	i := (code - 400) * 3
	return statusCodes[i : i+3]
}

// statusCodes holds "400401...599": 200 codes of three digits each.
const statusCodes = "" +
	"400401402403404405406407408409410411412413414415416417418419420421422423424425426427428429430431432433434435436437438439440441442443444445446447448449" +
	"450451452453454455456457458459460461462463464465466467468469470471472473474475476477478479480481482483484485486487488489490491492493494495496497498499" +
	"500501502503504505506507508509510511512513514515516517518519520521522523524525526527528529530531532533534535536537538539540541542543544545546547548549" +
	"550551552553554555556557558559560561562563564565566567568569570571572573574575576577578579580581582583584585586587588589590591592593594595596597598599"
