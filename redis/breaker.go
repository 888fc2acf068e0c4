package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
)

// Defaults of BreakerConfig.
const (
	// DefaultBreakerPrefix starts the Redis key of a fleet breaker; the
	// rest is the local breaker's name.
	DefaultBreakerPrefix = "yaoki:breaker:"
	// DefaultSyncInterval is how often Run syncs with the fleet.
	DefaultSyncInterval = time.Second
)

// ErrFleetOpen is the Cause of the *breaker.OpenError with which a Breaker
// refuses a call because another process sharing its name tripped: errors.Is
// matches it as well as breaker.ErrOpen.
var ErrFleetOpen = errors.New("redis: open for the fleet: a process sharing this breaker tripped")

// BreakerConfig configures a Breaker.
type BreakerConfig struct {
	// Client reaches the Redis the fleet shares (a *goredis.Client,
	// *goredis.ClusterClient or *goredis.Ring). Required.
	Client goredis.UniversalClient
	// Local is this process's breaker, which goes on deciding from this
	// process's own calls; processes share the open state of the local
	// breakers that have the same Name (which must not be empty). The
	// fleet's refusals apply to first attempts too, even when Local has
	// RetriesOnly set. Required.
	Local *breaker.Breaker
	// Prefix starts the Redis key: the key is Prefix + Local.Name(). Zero:
	// DefaultBreakerPrefix.
	Prefix string
	// SyncInterval is how often Run calls SyncAt: a trip reaches the
	// other processes within about twice this. Zero: DefaultSyncInterval
	// (1 s). Accepted: 1 ms to 1 h.
	SyncInterval time.Duration
	// Hold keeps a process whose local breaker is closed refusing for
	// this long after the fleet's open period ends, so that the processes
	// whose breakers tripped probe first: when a probe fails, its new open
	// period reaches the others (within two syncs) before they call the
	// dependency; when it succeeds, they resume at the end of Hold. A
	// process whose own breaker tripped is not held: its local breaker
	// decides (it probes); once its probes close it, it is held like the
	// others until Hold ends. Zero: 2 × SyncInterval, which covers the two
	// syncs a new period takes to reach every process; NoHold: none, calls
	// go to the local breaker as soon as the fleet's period ends. Accepted:
	// NoHold, or 0 to 1 h.
	Hold time.Duration
	// OnError, if set, receives the errors of the syncs that Run makes
	// (Redis unreachable, a timeout), on Run's goroutine; it must not
	// block. Nil: they are dropped, and the local breaker goes on alone
	// until a sync succeeds.
	OnError func(error)
	// Observer, if set, receives an event.BreakerRejected (Component
	// "redis", Name the breaker's) for each call refused because the fleet
	// is open. The local breaker reports its own transitions and refusals
	// to its Config.Observer. Nil: no events.
	Observer event.Observer
}

// Breaker shares a circuit breaker's open state across a fleet through
// Redis. It implements retry.Breaker around a local *breaker.Breaker: calls
// are decided by the local breaker from this process's own outcomes, as
// without Redis, except that while another process sharing the name has
// its breaker open, calls are refused here too, without waiting for this
// process to see the failures itself.
//
// SyncAt (called every SyncInterval by Run) is the only network I/O: in one
// round trip (a Lua script on one key) it publishes the end of the local
// breaker's open period, if it is open, keeping the latest end that any
// process published (the key expires at that end), and reads the fleet's.
// AllowAt and DoneAt only read what the last sync learned: the closed path
// adds one atomic load to the local breaker's and allocates nothing.
//
// While the fleet's open period runs, AllowAt refuses with a
// *breaker.OpenError (errors.Is matches breaker.ErrOpen and ErrFleetOpen;
// RetryAfter is the time left) without asking the local breaker. When it
// ends, calls go to the local breaker again, whose own half-open probing is
// unchanged: a process whose breaker tripped probes when its own period
// ends, the others call as usual (and trip on their own if the dependency
// is still down, unless a new trip reaches them first). When Redis cannot
// be reached, each process goes on with its local breaker alone; the local
// breaker's open period is published at the next sync that succeeds, if
// it has not ended by then. The fleet's end only moves later: when Redis
// loses the key (a restart without persistence, FLUSHALL, a failover to a
// replica that had not received it, a DEL), a process that read the
// period goes on refusing until the end it read (and its hold), and those
// that had not read it learn it when a process whose breaker is open puts
// it back, at its next sync: within two SyncIntervals of the loss.
//
// The end is published as an instant (Unix milliseconds) and compared with
// each process's now, so the fleet's clocks should agree to well within the
// open period; the key's expiry (Redis's clock) bounds what a skewed clock
// does. An end is never believed past the key's time to live (+2 s), so a
// process whose clock runs ahead by d makes the others refuse for its
// period's real length, not d longer, and itself follows the others' trips
// only for what is left of their periods after d; a process whose clock is
// behind by d is followed for its period less d. A key the breaker never
// writes (another type, no expiry) is deleted at the next sync rather than
// believed. A clock that steps back (by more than a second) after a sync
// keeps what was left of the fleet's period and hold, from the stepped
// instant. It is safe for concurrent use. A nil *Breaker allows every
// call and syncs nothing, as a nil *Budget allows every retry.
type Breaker struct {
	fleet   atomic.Pointer[fleetOpen] // what the last sync read; nil before the first
	local   *breaker.Breaker
	c       goredis.UniversalClient
	key     string
	every   time.Duration
	hold    int64 // ns
	onError func(error)
	obs     event.Observer
}

// fleetOpen is the fleet's open period as a sync read it.
type fleetOpen struct {
	at    int64 // UnixNano of the sync that read it (or of a clock step back, see current)
	until int64 // UnixNano; 0: the fleet is not open
	held  int64 // until + Hold: processes whose breaker is closed wait until then
	trips int   // the trips of the process that published until
	// last is the refusal handed out most recently: refusals within the
	// same millisecond share it, so that refusing allocates nothing.
	last atomic.Pointer[breaker.OpenError]
}

// NoHold as BreakerConfig.Hold turns the hold off.
const NoHold time.Duration = -1

// NewBreaker returns a Breaker that shares cfg.Local's open state through
// cfg.Client, or an error matching ErrInvalidConfig that names the first
// field of cfg missing or out of range. It does no I/O: the fleet's state is learned
// at the first SyncAt.
func NewBreaker(cfg BreakerConfig) (*Breaker, error) {
	if cfg.Client == nil {
		return nil, invalid("BreakerConfig.Client", nil, "a go-redis client (*goredis.Client, *goredis.ClusterClient, *goredis.Ring)")
	}
	if cfg.Local == nil {
		return nil, invalid("BreakerConfig.Local", nil, "a *breaker.Breaker (breaker.New)")
	}
	if cfg.Local.Name() == "" {
		return nil, invalid("BreakerConfig.Local.Name()", "", "a non-empty name (breaker.Config.Name): it names the fleet's key")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultBreakerPrefix
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = DefaultSyncInterval
	}
	if cfg.SyncInterval < time.Millisecond || cfg.SyncInterval > time.Hour {
		return nil, invalid("BreakerConfig.SyncInterval", cfg.SyncInterval, "1ms ≤ SyncInterval ≤ 1h (0 means the default 1s)")
	}
	switch {
	case cfg.Hold == NoHold:
		cfg.Hold = 0
	case cfg.Hold < 0 || cfg.Hold > time.Hour:
		return nil, invalid("BreakerConfig.Hold", cfg.Hold, "0 ≤ Hold ≤ 1h (0 means 2 × SyncInterval), or NoHold")
	case cfg.Hold == 0:
		cfg.Hold = 2 * cfg.SyncInterval
	}
	return &Breaker{local: cfg.Local, c: cfg.Client, key: cfg.Prefix + cfg.Local.Name(),
		every: cfg.SyncInterval, hold: int64(cfg.Hold), onError: cfg.OnError, obs: cfg.Observer}, nil
}

// Name returns the local breaker's name, which the fleet shares.
func (b *Breaker) Name() string {
	if b == nil {
		return ""
	}
	return b.local.Name()
}

// Key returns the Redis key that holds the fleet's open period.
func (b *Breaker) Key() string {
	if b == nil {
		return ""
	}
	return b.key
}

// AllowAt implements retry.Breaker: it refuses while the fleet's open
// period (as of the last sync) runs at now, and asks the local breaker
// otherwise. It does no I/O; allowed or refused, it allocates nothing
// (refusals within one millisecond share their error).
func (b *Breaker) AllowAt(now time.Time, retry bool) (ticket uint64, err error) {
	if b == nil {
		return 0, nil
	}
	if f := b.fleet.Load(); f != nil {
		ns := now.UnixNano()
		if ns < f.at-stepBack {
			f = b.current(f, ns)
		}
		if ns < f.held && (ns < f.until || b.local.StateAt(now) == breaker.Closed) {
			return 0, b.refuse(now, f, ns)
		}
	}
	return b.local.AllowAt(now, retry)
}

// DoneAt implements retry.Breaker: it passes the outcome to the local
// breaker.
func (b *Breaker) DoneAt(now time.Time, ticket uint64, elapsed time.Duration, err error) {
	if b == nil {
		return
	}
	b.local.DoneAt(now, ticket, elapsed, err)
}

// stepBack is how far before the sync that read the fleet's state an
// instant must be to count as a clock that stepped back (see current):
// instants a little older are those of calls that took now before the sync
// and are not worth a new state each.
const stepBack = int64(time.Second)

// current returns the fleet's state f as it stands at ns, an instant
// before the sync that read it (the clock stepped back): the open period
// and the hold keep the length they had left at that sync, from ns, and
// the result replaces f, so that the process refuses for that long on the
// stepped clock rather than until the clock reaches the end it read (as
// the local breaker does with its own period).
func (b *Breaker) current(f *fleetOpen, ns int64) *fleetOpen {
	for ns < f.at-stepBack && f.until > 0 {
		g := &fleetOpen{at: ns, trips: f.trips, until: f.until - (f.at - ns), held: f.held - (f.at - ns)}
		if b.fleet.CompareAndSwap(f, g) {
			return g
		}
		f = b.fleet.Load()
	}
	return f
}

// refuse returns the refusal for a call at ns (UnixNano) during f, its Wait
// rounded up to the millisecond, and reports it to the observer.
func (b *Breaker) refuse(now time.Time, f *fleetOpen, ns int64) error {
	end := f.until
	if ns >= end {
		end = f.held // held after the period
	}
	ms := (end - ns + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	wait := time.Duration(ms) * time.Millisecond
	e := f.last.Load()
	if e == nil || e.Wait != wait {
		e = &breaker.OpenError{Name: b.local.Name(), State: breaker.Open, Wait: wait, Trips: f.trips, Cause: ErrFleetOpen}
		f.last.Store(e)
	}
	if o := b.obs; o != nil {
		o.Observe(context.Background(), event.Event{Kind: event.BreakerRejected, Time: now, Component: "redis",
			Name: e.Name, Err: e, Wait: wait})
	}
	return e
}

// OpenUntil returns the end of the fleet's open period as of the last
// sync, and whether it runs at now. The local breaker's own open period
// is not included until a sync has published it.
func (b *Breaker) OpenUntil(now time.Time) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	f := b.fleet.Load()
	if f == nil {
		return time.Time{}, false
	}
	if ns := now.UnixNano(); ns < f.at-stepBack {
		f = b.current(f, ns)
	}
	if now.UnixNano() >= f.until {
		return time.Time{}, false
	}
	return time.Unix(0, f.until), true
}

// StateAt returns Open while AllowAt refuses because of the fleet (its
// open period runs at now, or Hold holds this process), and the local
// breaker's state otherwise.
func (b *Breaker) StateAt(now time.Time) breaker.State {
	if b == nil {
		return breaker.Closed
	}
	s := b.local.StateAt(now)
	if f := b.fleet.Load(); f != nil {
		ns := now.UnixNano()
		if ns < f.at-stepBack {
			f = b.current(f, ns)
		}
		if ns < f.held && (ns < f.until || s == breaker.Closed) {
			return breaker.Open
		}
	}
	return s
}

// State is shorthand for StateAt(time.Now()); with Name, it lets
// yaoki/otel's TrackBreaker report the state a caller sees.
func (b *Breaker) State() breaker.State { return b.StateAt(time.Now()) }

// syncScript: KEYS[1] the fleet's key, a hash of u (the end of the open
// period, Unix ms) and n (the trips of the process that published it),
// which expires when u passes. ARGV until_ms (0: nothing to publish),
// trips, ttl_ms, now_ms (the caller's clock), slack_ms. The stored end is
// read as it stands for the caller: at most its clock plus the key's time
// to live (plus slack), so that an end published by a process whose clock
// runs ahead is not believed past the real end of its period. A key this
// script never writes (another type, or no expiry: another version's, or
// corrupt) is deleted rather than believed, which would refuse calls or
// block every later end for as long as it stays. A later end replaces the
// stored one and sets the key to expire when it passes; an earlier one
// changes nothing. Returns {u, n} after the update, {0, 0} when no process
// is open.
var syncScript = goredis.NewScript(`
local key = KEYS[1]
local want, now = tonumber(ARGV[1]), tonumber(ARGV[4])
local u, n = 0, 0
local kind = redis.call('TYPE', key)['ok']
if kind ~= 'none' then
  local ttl = redis.call('PTTL', key)
  if kind == 'hash' and ttl > 0 then
    local v = redis.call('HMGET', key, 'u', 'n')
    u = tonumber(v[1]) or 0
    if u ~= u then u = 0 end
    u = math.min(u, now + ttl + tonumber(ARGV[5]))
    n = tonumber(v[2]) or 0
  else
    redis.call('DEL', key)
  end
end
if want > u then
  redis.call('HSET', key, 'u', ARGV[1], 'n', ARGV[2])
  redis.call('PEXPIRE', key, ARGV[3])
  return {want, tonumber(ARGV[2])}
end
return {u, n}
`)

// clockSlack is how far past the fleet key's time to live an end read from
// it is still believed: the margin between the clock of the process that
// published it and Redis's (see syncScript).
const clockSlack = 2 * time.Second

// SyncAt exchanges state with the fleet in one round trip: it publishes the
// end of the local breaker's open period if the breaker is open at now,
// keeping the latest end any process published, and learns the fleet's.
// An open period is published at every sync while it runs (an earlier or
// equal end changes nothing), so that a key lost with a Redis restart is
// put back, and a trip made while Redis was unreachable reaches the fleet
// at the first sync that succeeds. On error the fleet's state known from
// the last successful sync is kept, and the error (wrapped, naming the
// breaker) is returned.
//
// The key expires when the open period ends, measured from now: a stepped
// now in tests sets a real expiry of the same length.
func (b *Breaker) SyncAt(ctx context.Context, now time.Time) error {
	if b == nil {
		return nil
	}
	var untilMs, trips, ttlMs int64
	if u, open := b.local.OpenUntil(now); open {
		untilMs = ceilMillis(u.UnixNano())
		trips = int64(max(1, b.local.Trips()))
		ttlMs = max(1, untilMs-now.UnixMilli())
	}
	res, err := syncScript.Run(ctx, b.c, []string{b.key}, untilMs, trips, ttlMs, now.UnixMilli(), clockSlack.Milliseconds()).Int64Slice()
	if err != nil {
		return fmt.Errorf("redis: breaker %q sync with the fleet (key %s): %w", b.local.Name(), b.key, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("redis: breaker %q sync with the fleet (key %s): unexpected reply of %d values", b.local.Name(), b.key, len(res))
	}
	var until int64
	n := int(min(max(res[1], 1), math.MaxInt32))
	switch ms := res[0]; {
	case ms <= 0:
		n = 0
	case ms > math.MaxInt64/int64(time.Millisecond):
		until = math.MaxInt64
	default:
		until = ms * int64(time.Millisecond)
	}
	nowNs := now.UnixNano()
	if f := b.fleet.Load(); f != nil {
		if nowNs < f.at-stepBack {
			f = b.current(f, nowNs)
		}
		if until < f.until && nowNs < f.held {
			// Redis no longer holds the period read before, or holds an
			// earlier one: the key expired with the period (on Redis's
			// clock), or was lost (a restart without persistence, a
			// flush, a failover to a replica that had not received it,
			// a DEL, a foreign value deleted). The fleet's end never
			// moves earlier, so what was read stands, with its hold:
			// otherwise the process would call at once, until the
			// process that tripped puts its period back.
			return nil
		}
	}
	// The instant of the sync is kept while the fleet is open (see
	// current); a closed fleet is stored once.
	if f := b.fleet.Load(); f == nil || until > 0 || f.until != 0 {
		held := until
		if until > 0 {
			held = min(until, math.MaxInt64-b.hold) + b.hold
		}
		b.fleet.Store(&fleetOpen{at: nowNs, until: until, held: held, trips: n})
	}
	return nil
}

// Sync is shorthand for SyncAt(ctx, time.Now()).
func (b *Breaker) Sync(ctx context.Context) error { return b.SyncAt(ctx, time.Now()) }

// Run syncs with the fleet at once and then every SyncInterval, each sync
// under a context that ends after SyncInterval, until ctx ends; errors go
// to OnError. go-redis honours that context only with
// Options.ContextTimeoutEnabled: otherwise a server that stops answering
// holds a sync for the client's ReadTimeout (3 s by default), and Run syncs
// that much later; calls never wait for it. Run it on a goroutine of its
// own, one per Breaker: it makes one sync at a time.
func (b *Breaker) Run(ctx context.Context) {
	if b == nil {
		return
	}
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, b.every)
		err := b.SyncAt(sctx, time.Now())
		cancel()
		if err != nil && ctx.Err() == nil && b.onError != nil {
			b.onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ceilMillis is ns (UnixNano) in Unix milliseconds, rounded up, so that the
// published end is never before the local one.
func ceilMillis(ns int64) int64 {
	ms := ns / int64(time.Millisecond)
	if ns%int64(time.Millisecond) > 0 {
		ms++
	}
	return ms
}
