package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func TestScript(t *testing.T) {
	e1, e2 := errors.New("one"), errors.New("two")
	s := retrytest.Script(e1, e2)
	fn := s.Func()
	ctx := context.Background()
	got := []error{fn(ctx), fn(ctx), fn(ctx), fn(ctx)}
	if got[0] != e1 || got[1] != e2 || got[2] != nil || got[3] != nil || s.Calls() != 4 {
		t.Errorf("script returned %v after %d calls", got, s.Calls())
	}
}

func TestScriptConcurrent(t *testing.T) {
	s := retrytest.Script(errors.New("x"))
	fn := s.Func()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { _ = fn(context.Background()) })
	}
	wg.Wait()
	if s.Calls() != 50 {
		t.Errorf("Calls = %d, want 50", s.Calls())
	}
}

func TestNoWaitKeepsDecisions(t *testing.T) {
	// A hint over MaxRetryAfter still ends the loop; NoWait only skips waits.
	p, waits := retrytest.NoWait(retry.Policy{})
	err := retry.Do(context.Background(), p, retrytest.Script(retry.After(errors.New("429"), time.Hour)).Func())
	if !errors.Is(err, retry.ErrHintTooLong) || len(waits.All()) != 0 {
		t.Errorf("got %v with waits %v", err, waits.All())
	}
	// A cancelled context still stops the loop.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = retry.Do(ctx, p, retrytest.Script(errors.New("a"), errors.New("b")).Func())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want cancelled", err)
	}
}

func TestRecorder(t *testing.T) {
	rec := &retrytest.Recorder{}
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: rec}})
	_ = retry.Do(context.Background(), p, retrytest.Script(errors.New("a")).Func())
	if n := len(rec.Attempts()); n != 2 {
		t.Errorf("%d attempts recorded, want 2", n)
	}
	if n := len(rec.Retries()); n != 1 {
		t.Errorf("%d retries recorded, want 1", n)
	}
	if n := len(rec.Events(event.AttemptStart, event.AttemptEnd)); n != 4 {
		t.Errorf("%d start/end events, want 4", n)
	}
	rec.Reset()
	if len(rec.Events()) != 0 {
		t.Error("Reset kept events")
	}
}

func Example() {
	// Test code that retries, without waiting: NoWait skips the waits and
	// records them; Script fails as told; Recorder keeps every event.
	rec := &retrytest.Recorder{}
	p, waits := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: rec, Rand: func() float64 { return 0.5 }}})
	call := retrytest.Script(errors.New("503"), errors.New("503"))
	err := retry.Do(context.Background(), p, call.Func())
	fmt.Println("err:", err, "calls:", call.Calls(), "waits:", waits.All(), "attempts recorded:", len(rec.Attempts()))
	// Output: err: <nil> calls: 3 waits: [25ms 50ms] attempts recorded: 3
}
