package throttle

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestBulkheadNoWait(t *testing.T) {
	b, _ := NewBulkhead(BulkheadConfig{Limit: 2})
	ctx := context.Background()
	if b.Acquire(ctx) != nil || b.Acquire(ctx) != nil {
		t.Fatal("a free slot was refused")
	}
	err := b.Acquire(ctx)
	var fe *FullError
	if !errors.Is(err, ErrFull) || !errors.As(err, &fe) || fe.Limit != 2 || fe.Waited != 0 {
		t.Fatalf("third Acquire: %v, want a *FullError at once", err)
	}
	if b.InUse() != 2 || b.Limit() != 2 {
		t.Fatalf("in use %d of %d", b.InUse(), b.Limit())
	}
	b.Release()
	if err := b.Acquire(ctx); err != nil {
		t.Fatalf("after Release: %v", err)
	}
}

func TestBulkheadBoundedWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := NewBulkhead(BulkheadConfig{Limit: 1, MaxWait: time.Second})
		ctx := context.Background()
		if err := b.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		// A slot released after 400 ms goes to the waiter then.
		go func() {
			time.Sleep(400 * time.Millisecond) // virtual time: this runs in a synctest bubble
			b.Release()
		}()
		start := time.Now()
		if err := b.Acquire(ctx); err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Fatalf("waited %v, want 400ms", d)
		}
		// Nobody releases: the wait ends after MaxWait.
		start = time.Now()
		err := b.Acquire(ctx)
		var fe *FullError
		if !errors.As(err, &fe) || fe.Waited != time.Second || time.Since(start) != time.Second {
			t.Fatalf("got %v after %v, want a *FullError after 1s", err, time.Since(start))
		}
		// The caller's deadline ends the wait first.
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		if err := b.Acquire(dctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("got %v after %v, want the context's error after 300ms", err, time.Since(start))
		}
		// An ended context is not waited on at all.
		if err := b.Acquire(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		b.Release()
	})
}

func TestBulkheadLimitsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := NewBulkhead(BulkheadConfig{Limit: 5, MaxWait: time.Minute})
		var inFlight, peak, done atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(100 * time.Millisecond)
				inFlight.Add(-1)
				done.Add(1)
				b.Release()
			}()
		}
		start := time.Now()
		wg.Wait()
		if peak.Load() != 5 || done.Load() != 50 {
			t.Fatalf("peak %d, done %d; want 5 and 50", peak.Load(), done.Load())
		}
		// 50 calls of 100 ms, 5 at a time: 1 s.
		if d := time.Since(start); d != time.Second {
			t.Fatalf("took %v, want 1s", d)
		}
	})
}

func TestBulkheadReleaseWithoutAcquirePanics(t *testing.T) {
	b, _ := NewBulkhead(BulkheadConfig{})
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	b.Release()
}

func BenchmarkBulkhead(b *testing.B) {
	bh, _ := NewBulkhead(BulkheadConfig{Limit: 1000})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bh.Acquire(ctx); err != nil {
				b.Fatal(err)
			}
			bh.Release()
		}
	})
}

// TestBulkheadDeadlineAsSlotFrees: a waiter's context ends (and its MaxWait
// runs out) at the very instant the holder releases the only slot. Whichever
// way the race goes, the slot is accounted once: a waiter told nil holds it,
// a waiter told no holds nothing, and afterwards exactly Limit slots can be
// taken: none lost, none granted twice.
func TestBulkheadDeadlineAsSlotFrees(t *testing.T) {
	won, lost := 0, 0
	for i := range 200 {
		synctest.Test(t, func(t *testing.T) {
			b, err := NewBulkhead(BulkheadConfig{Limit: 1, MaxWait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Acquire(t.Context()); err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(time.Second) // virtual: the synctest bubble's clock
				b.Release()
			}()
			if i%2 == 0 {
				synctest.Wait() // the holder's timer is set before the waiter's
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err = b.Acquire(ctx)
			synctest.Wait() // the holder has released by now
			switch {
			case err == nil:
				won++
				if n := b.InUse(); n != 1 {
					t.Fatalf("waiter granted the slot, %d in use; want 1", n)
				}
				b.Release()
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrFull):
				lost++
				if n := b.InUse(); n != 0 {
					t.Fatalf("waiter refused (%v), %d in use; want 0", err, n)
				}
			default:
				t.Fatalf("waiter: %v", err)
			}
			if err := b.Acquire(t.Context()); err != nil {
				t.Fatalf("the freed slot was lost: %v", err)
			}
			if err := b.Acquire(context.Background()); !errors.Is(err, ErrFull) {
				t.Fatalf("a second slot of a bulkhead of 1: %v, want ErrFull", err)
			}
			b.Release()
		})
	}
	t.Logf("waiter got the slot %d times, its deadline %d times", won, lost)
}

// TestBulkheadEndedContext: ctx bounds only the wait. A free slot is taken
// for an ended context; a full bulkhead answers an ended context with the
// context's error when it would wait, and with a *FullError when it does
// not wait at all.
func TestBulkheadEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, maxWait := range []time.Duration{0, time.Second} {
		b, err := NewBulkhead(BulkheadConfig{Limit: 1, MaxWait: maxWait})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Acquire(ctx); err != nil {
			t.Fatalf("MaxWait %v: a free slot for an ended context: %v, want it taken", maxWait, err)
		}
		err = b.Acquire(ctx)
		if maxWait == 0 && !errors.Is(err, ErrFull) {
			t.Errorf("MaxWait 0, full: %v, want ErrFull", err)
		}
		if maxWait > 0 && !errors.Is(err, context.Canceled) {
			t.Errorf("MaxWait %v, full: %v, want the context's error without waiting", maxWait, err)
		}
		if n := b.InUse(); n != 1 {
			t.Errorf("MaxWait %v: %d in use, want 1", maxWait, n)
		}
	}
}
