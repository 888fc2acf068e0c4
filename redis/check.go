package redis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	Addr string // the server (for a cluster or a ring, the node) that was checked
	// Ring is true when the store reaches its servers through a
	// *goredis.Ring, whatever their settings (Addr then lists the ring's
	// shards). A Ring sends the keys of a shard it cannot reach to the other
	// shards, and back when the shard returns: meanwhile a retry finds no
	// record and runs its request again, and a claim held on one side is
	// not seen on the other. A single server, a failover (Sentinel) client
	// or a Cluster keeps each key in one place.
	Ring bool
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
	// NoFsync is true when the append-only file is on but never fsynced
	// (appendfsync no): the operating system writes it to disk when it
	// sees fit, about every 30 s on Linux, so a crash of the machine (not
	// of redis-server alone) loses the records of that time. Check reads
	// appendfsync with CONFIG GET; a server that refuses CONFIG (many
	// hosted ones do) is not judged on it.
	NoFsync bool
	// TooFewReplicas is true when the store waits for more replicas
	// (IdempotencyConfig.Replicas, in ReplicasAsked) than the server has
	// connected (ConnectedReplicas): every write would then fail, and the
	// middleware answer 503. ConnectedReplicas is -1 when INFO did not say.
	TooFewReplicas    bool
	ConnectedReplicas int
	ReplicasAsked     int
}

// Error lists each setting of the server that makes the store unsafe, and the value it needs.
func (e *UnsafeServerError) Error() string {
	var why []string
	if e.Ring {
		why = append(why, "a Ring sends the keys of a shard it cannot reach to the other shards, and back when the shard returns, so a retry meanwhile finds no record: use a single server, a failover (Sentinel) client or a Cluster")
	}
	if e.Evicts {
		why = append(why, fmt.Sprintf("it evicts keys at its memory limit (maxmemory %d bytes, maxmemory-policy %s): set maxmemory-policy noeviction", e.Maxmemory, e.MaxmemoryPolicy))
	}
	if e.NotAppendOnly {
		why = append(why, "its append-only file is off, so a restart loses recent records: set appendonly yes")
	}
	if e.NoFsync {
		why = append(why, "its append-only file is never fsynced (appendfsync no), so a crash of the machine loses the records of the last 30 s or so: set appendfsync everysec (about 2 s at most) or always")
	}
	if e.TooFewReplicas {
		why = append(why, fmt.Sprintf("it has %d connected replicas of the %d that each write waits for (Replicas), so every write fails until they are connected: connect them or lower Replicas", e.ConnectedReplicas, e.ReplicasAsked))
	}
	what := "the server " + e.Addr
	if e.Ring {
		what = "the Ring of " + e.Addr
	}
	return fmt.Sprintf("redis: %s may lose idempotency records: %s", what, strings.Join(why, "; "))
}

// Is matches ErrUnsafeServer.
func (e *UnsafeServerError) Is(target error) bool { return target == ErrUnsafeServer }

// Check asks the server (every master of a cluster, every shard of a
// ring) whether it keeps records as the store needs: without eviction
// (maxmemory-policy
// noeviction, or no maxmemory), with the append-only file on and fsynced
// (appendfsync everysec or always, when CONFIG GET may read it), and, when
// the store waits for replicas (IdempotencyConfig.Replicas), with at least
// that many replicas connected. A Ring is named whatever its servers'
// settings: it moves keys between shards (see UnsafeServerError.Ring). It
// returns nil when it does, an *UnsafeServerError (matching
// ErrUnsafeServer) naming what it found when it does not, and another
// error when it could not ask (it reads INFO, which hosted servers that
// refuse CONFIG usually allow). Call it at start and log what it returns:
// the store works on an unsafe server, but its promise of one execution
// holds only as long as the server keeps the records. It asks the
// primaries only: a replica that a failover promotes brings its own
// settings, so give replicas the same ones (or call Check again after a
// failover). It returns the
// configuration's error (matching ErrInvalidConfig) first, when the store
// was made with one.
func (s *IdempotencyStore) Check(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	// Every node that holds records is asked: each master of a cluster,
	// each shard of a ring (INFO alone would reach one of them).
	var (
		each func(context.Context, func(context.Context, *goredis.Client) error) error
		mu   sync.Mutex // each's callbacks run in parallel
		errs []error
	)
	switch c := s.c.(type) {
	case *goredis.ClusterClient:
		each = c.ForEachMaster
	case *goredis.Ring:
		each = c.ForEachShard
		addrs := slices.Sorted(maps.Values(c.Options().Addrs))
		errs = append(errs, &UnsafeServerError{Addr: strings.Join(addrs, ", "), Ring: true, ConnectedReplicas: -1})
	}
	if each != nil {
		err := each(ctx, func(ctx context.Context, c *goredis.Client) error {
			err := check(ctx, c, s.replicas)
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
	return check(ctx, s.c, s.replicas)
}

// check asks one server; replicas is how many the store's writes wait for.
func check(ctx context.Context, c goredis.UniversalClient, replicas int) error {
	info, err := c.Info(ctx).Result() // the default sections hold memory, persistence and replication
	if err != nil {
		return fmt.Errorf("redis: idempotency check: INFO: %w", err)
	}
	e, err := parseInfo(info)
	if err != nil {
		return err
	}
	e.ReplicasAsked = replicas
	e.TooFewReplicas = replicas > 0 && e.ConnectedReplicas >= 0 && e.ConnectedReplicas < replicas
	if !e.NotAppendOnly {
		// INFO does not say how the file is fsynced. A server that refuses
		// CONFIG GET (no permission, a hosted service) is not judged on it.
		if v, err := c.ConfigGet(ctx, "appendfsync").Result(); err == nil {
			e.NoFsync = v["appendfsync"] == "no"
		}
	}
	if !e.Evicts && !e.NotAppendOnly && !e.NoFsync && !e.TooFewReplicas {
		return nil
	}
	if cl, ok := c.(*goredis.Client); ok {
		e.Addr = cl.Options().Addr
	}
	return e
}

// parseInfo reads what Check needs from INFO's answer ("field:value"
// lines): maxmemory, maxmemory_policy and aof_enabled, and
// connected_slaves when it is there (ConnectedReplicas -1 otherwise).
func parseInfo(info string) (*UnsafeServerError, error) {
	var policy, maxmem, aof string
	replicas := -1
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "connected_slaves":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				replicas = n
			}
		case "maxmemory_policy":
			policy = v
		case "maxmemory":
			maxmem = v
		case "aof_enabled":
			aof = v
		}
	}
	n, err := strconv.ParseInt(maxmem, 10, 64)
	if policy == "" || err != nil || n < 0 || aof != "0" && aof != "1" {
		return nil, fmt.Errorf("redis: idempotency check: INFO gave maxmemory %q, maxmemory_policy %q, aof_enabled %q: want a byte count, a policy and 0 or 1", maxmem, policy, aof)
	}
	return &UnsafeServerError{MaxmemoryPolicy: policy, Maxmemory: n,
		Evicts: n > 0 && policy != "noeviction", NotAppendOnly: aof != "1", ConnectedReplicas: replicas}, nil
}
