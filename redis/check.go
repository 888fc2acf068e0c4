package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// ErrUnsafeServer matches the error of IdempotencyStore.Check when a Redis
// server may lose idempotency records.
var ErrUnsafeServer = errors.New("redis: the server may lose idempotency records")

// UnsafeServerError is what Check found wrong with a server. errors.Is(err,
// ErrUnsafeServer) is true.
type UnsafeServerError struct {
	Addr string // the server (for a cluster, the node) that was checked
	// Evicts is true when the server evicts keys at its memory limit
	// (maxmemory set and maxmemory-policy other than noeviction): a
	// completed record evicted early lets a retry run its request again.
	// Every policy but noeviction may pick the store's keys, which all have
	// an expiry. MaxmemoryPolicy and Maxmemory say what was found.
	Evicts          bool
	MaxmemoryPolicy string
	Maxmemory       int64
	// NotAppendOnly is true when the append-only file is off: a restart
	// loses the records written since the last snapshot, if any.
	NotAppendOnly bool
}

func (e *UnsafeServerError) Error() string {
	var why []string
	if e.Evicts {
		why = append(why, fmt.Sprintf("it evicts keys at its memory limit (maxmemory %d bytes, maxmemory-policy %s): set maxmemory-policy noeviction", e.Maxmemory, e.MaxmemoryPolicy))
	}
	if e.NotAppendOnly {
		why = append(why, "its append-only file is off, so a restart loses recent records: set appendonly yes")
	}
	return fmt.Sprintf("redis: the server %s may lose idempotency records: %s", e.Addr, strings.Join(why, "; "))
}

// Is matches ErrUnsafeServer.
func (e *UnsafeServerError) Is(target error) bool { return target == ErrUnsafeServer }

// Check asks the server (every master of a cluster) whether it keeps
// records as the store needs: without eviction (maxmemory-policy
// noeviction, or no maxmemory) and with the append-only file on. It
// returns nil when it does, an *UnsafeServerError (matching
// ErrUnsafeServer) naming what it found when it does not, and another
// error when it could not ask (it reads INFO, which hosted servers that
// refuse CONFIG usually allow). Call it at start and log what it returns:
// the store works on an unsafe server, but its promise of one execution
// holds only as long as the server keeps the records.
func (s *IdempotencyStore) Check(ctx context.Context) error {
	if cc, ok := s.c.(*goredis.ClusterClient); ok {
		var (
			mu   sync.Mutex // ForEachMaster calls in parallel
			errs []error
		)
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			err := check(ctx, c)
			if errors.Is(err, ErrUnsafeServer) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	return check(ctx, s.c)
}

func check(ctx context.Context, c goredis.UniversalClient) error {
	info, err := c.Info(ctx).Result() // the default sections hold memory and persistence
	if err != nil {
		return fmt.Errorf("redis: idempotency check: INFO: %w", err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	policy, okPolicy := fields["maxmemory_policy"]
	maxmem, errMax := strconv.ParseInt(fields["maxmemory"], 10, 64)
	aof, okAOF := fields["aof_enabled"]
	if !okPolicy || errMax != nil || !okAOF {
		return fmt.Errorf("redis: idempotency check: INFO lacks maxmemory, maxmemory_policy or aof_enabled")
	}
	e := &UnsafeServerError{MaxmemoryPolicy: policy, Maxmemory: maxmem,
		Evicts: maxmem > 0 && policy != "noeviction", NotAppendOnly: aof != "1"}
	if !e.Evicts && !e.NotAppendOnly {
		return nil
	}
	if cl, ok := c.(*goredis.Client); ok {
		e.Addr = cl.Options().Addr
	}
	return e
}
