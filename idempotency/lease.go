package idempotency

import (
	"context"
	"errors"
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

// renewer extends a lease every third of it while the handler runs.
type renewer struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (c *Config) renew(ctx context.Context, id ID, token string) *renewer {
	rn := &renewer{}
	every := c.Lease / 3
	rn.mu.Lock() // the timer may fire before rn.t is set
	defer rn.mu.Unlock()
	rn.t = time.AfterFunc(every, func() {
		cctx, cancel := c.storeContext(ctx)
		err := c.Store.Extend(cctx, id, token, c.Now(), c.Lease)
		cancel()
		rn.mu.Lock()
		defer rn.mu.Unlock()
		if rn.stopped {
			return // the handler finished during the renewal: its outcome decides
		}
		if err != nil {
			c.ErrorLog.Printf("idempotency: renew the lease of key %q: %v", id.Key, err)
			if errors.Is(err, ErrLeaseLost) {
				return // another request holds the key now; renewing is pointless
			}
		}
		rn.t.Reset(every)
	})
	return rn
}

func (rn *renewer) stop() {
	rn.mu.Lock()
	rn.stopped = true
	rn.t.Stop()
	rn.mu.Unlock()
}
