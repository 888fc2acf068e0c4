package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A budget's keys, all with the hash tag {name} so that they lie in one
// Redis Cluster slot:
//
//	PREFIX{name}:SLOT   hash s, r, a: the fleet's successes, retries granted
//	                    and retries asked for, counted by the syncs made
//	                    during slot number SLOT (Unix time / Slot); expires
//	                    Window + Slot + 1 s after its last write
//	PREFIX{name}:p:ID   hash s, r, a: the cumulative counts of process ID
//	                    already added to the slots; expires 1 h + Window
//	                    after its last sync
//	PREFIX{name}:procs  sorted set: the processes, scored by the instant of
//	                    their last sync (Unix ms); a process silent for a
//	                    Window is removed, and its reservation with it
//	PREFIX{name}:held   hash: each process's reservation (ID → retries), and
//	                    their total under "*"

// procKeyTTL is how long Redis remembers what a silent process has sent.
const procKeyTTL = time.Hour

// budgetKeys builds and caches the KEYS of the sync script: the window's
// slots, oldest first, then the process's key, the set of processes and
// the reservations.
type budgetKeys struct {
	slotPrefix string
	id         string // the process's ID, random
	epoch      int64  // slot number of keys[n-1]; valid when keys[0] != ""
	keys       []string
}

func (k *budgetKeys) init(prefix, name, id string, n int) {
	k.slotPrefix = prefix + "{" + name + "}:"
	k.id = id
	k.keys = make([]string, n+3)
	k.keys[n] = k.slotPrefix + "p:" + id
	k.keys[n+1] = k.slotPrefix + "procs"
	k.keys[n+2] = k.slotPrefix + "held"
}

// at returns the keys for a sync in slot number e.
func (k *budgetKeys) at(e int64) []string {
	n := len(k.keys) - 3
	switch {
	case k.keys[0] != "" && e == k.epoch:
	case k.keys[0] != "" && e == k.epoch+1: // the usual case: one slot later
		copy(k.keys[:n-1], k.keys[1:n])
		k.keys[n-1] = k.slotPrefix + strconv.FormatInt(e, 10)
	default:
		for i := range n {
			k.keys[i] = k.slotPrefix + strconv.FormatInt(e-int64(n-1-i), 10)
		}
	}
	k.epoch = e
	return k.keys
}

// budgetScript adds a process's new counts to the slot of now, reserves its
// share of what the fleet has left, and returns the fleet's totals over
// the window.
//
// KEYS: the n slots of the window (the last is now's), the process's key,
// the set of processes, the reservations. ARGV: 1 process ID; 2-4 its
// cumulative successes, retries and asks; 5-7 the same as it knows Redis
// holds them (used only if its key is gone); 8 now (Unix ms); 9 the oldest
// score kept in the set; 10 the TTL of the slot and of the shared keys
// (ms); 11 the TTL of the process's key; 12 Ratio; 13 the floor per window;
// 14-16 the process's asks, successes and retries over the window (its
// own counters; successes and retries are used only when Redis has lost
// the process, see below); 17 1 if the process synced before, else 0.
// Returns the fleet's successes,
// retries and asks over the window, the number of processes, the
// cumulative counts Redis now holds for this process, and its reservation.
//
// When Redis has lost a process that synced before (neither its key nor
// its entry in the set of processes: a restart without persistence, a
// flush, a failover to a replica that never had them), the window's
// counts went with it: the
// process adds, into the slot of now, its own counts over the window
// where they exceed those it has not sent, so that the fleet's totals
// come back with the first sync of each process rather than starting
// from nothing (a whole allowance granted again against a dependency that
// is still down). Its counts over the window are read after the
// cumulative ones it sends, so those recorded meanwhile by other
// goroutines may count twice, once, at that sync. A process's first sync
// is not such a loss: all it has counted is in what it sends, and adding
// its window's counts as well counted those recorded during the sync
// twice (TestBudgetConcurrentSync). When Redis holds less for the process than it had
// acknowledged (a replica promoted before it received the last syncs), the
// difference is sent again. In both cases a process that had synced
// before reserves nothing at that sync: the others' counts are not back
// yet, and what is left would look larger than it is; until its next sync
// it grants what its own new successes earn.
//
// What no sync writes (another version's keys, or corrupt ones) is read as
// nothing rather than failing every sync or skewing the totals for as long
// as it stays: a key of another type is deleted (an earlier slot is
// skipped), a count that is not an integer from 0 to 2^53 reads as 0 (in
// the slot of now, it is reset). The reservations are counted again from
// the processes' own entries when their total cannot be right (no
// number, or more than every entry holding the whole allowance), or when
// entries outnumber the processes; and dropped when the set of processes
// is gone (evicted or expired): whose reservations they were can no longer
// be told, and a dead process's would be kept aside for good.
var budgetScript = goredis.NewScript(`
local n = #KEYS - 3
local cur, pk, zk, hk = KEYS[n], KEYS[n+1], KEYS[n+2], KEYS[n+3]
local id = ARGV[1]
local f = {'s', 'r', 'a'}
local function count(x)
  local v = tonumber(x)
  if v == nil or v ~= v or v < 0 or v > 9007199254740992 or v ~= math.floor(v) then return nil end
  return v
end
local function claim(key, kind)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= kind then redis.call('DEL', key) end
end
claim(cur, 'hash')
claim(pk, 'hash')
claim(zk, 'zset')
claim(hk, 'hash')
local seen = redis.call('HMGET', cur, 's', 'r', 'a')
for i = 1, 3 do
  if seen[i] and not count(seen[i]) then redis.call('HDEL', cur, f[i]) end
end
local had = redis.call('HMGET', pk, 's', 'r', 'a')
local lost = ARGV[17] == '1' and not (had[1] or had[2] or had[3]) and not redis.call('ZSCORE', zk, id)
local w = {ARGV[15], ARGV[16], ARGV[14]}
local held = {}
local behind = lost
for i = 1, 3 do
  local sent = tonumber(ARGV[1+i])
  local base = count(had[i]) or tonumber(ARGV[4+i])
  if base < tonumber(ARGV[4+i]) then behind = true end
  local add = sent - base
  if lost then add = math.max(add, tonumber(w[i])) end
  if add > 0 then
    redis.call('HINCRBY', cur, f[i], string.format('%d', add))
  end
  held[i] = math.max(base, sent)
end
redis.call('HSET', pk, 's', string.format('%d', held[1]), 'r', string.format('%d', held[2]), 'a', string.format('%d', held[3]))
redis.call('PEXPIRE', pk, ARGV[11])
if redis.call('EXISTS', cur) == 1 then redis.call('PEXPIRE', cur, ARGV[10]) end
if redis.call('EXISTS', zk) == 0 then redis.call('DEL', hk) end
local total = count(redis.call('HGET', hk, '*'))
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', zk, '-inf', '(' .. ARGV[9])) do
  total = total and total - (count(redis.call('HGET', hk, gone)) or 0)
  redis.call('HDEL', hk, gone)
  redis.call('ZREM', zk, gone)
end
redis.call('ZADD', zk, ARGV[8], id)
redis.call('PEXPIRE', zk, ARGV[10])
local procs = redis.call('ZCARD', zk)
local t = {0, 0, 0}
for k = 1, n do
  local v = redis.pcall('HMGET', KEYS[k], 's', 'r', 'a')
  if not v.err then
    for i = 1, 3 do t[i] = t[i] + (count(v[i]) or 0) end
  end
end
local allowance = tonumber(ARGV[12]) * t[1] + tonumber(ARGV[13])
local entries = redis.call('HLEN', hk)
if total == nil or total > entries * allowance or entries > procs + 1 then
  total = 0
  local all = redis.call('HGETALL', hk)
  for j = 1, #all, 2 do
    if all[j] ~= '*' then
      local q = count(all[j+1])
      if q and redis.call('ZSCORE', zk, all[j]) then
        total = total + q
      else
        redis.call('HDEL', hk, all[j])
      end
    end
  end
end
local others = math.max(0, total - (count(redis.call('HGET', hk, id)) or 0))
local left = math.max(0, allowance - t[2])
local share = math.min(1, (tonumber(ARGV[14]) + 1) / (t[3] + procs))
local q = math.floor(math.min(left * share, math.max(0, left - others)))
if behind and ARGV[17] == '1' then q = 0 end
redis.call('HSET', hk, id, string.format('%d', q), '*', string.format('%d', others + q))
redis.call('PEXPIRE', hk, ARGV[10])
return {t[1], t[2], t[3], procs, held[1], held[2], held[3], q}
`)

// SyncAt shares this process's counts with the fleet at now and reads the
// fleet's totals over the window, in one round trip: it sends the counts
// recorded and granted since the last successful sync (and any that an
// earlier sync failed to send) into the Redis slot of now, and keeps the
// totals for AllowRetryAt until the next sync. On error the budget decides
// alone until a sync succeeds, and the counts are kept for the next sync.
// Syncs are serialised; SyncAt is safe for concurrent use with everything
// else.
func (b *Budget) SyncAt(ctx context.Context, now time.Time) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sent := [3]int64{b.cumS.Load(), b.cumR.Load(), b.cumA.Load()}
	nowNs := now.UnixNano()
	e := nowNs / int64(b.slot)
	if nowNs < 0 && nowNs%int64(b.slot) != 0 {
		e--
	}
	nowMs := now.UnixMilli()
	rejoin := 0
	if s := b.snap.Load(); s != nil && s.synced {
		rejoin = 1
	}
	res, err := budgetScript.Run(ctx, b.c, b.keys.at(e), b.keys.id,
		sent[0], sent[1], sent[2], b.acked[0], b.acked[1], b.acked[2],
		nowMs, nowMs-b.window.Milliseconds(), millis(b.window+b.slot+time.Second), millis(procKeyTTL+b.window),
		b.ratio, b.floor, b.asks.Sum(now), b.succ.Sum(now), b.retr.Sum(now), rejoin,
	).Int64Slice()
	if err == nil && len(res) != 8 {
		err = fmt.Errorf("unexpected reply of %d values", len(res))
	}
	if err != nil {
		b.markFailed()
		return fmt.Errorf("redis: budget %s sync: %w", b.name, err)
	}
	copy(b.acked[:], res[4:7])
	s := &budgetSnapshot{
		synced: true,
		shared: true,
		at:     nowNs,
		base:   b.acked,
		succ:   res[0],
		retr:   res[1],
		procs:  max(1, res[3]),
		quota:  float64(res[7]),
	}
	s.local = b.floor / float64(s.procs)
	b.snap.Store(s)
	return nil
}

// markFailed makes the hot path decide alone, keeping what the last good
// sync learnt (its instant, the fleet's size) for StateAt and the local
// floor. Called with b.mu held.
func (b *Budget) markFailed() {
	f := &budgetSnapshot{local: b.floor}
	if s := b.snap.Load(); s != nil {
		c := *s
		f = &c
		f.shared = false
	}
	b.snap.Store(f)
}

// Sync is shorthand for SyncAt(ctx, time.Now()).
func (b *Budget) Sync(ctx context.Context) error { return b.SyncAt(ctx, time.Now()) }

// Run syncs the budget with the fleet at once and then every SyncInterval,
// until ctx ends; each sync under a context that ends after SyncInterval,
// at least 1 s (go-redis honours it only with
// Options.ContextTimeoutEnabled; otherwise a server that stops answering
// holds a sync for the client's ReadTimeout, 3 s by default). The errors
// of failed syncs go to BudgetConfig.OnError (while Redis cannot be
// reached the budget decides alone, see Budget). Run one Run per Budget,
// typically in its own goroutine for the life of the process.
func (b *Budget) Run(ctx context.Context) {
	if b == nil {
		return
	}
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, max(b.every, time.Second))
		err := b.SyncAt(sctx, time.Now())
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && b.onError != nil {
			b.onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
