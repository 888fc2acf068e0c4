package policy

import (
	"errors"
	"fmt"
	"net"
	"testing"
)

type codeErr struct{ code int }

func (e codeErr) Error() string   { return fmt.Sprint("status ", e.code) }
func (e codeErr) StatusCode() int { return e.code }

// asCode has an As method that answers for a StatusCoder target, as an
// error type of another library may.
type asCode struct{ err error }

func (e asCode) Error() string { return "wrapped: " + e.err.Error() }
func (e asCode) Unwrap() error { return e.err }
func (e asCode) As(target any) bool {
	if p, ok := target.(*StatusCoder); ok {
		*p = codeErr{418}
		return true
	}
	return false
}

// as finds what errors.As finds, in every shape of chain: plain, wrapped,
// joined, behind an As method, and absent.
func TestAsIsErrorsAs(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "x.example"}
	chains := []error{
		errors.New("plain"),
		codeErr{503},
		fmt.Errorf("get: %w", codeErr{429}),
		errors.Join(errors.New("a"), fmt.Errorf("b: %w", codeErr{500})),
		asCode{errors.New("inner")},
		fmt.Errorf("outer: %w", asCode{codeErr{502}}),
		errors.Join(asCode{errors.New("x")}, codeErr{504}),
		fmt.Errorf("lookup: %w", dns),
		fmt.Errorf("%w and %w", errors.New("a"), dns),
	}
	for _, err := range chains {
		var want StatusCoder
		wantOK := errors.As(err, &want)
		got, ok := as[StatusCoder](err)
		if ok != wantOK || (ok && got.StatusCode() != want.StatusCode()) {
			t.Errorf("%q: as[StatusCoder] = %v, %v; errors.As = %v, %v", err, got, ok, want, wantOK)
		}
		var wantDNS *net.DNSError
		wantOK = errors.As(err, &wantDNS)
		gotDNS, ok := as[*net.DNSError](err)
		if ok != wantOK || gotDNS != wantDNS {
			t.Errorf("%q: as[*net.DNSError] = %v, %v; errors.As = %v, %v", err, gotDNS, ok, wantDNS, wantOK)
		}
	}
	if _, ok := as[StatusCoder](nil); ok {
		t.Error("as(nil) found a StatusCoder")
	}
}
