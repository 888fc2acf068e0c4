package retry_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// Fault: an attempt's function calls runtime.Goexit (t.FailNow in a test's
// fn, a log.Fatal-like helper that exits the goroutine). The caller's
// goroutine exits with it, as Go says; the guards must still hear that the
// attempt ended, or the bulkhead slot it held is taken for good and every
// later call waits for it.
func TestDoAttemptGoexitReleasesGuards(t *testing.T) {
	bh, err := throttle.NewBulkhead(throttle.BulkheadConfig{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	obs := &events{}
	p := retry.Policy{Env: &retry.Env{Bulkhead: bh, Observer: obs}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = retry.Do(context.Background(), p, func(context.Context) error {
			runtime.Goexit()
			return nil
		})
		t.Error("Do returned; want its goroutine gone with the attempt's Goexit")
	}()
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := retry.Do(ctx, p, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("the next call after an attempt's Goexit: %v; want its slot free", err)
	}
	var found bool
	for _, e := range obs.of(event.AttemptEnd) {
		if e.Attempt == 1 && e.Err != nil && strings.Contains(e.Err.Error(), "Goexit") {
			found = true
		}
	}
	if !found {
		t.Errorf("no AttemptEnd says the attempt called runtime.Goexit: %+v", obs.of(event.AttemptEnd))
	}
}
