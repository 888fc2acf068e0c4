package idempotency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// storeContext bounds a store call by StoreTimeout, except for the
// MemoryStore, which never waits.
func (c *Config) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := c.Store.(*MemoryStore); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.StoreTimeout)
}

// LeaseLostError is the cause (context.Cause) of a handler's context that
// the middleware cancelled because the request no longer holds its key:
// the store refused a renewal (another request claimed the key after the
// lease passed), or the lease ended before a renewal got through (the
// store could not be reached). Another request may run the same key from
// then on. It matches ErrLeaseLost.
type LeaseLostError struct {
	// Key is the request's Idempotency-Key.
	Key string
	// Err is the store's refusal (ErrLeaseLost) or the last failed
	// renewal's error; nil when the lease ended before a renewal was even
	// tried.
	Err error
}

// Error says which key's lease was lost and why, when the store said.
func (e *LeaseLostError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("idempotency: lease of key %q lost: it ended before it could be renewed", e.Key)
	}
	if errors.Is(e.Err, ErrLeaseLost) {
		return fmt.Sprintf("idempotency: lease of key %q lost: the store refused its renewal: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("idempotency: lease of key %q lost: it ended while the store could not be reached: %v", e.Key, e.Err)
}

// Is matches ErrLeaseLost.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// Unwrap returns Err.
func (e *LeaseLostError) Unwrap() error { return e.Err }

// lease keeps a request's hold on its key while the handler runs and while
// its response is being stored: it renews the lease every third of it and,
// after a failed renewal, again sooner (with backoff), never later than the
// lease's end. When the store refuses a renewal, or the lease ends before a
// renewal got through, the hold is lost: lost is called once, with the
// cause.
//
// A lease is also the context of the store calls made for its request
// after the handler started: the request's values without its
// cancellation (context.WithoutCancel, without allocating one), so that
// they run even when the client has gone away.
type lease struct {
	c      *Config
	parent context.Context // the request's
	id     ID
	token  string
	lost   func(error)

	mu      sync.Mutex
	t       *time.Timer
	until   time.Time // the lease's end as last granted, by c.Now
	fails   int       // renewals failed in a row
	lastErr error     // the last one's error
	stopped bool
	// completing: the handler has answered and its response is being
	// stored. A renewal refused meanwhile may have reached the store after
	// the Complete that made the record completed: not a lost lease.
	// Complete's outcome says whether the key was still held.
	completing bool
}

// complete notes that the response is being stored.
func (l *lease) complete() {
	l.mu.Lock()
	l.completing = true
	l.mu.Unlock()
}

// hold starts l, at now, for the request whose context is parent, which
// claimed id with token at begun. The first renewal is due a third of the
// lease after begun, as the store counts it, not after the claim's reply
// came.
func (c *Config) hold(l *lease, parent context.Context, id ID, token string, begun, now time.Time, lost func(error)) {
	l.c, l.parent, l.id, l.token, l.lost, l.until = c, parent, id, token, lost, begun.Add(c.Lease)
	l.mu.Lock() // the timer may fire before l.t is set
	defer l.mu.Unlock()
	l.t = time.AfterFunc(begun.Add(c.Lease/3).Sub(now), l.renew)
}

// Deadline, Done, Err and Value make a lease the context of its store
// calls: no deadline, never done, the request's values.
func (l *lease) Deadline() (time.Time, bool) { return time.Time{}, false }
func (l *lease) Done() <-chan struct{}       { return nil }
func (l *lease) Err() error                  { return nil }
func (l *lease) Value(key any) any           { return l.parent.Value(key) }

func (l *lease) renew() {
	c := l.c
	now := c.Now()
	l.mu.Lock()
	left := l.until.Sub(now)
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		return
	}
	var err error
	if left > 0 {
		ctx, cancel := context.Context(l), context.CancelFunc(nil)
		if _, ok := c.Store.(*MemoryStore); !ok {
			// A renewal gets half of what is left of the lease: one whose
			// reply never comes (its connection dead without a reset)
			// leaves time to try again on another connection before the
			// lease ends, and a renewal that gets through after the
			// lease's end is too late to count on anyway.
			ctx, cancel = context.WithTimeout(ctx, min(c.StoreTimeout, left/2))
		}
		err = c.Store.Extend(ctx, l.id, l.token, now, c.Lease)
		if cancel != nil {
			cancel()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return // the request is done: its outcome decides
	}
	if l.completing && errors.Is(err, ErrLeaseLost) {
		// Refused after its Complete, or because another request holds
		// the key: Complete's outcome decides, and says which.
		l.stopped = true
		return
	}
	switch {
	case left > 0 && err == nil:
		l.until = now.Add(c.Lease)
		l.fails, l.lastErr = 0, nil
		l.t.Reset(c.Lease / 3)
		return
	case left > 0 && !errors.Is(err, ErrLeaseLost):
		c.ErrorLog.Printf("idempotency: renew the lease of key %q: %v", l.id.Key, err)
		l.fails++
		l.lastErr = err
		// Try again sooner than the usual third, with backoff, but no later
		// than the lease's end, when the hold is lost unless renewed.
		if wait := min(retryDelay(l.fails, c.Lease/3), l.until.Sub(c.Now())); wait > 0 {
			l.t.Reset(wait)
			return
		}
	}
	l.stopped = true
	if err == nil {
		err = l.lastErr
	}
	cause := &LeaseLostError{Key: l.id.Key, Err: err}
	c.ErrorLog.Printf("%v", cause)
	l.lost(cause)
}

// end returns the lease's end as last granted by the store, by c.Now,
// held or lost.
func (l *lease) end() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// stop ends the renewals; a renewal under way is ignored.
func (l *lease) stop() {
	l.mu.Lock()
	l.stopped = true
	l.t.Stop()
	l.mu.Unlock()
}

// retryDelay is the wait before the n-th retry (n ≥ 1) of a store call:
// full jitter over 10 ms doubled per retry, at most ceiling.
func retryDelay(n int, ceiling time.Duration) time.Duration {
	d := ceiling
	if n < 20 {
		d = min(ceiling, 10*time.Millisecond<<(n-1))
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// complete stores resp, trying again with backoff when the store fails,
// for up to timeout: a Complete that does not get through leaves the key in
// progress, and once the lease has passed a retry of the request would run
// the handler again. It stops at ErrLeaseLost (another request holds the
// key: the token fences this one off). The lease is renewed meanwhile by
// the caller's lease. With m, the first try that failed and will be tried
// again notes the key as being stored (Middleware.trying, whose done func
// it returns; nil if none failed so).
func (c *Config) complete(ctx context.Context, id ID, token string, resp Response, timeout time.Duration, m *Middleware, fp Fingerprint) (done func(), err error) {
	if _, ok := c.Store.(*MemoryStore); ok {
		return nil, c.Store.Complete(ctx, id, token, resp, c.Now(), c.TTL) // never fails but for a lost lease
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for n := 1; ; n++ {
		try, cancelTry := ctx, context.CancelFunc(nil)
		if timeout > c.StoreTimeout {
			// In the background: each try gets StoreTimeout, so that one
			// whose reply never comes (its connection dead without a
			// reset) gives way to the next, on another connection.
			try, cancelTry = context.WithTimeout(ctx, c.StoreTimeout)
		}
		err := c.Store.Complete(try, id, token, resp, c.Now(), c.TTL)
		if cancelTry != nil {
			cancelTry()
		}
		if err == nil || errors.Is(err, ErrLeaseLost) {
			return done, err
		}
		if ctx.Err() != nil {
			return done, fmt.Errorf("idempotency: %d tries in %v: %w", n, timeout, err)
		}
		if n == 1 && m != nil {
			done = m.trying(id, fp)
		}
		if n <= 8 || n&(n-1) == 0 {
			// Every try at first, then fewer lines: a store away for
			// minutes would fill the log with one a second.
			c.ErrorLog.Printf("idempotency: store the response to key %q (try %d, will try again): %v", id.Key, n, err)
		}
		t := time.NewTimer(retryDelay(n, time.Second))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return done, fmt.Errorf("idempotency: %d tries in %v: %w", n, timeout, err)
		}
	}
}
