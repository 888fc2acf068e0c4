package configerr

import (
	"errors"
	"testing"
	"time"
)

var (
	errOuter = errors.New("outer: invalid configuration")
	errInner = errors.New("inner: invalid configuration")
)

func TestMessages(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Invalid(errInner, "Window", -time.Second, "≥ 0"), "inner: invalid configuration: Window: -1s out of range; want ≥ 0"},
		{Invalid(errInner, "Name", "", "a non-empty name"), "inner: invalid configuration: Name: missing; want a non-empty name"},
		{Invalid(errInner, "Client", nil, "a client"), "inner: invalid configuration: Client: missing; want a client"},
		{Unknown(errInner, "kind", "cubic", "exponential or linear"), `inner: invalid configuration: kind: "cubic" unknown; want exponential or linear`},
		{In(errOuter, "Backoff", Invalid(errInner, "Base", -time.Second, "≥ 0")), "outer: invalid configuration: Backoff.Base: -1s out of range; want ≥ 0"},
		{In(errOuter, "Policy", errors.New("bad")), "outer: invalid configuration: Policy: bad"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// An error re-rooted by In matches the outer sentinel, the inner one, and
// errors.As finds the outer *Error first.
func TestIn(t *testing.T) {
	inner := Invalid(errInner, "Base", -1, "≥ 0")
	err := In(errOuter, "Backoff", inner)
	if !errors.Is(err, errOuter) || !errors.Is(err, errInner) {
		t.Fatalf("%v matches outer %t, inner %t; want both", err, errors.Is(err, errOuter), errors.Is(err, errInner))
	}
	var e *Error
	if !errors.As(err, &e) || e.Field != "Backoff.Base" || e.Err != errOuter {
		t.Errorf("errors.As gives %+v, want the outer error on Backoff.Base", e)
	}
	if errors.Is(inner, errOuter) {
		t.Error("the inner error matches the outer sentinel: In changed it")
	}
	if In(errOuter, "Backoff", nil) != nil {
		t.Error("In of nil is not nil")
	}
}
