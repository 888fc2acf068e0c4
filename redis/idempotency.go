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
	// DefaultIdempotencyPrefix.
	Prefix string
}

// IdempotencyStore is an idempotency.Store in Redis, shared by every
// process that uses the same Redis and prefix.
//
// Each record is a hash under one key: state, fingerprint, holder token,
// expiry time and the encoded response (idempotency.Response's binary form).
// Every transition is one Lua script on that key, so it is atomic in Redis:
// of many processes that Begin the same key at once, exactly one claims it.
// Decisions compare the record's expiry with the now the caller passes (so
// the fleet's clocks should agree to well within the lease); in addition
// Redis expires the key itself when the lease or the retention ends
// (PEXPIRE), so that dead records never pile up and need no cleanup. A
// holder that completes after its lease ended finds the key gone and gets
// idempotency.ErrLeaseLost.
//
// What the server needs: records must stay until their time has passed.
// Run it with maxmemory-policy noeviction (or no maxmemory): under any
// other policy Redis may evict records at its memory limit (every record
// has an expiry, so the volatile-* policies pick them too), and a retry of
// an evicted completed request runs it again. Run it with appendonly yes
// (appendfsync everysec loses at most about a second of records in a
// crash; always, none): without the append-only file a restart loses every
// record written since the last snapshot. A replica promoted by failover
// may lack the last writes, which asynchronous replication had not copied.
// Check tells at start whether the server evicts keys or runs without the
// append-only file.
//
// A Begin or Complete whose reply was lost is run again by go-redis; the
// scripts recognise the caller's token, so that the second run reports
// the first one's work instead of a conflict.
//
// It is safe for concurrent use. Errors from Redis are returned wrapped,
// with the operation named.
type IdempotencyStore struct {
	c      goredis.UniversalClient
	prefix string
}

// NewIdempotencyStore returns a store that keeps its records through c (a
// *goredis.Client, *goredis.ClusterClient or *goredis.Ring).
func NewIdempotencyStore(c goredis.UniversalClient, o IdempotencyConfig) *IdempotencyStore {
	if o.Prefix == "" {
		o.Prefix = DefaultIdempotencyPrefix
	}
	return &IdempotencyStore{c: c, prefix: o.Prefix}
}

// Fields of a record's hash: s state ("p" in progress, "c" completed), f
// fingerprint (32 bytes), t token (of the holder, then of the request that
// completed it), e expiry (Unix milliseconds), r response (completed).

// beginScript: KEYS[1] record; ARGV now_ms, expires_ms, lease_ms, fp, token.
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

// extendScript: KEYS[1] record; ARGV token, expires_ms, lease_ms.
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
	res, err := beginScript.Run(ctx, s.c, []string{s.key(id)},
		now.UnixMilli(), now.Add(lease).UnixMilli(), millis(lease), fp[:], token).Slice()
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
	return holderOnly("extend", id, extendScript.Run(ctx, s.c, []string{s.key(id)}, token, now.Add(lease).UnixMilli(), millis(lease)))
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
	b, _ := resp.MarshalBinary()
	return holderOnly("complete", id, completeScript.Run(ctx, s.c, []string{s.key(id)}, token, now.Add(ttl).UnixMilli(), millis(ttl), b))
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, id idempotency.ID, token string) error {
	if err := releaseScript.Run(ctx, s.c, []string{s.key(id)}, token).Err(); err != nil {
		return fmt.Errorf("redis: idempotency release %s: %w", id, err)
	}
	return nil
}

// Get implements idempotency.Store.
func (s *IdempotencyStore) Get(ctx context.Context, id idempotency.ID, now time.Time) (idempotency.Record, bool, error) {
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
