package redis

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/internal/window"
)

// DefaultBudgetPrefix is the prefix of a Budget's Redis keys when
// BudgetConfig.Prefix is empty.
const DefaultBudgetPrefix = "yaoki:budget:"

// maxBudgetSlots bounds Window/Slot: every sync reads that many keys.
const maxBudgetSlots = 100

// BudgetConfig configures a Budget. Client and Name are required; every
// other zero field means its default. Ratio, Window and MinPerSecond mean
// what they mean in budget.ShareConfig, counted over the whole fleet, with
// the same defaults but the floor's, which is the fleet's
// (budget.DefaultFleetMinPerSecond).
type BudgetConfig struct {
	// Client reaches the Redis that the fleet shares: a *goredis.Client,
	// *goredis.ClusterClient or *goredis.Ring. Required.
	Client goredis.UniversalClient
	// Name names the budget, and thus what it protects (e.g. a
	// dependency: "payments-api"): every process that uses the same
	// Redis, Prefix and Name shares one budget. Required.
	Name string
	// Prefix starts every key of the budget. Zero: DefaultBudgetPrefix.
	Prefix string
	// Ratio is the share of the fleet's successful requests that may be
	// retried over Window. Zero: budget.DefaultRatio (0.2). Accepted:
	// 0 < Ratio ≤ 100.
	Ratio float64
	// Window is how far back successes and retries are counted. Zero:
	// budget.DefaultWindow (10 s). Accepted: 10 ms to 1 h, a whole
	// multiple of Slot, at most 100 slots.
	Window time.Duration
	// MinPerSecond is the floor, for the whole fleet: this many retries
	// per second (MinPerSecond × Window per window) are granted whatever
	// the traffic, shared by the processes. Zero:
	// budget.DefaultFleetMinPerSecond (1: one retry per second for the
	// fleet, a tenth of one process's budget.Share, since it is one floor
	// for all of them; against a dead dependency the fleet sends 1 + 1 /
	// its calls per second attempts per call). budget.NoFloor (-1): no
	// floor. Accepted: NoFloor, or 0 < MinPerSecond ≤ 1e6.
	MinPerSecond float64
	// Slot is the width of the time buckets in Redis: the window slides in
	// steps of Slot, and a sync writes into the bucket of its instant.
	// Zero: Window/10 (1 s with the default window). Accepted: at least
	// 1 ms, dividing Window into at most 100 slots.
	Slot time.Duration
	// SyncInterval is how often Run calls SyncAt. Zero: Slot (1 s with
	// the defaults). Accepted: 1 ms ≤ SyncInterval ≤ Window/2.
	SyncInterval time.Duration
	// OnError, when not nil, receives the error of every sync that Run
	// made and that failed (not those of SyncAt called directly: the
	// caller has them). It is called from Run's goroutine, outside any
	// lock; it must not block for long.
	OnError func(error)
}

// Budget is a share-of-traffic retry budget (a retry.Budget) shared by a
// fleet of processes through Redis: budget.Share's rule, retries over the
// window ≤ Ratio × successes + MinPerSecond × Window, applied to the
// fleet's totals, so that many light clients get one floor between them
// rather than one each.
//
// The hot path (AllowRetryAt, RecordAt) does no I/O and allocates nothing:
// each process counts what it records and grants with atomics, and SyncAt,
// called every SyncInterval by Run, sends those counts to Redis and reads
// back the fleet's totals over the window, in one round trip (one Lua
// script). Decisions use the totals of the last sync plus this process's
// counts since.
//
// Between syncs the processes decide without hearing of each other, so
// what each may grant in that time is reserved in Redis by the same script:
// its share of what the fleet has left (the allowance minus the retries
// granted over the window), by its part of the fleet's retry requests over
// the window, each process counted once more so that one that has not
// asked yet gets a part at once: left × (its requests + 1) / (the fleet's +
// the processes), and never more than what the others' reservations leave.
// A process then grants until its next sync at most its reservation plus
// Ratio × its own successes since (an allowance that no other process can
// have spent). The bound: while syncs succeed, the fleet never grants more
// than its allowance between syncs, however many processes there are and
// whenever they sync. What remains are budget.Share's own approximations
// (retries earned by successes that the window has since passed stay
// counted until they leave it too) and the dating of counts at the sync
// that sends them, up to one SyncInterval late. The cost: a reservation is
// not available to the others until its holder's next sync, used or not,
// and a process that starts asking gets only its smoothed share until
// then. A process that stops syncing for a Window is dropped from the
// fleet, and its reservation returned.
//
// When SyncAt fails (Redis unreachable), or the last successful sync is
// older than Window, the process decides on its own counts over the window
// instead, as a budget.Share would, with its part of the floor
// (MinPerSecond × Window divided by the number of processes seen at the
// last sync; all of it before the first sync, so a fleet that starts while
// Redis is down gets a floor per process) until a sync succeeds again.
// Nothing on the hot path fails; SyncAt returns the error, Run passes it to
// OnError.
//
// Counts that a failed sync could not send are never lost nor counted twice:
// the process sends its cumulative counts, Redis keeps (in a key of the
// process's own) the cumulative counts it has already added, and the script
// adds only the difference, into the slot of the sync's instant. A sync
// whose script ran but whose reply was lost is therefore harmless: the next
// one adds nothing for the same counts (and replaces the reservation it
// made). Should that key be gone, after an hour without a successful sync,
// the script falls back on the counts the process knows were added, which
// can count again only the counts of that one lost reply. Counts held back
// by a failed sync are dated at the next successful one, so they stay in
// the window that much longer.
//
// When Redis loses the budget (a restart without persistence, FLUSHALL, a
// failover to a replica that lags), each process's next sync finds neither
// its key nor its entry in the set of processes and puts back its own
// counts over the window, dated at the sync, so that the fleet does not
// grant its allowance a second time against a dependency that is still
// down; a replica promoted before it received a process's last syncs gets
// the counts it lacks sent again. At that sync the process reserves
// nothing, as the others' counts are not back yet: for one SyncInterval
// it grants only what its own new successes earn. Every key of a budget
// expires, so an eviction policy (volatile-lru, allkeys-lru) may take any
// of them: counts in an evicted slot are lost for the window they were in
// (if a process's key and its entry go too, its own counts over the
// window are put back, and may count twice with slots left); when the set of processes is lost, the reservations go with
// it (a dead process's would otherwise be kept aside for good), and the
// processes reserve again at their next sync. A key or value that no sync
// writes (another version's, or corrupt) is read as nothing, never as a
// reason for every sync to fail.
//
// Decisions compare instants the processes pass (now), so the fleet's
// clocks should agree to well within a Slot. A process whose clock is off
// by more writes its counts to slots the others do not read at the time
// (one ahead by less than Window + Slot + 1 s has them read later, when the
// others' clocks reach those slots, which only makes them grant less) and
// reads slots they do not write: it is a fleet of its own with the whole
// floor, so that the fleet grants at most twice its allowance per window,
// whatever the skew. All the keys of a budget carry
// the hash tag {Name}, so that they lie in one Redis Cluster slot.
//
// Budget is safe for concurrent use. A nil *Budget allows every retry and
// records nothing.
type Budget struct {
	ratio   float64
	floor   float64 // retries per window for the fleet
	window  time.Duration
	slot    time.Duration
	nSlots  int
	every   time.Duration
	onError func(error)
	c       goredis.UniversalClient
	name    string
	keys    budgetKeys

	// Cumulative counts of this process since it started: successes,
	// retries granted, retries asked for.
	cumS, cumR, cumA atomic.Int64
	// The same over the window, for decisions without Redis and for this
	// process's share.
	succ, retr, asks window.Counter

	snap atomic.Pointer[budgetSnapshot]

	mu    sync.Mutex // serialises syncs; guards acked
	acked [3]int64   // cumulative counts Redis is known to hold
}

// budgetSnapshot is what one sync learnt, read by the hot path. It is never
// modified once stored.
type budgetSnapshot struct {
	synced bool // a sync succeeded (the fields below are its)
	shared bool // false after a failed sync
	at     int64
	base   [3]int64 // cumS, cumR, cumA included in the totals below
	succ   int64    // the fleet's successes over the window
	retr   int64    // the fleet's retries over the window
	procs  int64    // processes that synced within the window
	quota  float64  // this process's reservation: what it may grant until its next sync, beside what its own new successes earn
	local  float64  // this process's part of the floor when it decides alone
}

// NewBudget returns a Budget configured by c, or an error matching
// ErrInvalidConfig that names the first field missing or out of range. It does not reach Redis:
// call Run (or SyncAt) to share the budget with the fleet; until the first
// successful sync the budget decides alone.
func NewBudget(c BudgetConfig) (*Budget, error) {
	if c.Prefix == "" {
		c.Prefix = DefaultBudgetPrefix
	}
	if c.Ratio == 0 {
		c.Ratio = budget.DefaultRatio
	}
	if c.Window == 0 {
		c.Window = budget.DefaultWindow
	}
	if c.MinPerSecond == 0 {
		c.MinPerSecond = budget.DefaultFleetMinPerSecond
	}
	if c.Slot == 0 {
		c.Slot = c.Window / 10
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = c.Slot
	}
	bad := func(field string, v any, want string) error { return invalid("BudgetConfig."+field, v, want) }
	switch {
	case c.Client == nil:
		return nil, bad("Client", c.Client, "a *goredis.Client, *goredis.ClusterClient or *goredis.Ring")
	case c.Name == "":
		return nil, bad("Name", c.Name, "a non-empty name, e.g. the dependency the budget protects")
	case !(c.Ratio > 0 && c.Ratio <= 100):
		return nil, bad("Ratio", c.Ratio, "0 < Ratio ≤ 100 (0 means the default 0.2)")
	case c.Window < 10*time.Millisecond || c.Window > time.Hour:
		return nil, bad("Window", c.Window, "10ms ≤ Window ≤ 1h (0 means the default 10s)")
	case c.Slot < time.Millisecond || c.Window%c.Slot != 0 || c.Window/c.Slot > maxBudgetSlots:
		return nil, bad("Slot", c.Slot, "at least 1ms, dividing Window ("+c.Window.String()+") into at most 100 whole slots (0 means Window/10)")
	case c.MinPerSecond != budget.NoFloor && !(c.MinPerSecond > 0 && c.MinPerSecond <= 1e6):
		return nil, bad("MinPerSecond", c.MinPerSecond, "budget.NoFloor (-1) or 0 < MinPerSecond ≤ 1e6 (0 means the default 1)")
	case c.SyncInterval < time.Millisecond || c.SyncInterval > c.Window/2:
		return nil, bad("SyncInterval", c.SyncInterval, "1ms ≤ SyncInterval ≤ Window/2 ("+(c.Window/2).String()+"; 0 means Slot)")
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read does not fail (Go ≥ 1.24)
	b := &Budget{
		ratio:   c.Ratio,
		window:  c.Window,
		slot:    c.Slot,
		nSlots:  int(c.Window / c.Slot),
		every:   c.SyncInterval,
		onError: c.OnError,
		c:       c.Client,
		name:    c.Name,
	}
	if c.MinPerSecond > 0 {
		b.floor = c.MinPerSecond * c.Window.Seconds()
	}
	b.keys.init(c.Prefix, c.Name, hex.EncodeToString(id[:]), b.nSlots)
	b.succ.Init(c.Window, b.nSlots)
	b.retr.Init(c.Window, b.nSlots)
	b.asks.Init(c.Window, b.nSlots)
	return b, nil
}

// AllowRetryAt reports whether one more retry may be sent at now and, if
// so, counts it. timeout is ignored: every retry costs the same. It does no
// I/O and does not allocate.
func (b *Budget) AllowRetryAt(now time.Time, timeout bool) bool {
	if b == nil {
		return true
	}
	b.cumA.Add(1)
	e := b.succ.Epoch(now)
	b.asks.AddEpoch(e, 1)
	if s := b.fresh(now); s != nil {
		earned := s.quota + b.ratio*float64(b.cumS.Load()-s.base[0])
		for {
			r := b.cumR.Load()
			if float64(r-s.base[1]+1) > earned {
				return false
			}
			if b.cumR.CompareAndSwap(r, r+1) {
				break
			}
		}
	} else {
		if float64(b.retr.SumEpoch(e)+1) > b.ratio*float64(b.succ.SumEpoch(e))+b.localFloor() {
			return false
		}
		b.cumR.Add(1)
	}
	b.retr.AddEpoch(e, 1)
	return true
}

// CancelRetryAt takes back a retry that AllowRetryAt granted at granted
// but the caller did not send (a breaker refused it after the wait, the
// caller left during it): it no longer counts against this process's
// allowance (unless the window has slid past it) nor, from the next sync,
// against the fleet's. A retry that a sync has already sent to Redis is
// taken off the next one this process grants instead, so that the
// fleet's count never goes down and no retry is counted twice. The flags
// are not used. It does no I/O and does not allocate. It implements
// retry.BudgetCanceller.
func (b *Budget) CancelRetryAt(granted time.Time, throttled, timeout bool) {
	if b == nil {
		return
	}
	b.cumR.Add(-1)
	b.retr.SubEpoch(b.succ.Epoch(granted), 1)
}

// RecordAt counts a successful request when success is true, whether the
// attempt was a first one or a retry (a logical request succeeds at most
// once). A failed attempt adds nothing: retries were counted when they were
// granted. It does no I/O and does not allocate.
func (b *Budget) RecordAt(now time.Time, first, success bool) {
	if b == nil || !success {
		return
	}
	b.cumS.Add(1)
	b.succ.Add(now, 1)
}

// LevelAt returns how many retries this process would still grant at now:
// its reservation, plus what its own successes since its last sync earned,
// minus what it granted since; or, deciding alone, its local allowance
// minus its retries over the window. At least 0; +Inf for a nil *Budget.
func (b *Budget) LevelAt(now time.Time) float64 {
	if b == nil {
		return math.Inf(1)
	}
	if s := b.fresh(now); s != nil {
		earned := s.quota + b.ratio*float64(b.cumS.Load()-s.base[0])
		return max(0, earned-float64(b.cumR.Load()-s.base[1]))
	}
	e := b.succ.Epoch(now)
	return max(0, b.ratio*float64(b.succ.SumEpoch(e))+b.localFloor()-float64(b.retr.SumEpoch(e)))
}

// Level is shorthand for LevelAt(time.Now()), for gauges
// (otel.Observer.TrackBudget).
func (b *Budget) Level() float64 { return b.LevelAt(time.Now()) }

// fresh returns the last snapshot if decisions may use it at now: the last
// sync succeeded and is not older than the window.
func (b *Budget) fresh(now time.Time) *budgetSnapshot {
	s := b.snap.Load()
	if s == nil || !s.shared || now.UnixNano()-s.at > int64(b.window) {
		return nil
	}
	return s
}

// localFloor is this process's part of the fleet's floor when it decides
// alone: the floor divided by the processes seen at the last sync.
func (b *Budget) localFloor() float64 {
	if s := b.snap.Load(); s != nil {
		return s.local
	}
	return b.floor
}

// BudgetState is what a Budget knows of its fleet, for tests, logs and
// dashboards.
type BudgetState struct {
	// Shared is true when decisions use the fleet's totals; false when the
	// process decides alone (no successful sync yet, the last sync
	// failed, or it is older than Window).
	Shared bool
	// SyncedAt is the instant of the last successful sync (zero: none).
	SyncedAt time.Time
	// Processes, Successes and Retries are the fleet's as of SyncedAt:
	// the processes that synced within the window, and the successes and
	// retries they counted over it.
	Processes          int
	Successes, Retries int64
	// Quota is the retries this process reserved at SyncedAt: what it may
	// grant until its next sync, beyond Ratio × its own successes since.
	Quota float64
}

// StateAt returns the budget's state at now. It does no I/O.
func (b *Budget) StateAt(now time.Time) BudgetState {
	if b == nil {
		return BudgetState{}
	}
	var st BudgetState
	// After a failed sync, the snapshot is the last good one marked not
	// shared.
	if s := b.snap.Load(); s != nil && s.synced {
		st = BudgetState{
			SyncedAt:  time.Unix(0, s.at),
			Processes: int(s.procs),
			Successes: s.succ,
			Retries:   s.retr,
			Quota:     s.quota,
		}
	}
	st.Shared = b.fresh(now) != nil
	return st
}
