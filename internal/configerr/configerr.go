// Package configerr builds the error that every package of the toolkit returns
// for a configuration it does not accept, so that all of them read alike:
//
//	PKG: invalid configuration: FIELD: VALUE out of range; want WHAT IS ACCEPTED
//
// Each package exports one sentinel, ErrInvalidConfig, whose text is
// "PKG: invalid configuration"; the *Error built here starts with that text
// and matches it with errors.Is. The type itself stays internal: callers
// match the sentinel and read the message, which names the field, the value
// found and what is accepted.
package configerr

import (
	"errors"
	"fmt"
)

// Error is one configuration field that a package does not accept.
type Error struct {
	// Err is the package's sentinel ("PKG: invalid configuration"):
	// errors.Is(e, Err) is true and the message starts with its text.
	Err error
	// Field names the field as the caller writes it: "Window",
	// "ShareConfig.Ratio", "Policy.Backoff.Base".
	Field string
	// Value is the value found; nil or "" means the field is missing.
	Value any
	// Problem says what is wrong with Value; "" means "out of range".
	Problem string
	// Want says what is accepted, in words.
	Want string
	// Cause is the error of an inner package that this one re-roots (see
	// In), or nil; errors.Is and errors.As see through to it.
	Cause error
}

// Invalid returns the error for a field whose value is out of range, as
// sentinel's package reports it.
func Invalid(sentinel error, field string, value any, want string) error {
	return &Error{Err: sentinel, Field: field, Value: value, Want: want}
}

// Unknown returns the error for a name that is not one of those accepted.
func Unknown(sentinel error, field, name, want string) error {
	return &Error{Err: sentinel, Field: field, Value: name, Problem: "unknown", Want: want}
}

// In re-roots err, an inner package's configuration error about the value
// of field, as sentinel's package reports it: the field gets field as its
// prefix ("Backoff" + "Base" gives "Backoff.Base") and the error matches
// both sentinel and what err matches. In returns nil for a nil err.
func In(sentinel error, field string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return &Error{Err: sentinel, Field: field, Value: err, Problem: "not accepted", Want: "a valid " + field, Cause: err}
	}
	r := *e
	r.Err, r.Cause = sentinel, err
	if e.Field != "" {
		r.Field = field + "." + e.Field
	} else {
		r.Field = field
	}
	return &r
}

// Error returns "PKG: invalid configuration: FIELD: VALUE PROBLEM; want WANT".
func (e *Error) Error() string {
	var value string
	switch v := e.Value.(type) {
	case nil:
		return fmt.Sprintf("%v: %s: missing; want %s", e.Err, e.Field, e.Want)
	case string:
		if v == "" {
			return fmt.Sprintf("%v: %s: missing; want %s", e.Err, e.Field, e.Want)
		}
		value = fmt.Sprintf("%q", v)
	case error:
		return fmt.Sprintf("%v: %s: %v", e.Err, e.Field, v)
	default:
		value = fmt.Sprint(v)
	}
	problem := e.Problem
	if problem == "" {
		problem = "out of range"
	}
	return fmt.Sprintf("%v: %s: %s %s; want %s", e.Err, e.Field, value, problem, e.Want)
}

// Unwrap returns the package's sentinel and, when there is one, the inner
// package's error.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}
