package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
)

// DefaultIdempotencyPrefix is the prefix of the Redis keys of
// IdempotencyStore records when IdempotencyConfig.Prefix is empty.
const DefaultIdempotencyPrefix = "yaoki:idem:"

// IdempotencyConfig configures an IdempotencyStore. The zero value means
// the defaults.
type IdempotencyConfig struct {
	// Prefix starts the Redis key of every record; the rest is the
	// record's ID (idempotency.ID.String: scope length, scope, key). Zero:
	// DefaultIdempotencyPrefix. Stores that share a Redis keep apart only
	// when neither prefix starts the other: under "app" and "app1:", the
	// key ":k" of scope "0" and the key "k" of no scope are one Redis key
	// ("app1:0::k").
	Prefix string
	// Replicas, above zero, makes every write that a failover must not
	// lose wait until at least this many replicas of the primary that took
	// it have acknowledged it (Redis's WAIT, sent on the write's connection
	// right after it): the claim of a Begin that claims, the new lease of
	// an Extend, the record of a Complete. A write acknowledged by fewer
	// replicas within ReplicaTimeout fails with a *ReplicaError (matching
	// ErrNotReplicated), so the middleware answers 503 store_unavailable
	// instead of running a handler on a claim a failover could lose. The
	// write itself stays on the primary. Each such write costs a round trip
	// to the replicas. Zero: no waiting. It needs a *goredis.Client (a
	// failover client too) or a *goredis.ClusterClient; a Ring has no way
	// to reach the primary of a key, and a store over one refuses every
	// call with the configuration error.
	Replicas int
	// ReplicaTimeout bounds each wait for replicas; a context deadline
	// that comes sooner ends it sooner. Zero: DefaultReplicaTimeout.
	ReplicaTimeout time.Duration
}

// ClaimGrace is how long Redis keeps the key of a record in progress past
// its lease (PEXPIRE lease+ClaimGrace): idempotency.CompleteGrace, as long
// as PostgreSQL's Cleanup keeps a row and the middleware tries on to
// complete, so that a holder that answers after its lease passed (its
// process paused, its link to Redis cut for longer than the lease) still
// stores its response when no other request claimed the key meanwhile.
// Claims are decided by the lease alone: Begin takes over a record whose
// lease has passed, whether or not its key is still there.
const ClaimGrace = idempotency.CompleteGrace

// DefaultReplicaTimeout is IdempotencyConfig.ReplicaTimeout when zero.
const DefaultReplicaTimeout = time.Second

// Validate reports the first field of o out of range, as an error
// matching ErrInvalidConfig that names the field, its value and what is
// accepted. NewIdempotencyStore keeps that error and returns it from
// every call of the store (and from Check); call Validate at start to
// refuse the configuration there.
func (o IdempotencyConfig) Validate() error {
	switch {
	case o.Replicas < 0:
		return invalid("Replicas", o.Replicas, "0 (no waiting for replicas) or more: how many replicas must acknowledge each write")
	case o.ReplicaTimeout < 0:
		return invalid("ReplicaTimeout", o.ReplicaTimeout, "0 (DefaultReplicaTimeout) or more: how long a write waits for its replicas")
	}
	return nil
}

// ErrNotReplicated matches the *ReplicaError of a store call whose write
// fewer replicas acknowledged than IdempotencyConfig.Replicas asks.
var ErrNotReplicated = errors.New("redis: idempotency write not acknowledged by enough replicas")

// ReplicaError is a write that fewer replicas acknowledged than asked
// within the timeout. The write is on the primary; a failover to a replica
// that lacks it would lose it. errors.Is(err, ErrNotReplicated) is true.
type ReplicaError struct {
	Op      string         // "begin", "extend" or "complete"
	ID      idempotency.ID // the record written
	Acked   int            // replicas that acknowledged the write
	Asked   int            // IdempotencyConfig.Replicas
	Timeout time.Duration  // how long WAIT waited at most
}

// Error says which write too few replicas acknowledged, how many did, and how long WAIT waited.
func (e *ReplicaError) Error() string {
	return fmt.Sprintf("redis: idempotency %s %s: %d of the %d replicas asked for acknowledged the write within %v (WAIT %d %d): a failover could lose it",
		e.Op, e.ID, e.Acked, e.Asked, e.Timeout, e.Asked, e.Timeout.Milliseconds())
}

// Is matches ErrNotReplicated.
func (e *ReplicaError) Is(target error) bool { return target == ErrNotReplicated }

// IdempotencyStore is an idempotency.Store in Redis, shared by every
// process that uses the same Redis and prefix.
//
// Each record is a hash under one key: state, fingerprint, holder token,
// expiry time and the encoded response (idempotency.Response's binary form).
// Every transition is one Lua script on that key, so it is atomic in Redis:
// of many processes that Begin the same key at once, exactly one claims it.
// Decisions compare the record's expiry with the now the caller passes (so
// the fleet's clocks should agree to well within the lease); in addition
// Redis expires the key itself ClaimGrace after the lease ends, or when the
// retention ends (PEXPIRE), so that dead records never pile up and need no
// cleanup. A holder that completes after its lease ended stores its
// response if no other request claimed the key meanwhile, within
// ClaimGrace; later it finds the key gone and gets
// idempotency.ErrLeaseLost.
//
// What the server needs: records must stay until their time has passed.
// Run it with maxmemory-policy noeviction (or no maxmemory): under any
// other policy Redis may evict records at its memory limit (every record
// has an expiry, so the volatile-* policies pick them too), and a retry of
// an evicted completed request runs it again. Run it with appendonly yes:
// without the append-only file a restart loses every record written since
// the last snapshot, a claim too, so that a retry runs its request beside
// the handler still running. Redis writes the file before it answers (but
// for a write postponed, up to 2 s, behind a slow fsync under everysec), so
// a crash of redis-server alone loses nothing it acknowledged; appendfsync
// decides what a crash of the machine loses: about the last 2 s under
// everysec, the last 30 s or so under no, nothing under always (at the
// cost of an fsync per write). A replica promoted by failover
// may lack the last writes, which asynchronous replication had not copied:
// a claim or a completed record lost so lets a retry run its request again.
// IdempotencyConfig.Replicas makes each write that matters wait until
// replicas acknowledged it (Redis's WAIT) and fail otherwise, at the cost
// of a round trip to the replicas per write; a replica that acknowledged
// a write may still lose it in its own crash before its append-only file
// has it, and WAIT does not make Redis strongly consistent. Redis keeps
// each key's expiry as a time of the server's clock: a step forward of that
// clock removes the keys whose time it passes (a completed record before
// the end of its retention, a claim when the step is longer than its lease
// and ClaimGrace); keep it slewed, not stepped. Check tells
// at start whether the server evicts keys, runs without the append-only
// file or never fsyncs it.
//
// A Begin or Complete whose reply was lost is run again by go-redis; the
// scripts recognise the caller's token, so that the second run reports
// the first one's work instead of a conflict. Build the client with
// Options.ContextTimeoutEnabled: the middleware bounds each call with its
// context (a renewal gets half of what is left of its lease), and go-redis
// honours that only with it; without it a server that stops answering
// holds a call for the client's ReadTimeout (3 s by default), and a lease
// under about 9 s can end while its renewal waits.
//
// It is safe for concurrent use. Errors from Redis are returned wrapped,
// with the operation named.
type IdempotencyStore struct {
	c        goredis.UniversalClient
	prefix   string
	replicas int
	timeout  time.Duration
	err      error // the configuration's, returned by every call
}

// NewIdempotencyStore returns a store that keeps its records through c (a
// *goredis.Client, *goredis.ClusterClient or *goredis.Ring). Through a
// Ring a request may run twice: it sends the keys of a shard it cannot
// reach to the other shards, where their records are not (Check names it;
// UnsafeServerError.Ring says more). When o is not
// valid (see IdempotencyConfig.Validate, which also refuses Replicas with a
// client other than *goredis.Client or *goredis.ClusterClient), every call
// of the store returns the error, matching ErrInvalidConfig: the
// middleware answers 503 and runs no handler.
func NewIdempotencyStore(c goredis.UniversalClient, o IdempotencyConfig) *IdempotencyStore {
	if o.Prefix == "" {
		o.Prefix = DefaultIdempotencyPrefix
	}
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = DefaultReplicaTimeout
	}
	err := o.Validate()
	if err == nil && o.Replicas > 0 {
		switch c.(type) {
		case *goredis.Client, *goredis.ClusterClient:
		default:
			err = invalid("Replicas", o.Replicas, fmt.Sprintf("0 with a client of type %T: waiting for replicas needs a *goredis.Client or *goredis.ClusterClient, which reach the primary of a key", c))
		}
	}
	return &IdempotencyStore{c: c, prefix: o.Prefix, replicas: o.Replicas, timeout: o.ReplicaTimeout, err: err}
}

// run runs sc on the record of id. When the store waits for replicas and
// wrote(reply) says the script wrote, it then sends WAIT on the same
// connection (WAIT counts the replicas that have the writes of its own
// connection) and fails with a *ReplicaError when too few acknowledged.
// op names the call in errors.
func (s *IdempotencyStore) run(ctx context.Context, op string, id idempotency.ID, sc *goredis.Script, wrote func(*goredis.Cmd) bool, args ...any) (*goredis.Cmd, error) {
	key := s.key(id)
	if s.replicas == 0 {
		return sc.Run(ctx, s.c, []string{key}, args...), nil
	}
	primary, ok := s.c.(*goredis.Client)
	if cc, isCluster := s.c.(*goredis.ClusterClient); isCluster {
		var err error
		if primary, err = cc.MasterForKey(ctx, key); err != nil {
			return nil, fmt.Errorf("redis: idempotency %s %s: the primary of its slot: %w", op, id, err)
		}
	} else if !ok {
		return nil, s.err // not reached: NewIdempotencyStore refused the client
	}
	conn := primary.Conn()
	defer conn.Close()
	reply := sc.Run(ctx, conn, []string{key}, args...)
	if reply.Err() != nil || !wrote(reply) {
		return reply, nil
	}
	timeout := s.timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	timeout = max(timeout, time.Millisecond) // WAIT n 0 would block for good
	n, err := conn.Wait(ctx, s.replicas, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: idempotency %s %s: WAIT %d %d: %w", op, id, s.replicas, timeout.Milliseconds(), err)
	}
	if n < int64(s.replicas) {
		return nil, &ReplicaError{Op: op, ID: id, Acked: int(n), Asked: s.replicas, Timeout: timeout}
	}
	return reply, nil
}

// claimed says whether a reply of beginScript is a claim; replied1
// whether a reply of extendScript or completeScript is a change.
func claimed(c *goredis.Cmd) bool {
	v, err := c.Slice()
	return err == nil && len(v) == 1
}

func replied1(c *goredis.Cmd) bool {
	n, err := c.Int()
	return err == nil && n == 1
}

// Fields of a record's hash: s state ("p" in progress, "c" completed), f
// fingerprint (32 bytes), t token (of the holder, then of the request that
// completed it), e expiry (Unix milliseconds), r response (completed).

// beginScript: KEYS[1] record; ARGV now_ms, expires_ms, keep_ms, fp, token,
// where keep_ms is how long Redis keeps the key: the lease and ClaimGrace.
// Returns {1} when claimed, else {0, s, f, t, e, r}, t empty for a completed
// record (nobody needs it from Begin: a replay costs no token string). A live record held by
// token is claimed already: go-redis runs the script again when its reply
// was lost, and that run must not find itself in the way.
var beginScript = goredis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 'f', 't', 'e', 'r')
if v[1] and tonumber(v[4]) and tonumber(v[4]) > tonumber(ARGV[1]) then
  if v[1] == 'p' and v[3] == ARGV[5] then return {1} end
  if v[1] ~= 'p' then v[3] = '' end
  return {0, v[1], v[2] or '', v[3] or '', v[4], v[5] or ''}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', 'p', 'f', ARGV[4], 't', ARGV[5], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1}
`)

// extendScript: KEYS[1] record; ARGV token, expires_ms, keep_ms (the lease
// and ClaimGrace).
var extendScript = goredis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 't')
if v[1] ~= 'p' or v[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// completeScript: KEYS[1] record; ARGV token, expires_ms, ttl_ms, response.
// The completed record keeps the token, so that the script run again after
// a lost reply finds its own work done (1) rather than a lost lease (0).
var completeScript = goredis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 't')
if v[2] ~= ARGV[1] then return 0 end
if v[1] == 'c' then return 1 end
if v[1] ~= 'p' then return 0 end
redis.call('HSET', KEYS[1], 's', 'c', 'e', ARGV[2], 'r', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// releaseScript: KEYS[1] record; ARGV token.
var releaseScript = goredis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 't')
if v[1] ~= 'p' or v[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

func (s *IdempotencyStore) key(id idempotency.ID) string { return s.prefix + id.String() }

// Begin implements idempotency.Store.
func (s *IdempotencyStore) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	if s.err != nil {
		return idempotency.Record{}, false, s.err
	}
	reply, err := s.run(ctx, "begin", id, beginScript, claimed,
		now.UnixMilli(), now.Add(lease).UnixMilli(), millis(lease+ClaimGrace), fp[:], token)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	res, err := reply.Slice()
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redis: idempotency begin %s: %w", id, err)
	}
	if len(res) == 1 {
		return idempotency.Record{}, true, nil
	}
	if len(res) != 6 {
		return idempotency.Record{}, false, fmt.Errorf("redis: idempotency begin %s: unexpected reply of %d values", id, len(res))
	}
	strs := make([]string, 5)
	for i := range strs {
		strs[i], _ = res[i+1].(string)
	}
	rec, err := decode(strs)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redis: idempotency begin %s: %w", id, err)
	}
	return rec, false, nil
}

// Extend implements idempotency.Store.
func (s *IdempotencyStore) Extend(ctx context.Context, id idempotency.ID, token string, now time.Time, lease time.Duration) error {
	if s.err != nil {
		return s.err
	}
	reply, err := s.run(ctx, "extend", id, extendScript, replied1, token, now.Add(lease).UnixMilli(), millis(lease+ClaimGrace))
	if err != nil {
		return err
	}
	return holderOnly("extend", id, reply)
}

// holderOnly is the outcome of a script that changes a record only for
// its holder: it replies 1 when it did, 0 when the caller no longer holds
// the record (ErrLeaseLost). what names the call in an error of Redis.
func holderOnly(what string, id idempotency.ID, reply *goredis.Cmd) error {
	ok, err := reply.Int()
	switch {
	case err != nil:
		return fmt.Errorf("redis: idempotency %s %s: %w", what, id, err)
	case ok == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Complete implements idempotency.Store.
func (s *IdempotencyStore) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	if s.err != nil {
		return s.err
	}
	b, _ := resp.MarshalBinary()
	reply, err := s.run(ctx, "complete", id, completeScript, replied1, token, now.Add(ttl).UnixMilli(), millis(ttl), b)
	if err != nil {
		return err
	}
	return holderOnly("complete", id, reply)
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, id idempotency.ID, token string) error {
	if s.err != nil {
		return s.err
	}
	if err := releaseScript.Run(ctx, s.c, []string{s.key(id)}, token).Err(); err != nil {
		return fmt.Errorf("redis: idempotency release %s: %w", id, err)
	}
	return nil
}

// Get implements idempotency.Store.
func (s *IdempotencyStore) Get(ctx context.Context, id idempotency.ID, now time.Time) (idempotency.Record, bool, error) {
	if s.err != nil {
		return idempotency.Record{}, false, s.err
	}
	vals, err := s.c.HMGet(ctx, s.key(id), "s", "f", "t", "e", "r").Result()
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redis: idempotency get %s: %w", id, err)
	}
	if vals[0] == nil {
		return idempotency.Record{}, false, nil
	}
	strs := make([]string, 5)
	for i := range strs {
		strs[i], _ = vals[i].(string)
	}
	rec, err := decode(strs)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redis: idempotency get %s: %w", id, err)
	}
	if !now.Before(rec.Expires) {
		return idempotency.Record{}, false, nil
	}
	return rec, true, nil
}

var errBadRecord = errors.New("bad record")

// decode turns the fields s, f, t, e, r into a record.
func decode(v []string) (idempotency.Record, error) {
	var rec idempotency.Record
	switch v[0] {
	case "p":
		rec.State = idempotency.InProgress
	case "c":
		rec.State = idempotency.Completed
	default:
		return rec, fmt.Errorf("%w: state %q", errBadRecord, v[0])
	}
	if len(v[1]) != len(rec.Fingerprint) {
		return rec, fmt.Errorf("%w: fingerprint of %d bytes", errBadRecord, len(v[1]))
	}
	copy(rec.Fingerprint[:], v[1])
	rec.Token = v[2]
	ms, err := strconv.ParseInt(v[3], 10, 64)
	if err != nil {
		return rec, fmt.Errorf("%w: expiry %q", errBadRecord, v[3])
	}
	rec.Expires = time.UnixMilli(ms).UTC()
	if rec.State == idempotency.Completed {
		if err := rec.Response.UnmarshalBinary([]byte(v[4])); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// millis is d in whole milliseconds, at least 1 (PEXPIRE 0 would delete).
func millis(d time.Duration) int64 {
	return max(1, d.Milliseconds())
}
