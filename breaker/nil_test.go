package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
)

// TestNilBreakerAllows: a nil *Breaker (a guard left unset, or the result
// of a New that failed handed on as an interface) allows every call and
// records nothing, as a nil throttle, bulkhead or budget does, instead of
// panicking at the first call of every request.
func TestNilBreakerAllows(t *testing.T) {
	var b *breaker.Breaker
	now := time.Now()
	tk, err := b.AllowAt(now, true)
	if err != nil {
		t.Fatalf("AllowAt = %v, want allowed", err)
	}
	b.DoneAt(now, tk, time.Second, errors.New("boom"))
	calls := 0
	if err := b.Execute(t.Context(), func(context.Context) error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("Execute = %v after %d calls, want fn called once", err, calls)
	}
	p, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow = %v, want allowed", err)
	}
	p.Done(errors.New("boom"))
	if s := b.StateAt(now); s != breaker.Closed || b.State() != breaker.Closed {
		t.Fatalf("state %v, want closed", s)
	}
	if _, open := b.OpenUntil(now); open || b.Trips() != 0 || b.DoubleReports() != 0 || b.Name() != "" {
		t.Fatal("a nil breaker reports itself open, tripped, named or double-reported")
	}
}
