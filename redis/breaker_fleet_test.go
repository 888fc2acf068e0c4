package redis_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

// fleetScenario is a fleet of processes calling one dependency on stepped
// time: every running process makes one call per tick (or, with every, one
// call every every(i) ticks); the dependency
// answers until healthy has passed, then fails every call for outage.
type fleetScenario struct {
	name    string
	procs   int
	tick    time.Duration
	healthy time.Duration
	outage  time.Duration
	start   func(i int) time.Duration // when process i starts, from t0
	every   func(i int) int           // nil: every tick
}

// fleetResult counts the failures the dependency sees.
type fleetResult struct {
	toStop int           // until every process refuses in the same tick; -1 if that never happens
	stopAt time.Duration // when that happened, from the start of the outage
	total  int           // over the whole outage
}

// runFleet plays sc with breakers that are each process's own (shared
// false: breaker.Breaker with the default settings) or share their open
// state through srv (redis.Breaker around the same local breakers, each
// process syncing when it starts and then every DefaultSyncInterval, as
// Run does). The open-period jitter is drawn from a fixed seed per process,
// so that a run is reproducible.
func runFleet(t *testing.T, srv *redistest.Server, sc fleetScenario, shared bool, hold time.Duration) fleetResult {
	t.Helper()
	type proc struct {
		b      retry.Breaker
		fleet  *redis.Breaker
		start  time.Time
		synced time.Time
	}
	procs := make([]proc, sc.procs)
	prefix := fmt.Sprintf("fleet:%s:%v:", sc.name, hold)
	for i := range procs {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		local, err := breaker.New(breaker.Config{Name: "dependency", Rand: r.Float64})
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = proc{b: local, start: t0.Add(sc.start(i))}
		if shared {
			fb, err := redis.NewBreaker(redis.BreakerConfig{Client: srv.Client(t), Local: local, Prefix: prefix, Hold: hold})
			if err != nil {
				t.Fatal(err)
			}
			procs[i].b, procs[i].fleet = fb, fb
		}
	}
	res := fleetResult{toStop: -1}
	outageAt := t0.Add(sc.healthy)
	end := outageAt.Add(sc.outage)
	for k, now := 0, t0; now.Before(end); k, now = k+1, now.Add(sc.tick) {
		running, refused := 0, 0
		for i := range procs {
			p := &procs[i]
			if now.Before(p.start) {
				continue
			}
			running++
			if p.fleet != nil && (p.synced.IsZero() || !now.Before(p.synced.Add(redis.DefaultSyncInterval))) {
				if err := p.fleet.SyncAt(t.Context(), now); err != nil {
					t.Fatal(err)
				}
				p.synced = now
			}
			if sc.every != nil && k%sc.every(i) != 0 {
				if p.b.(interface{ StateAt(time.Time) breaker.State }).StateAt(now) == breaker.Open {
					refused++ // it would refuse a call now
				}
				continue
			}
			tk, err := p.b.AllowAt(now, false)
			if err != nil {
				refused++
				continue
			}
			var cerr error
			if !now.Before(outageAt) {
				cerr = down
				res.total++
			}
			p.b.DoneAt(now, tk, time.Millisecond, cerr)
		}
		if res.toStop < 0 && running == sc.procs && refused == sc.procs {
			res.toStop, res.stopAt = res.total, now.Sub(outageAt)
		}
	}
	return res
}

// TestFleetFailures measures what a dependency that dies receives from a
// fleet of 10 processes with the default breaker (trip at ≥ 50 % failures
// over 30 s once 20 calls were made; open 30 s, doubling after each failed
// probe, 0–10 % jitter), each process's own or sharing its open state
// through Redis (syncing every second): the figures quoted in docs/overload.md.
func TestFleetFailures(t *testing.T) {
	srv := redistest.Start(t)
	spread := func(i int) time.Duration { return time.Duration(i) * 100 * time.Millisecond } // within a second
	for _, sc := range []fleetScenario{
		{name: "dead-from-start", procs: 10, tick: 100 * time.Millisecond, outage: 10 * time.Minute, start: spread},
		{name: "dead-after-60s", procs: 10, tick: 100 * time.Millisecond, healthy: time.Minute, outage: 10 * time.Minute, start: spread},
		{name: "joining-every-5s", procs: 10, tick: 100 * time.Millisecond, outage: 10 * time.Minute,
			start: func(i int) time.Duration { return time.Duration(i) * 5 * time.Second }},
		{name: "dead-from-start-1s", procs: 10, tick: time.Second, outage: 10 * time.Minute, start: spread},
		{name: "joining-every-5s-1s", procs: 10, tick: time.Second, outage: 10 * time.Minute,
			start: func(i int) time.Duration { return time.Duration(i) * 5 * time.Second }},
		{name: "uneven-1s", procs: 10, tick: time.Second, outage: 10 * time.Minute, start: spread,
			every: func(i int) int { return i + 1 }},
	} {
		local := runFleet(t, srv, sc, false, redis.NoHold)
		shared := runFleet(t, srv, sc, true, redis.NoHold)
		held := runFleet(t, srv, sc, true, 0) // the default hold, 2 × SyncInterval
		t.Logf("%-20s local: %4d failures until the fleet stops (+%v), %5d over %v; shared: %4d (+%v), %5d; hold 2s: %4d (+%v), %5d",
			sc.name, local.toStop, local.stopAt, local.total, sc.outage, shared.toStop, shared.stopAt, shared.total, held.toStop, held.stopAt, held.total)
		// Sharing never costs the dependency more failures, and holding
		// never more than sharing alone.
		if shared.total > local.total || held.total > shared.total ||
			shared.toStop < 0 || held.toStop < 0 || local.toStop >= 0 && shared.toStop > local.toStop || held.toStop > shared.toStop {
			t.Errorf("%s: local %+v, shared %+v, hold %+v: sharing or holding let more failures through", sc.name, local, shared, held)
		}
		switch sc.name {
		case "joining-every-5s": // a process that starts during the outage learns at once
			if shared.toStop*3 > local.toStop || held.total*5 > local.total {
				t.Errorf("%s: local %+v, shared %+v, hold %+v: want sharing to stop the fleet with < 1/3 of the failures, holding to cut the total by 5", sc.name, local, shared, held)
			}
		case "uneven-1s": // quiet processes never reach MinCalls in the window
			if local.toStop != -1 || shared.total*10 > local.total {
				t.Errorf("%s: local %+v, shared %+v: want the local breakers never to stop the fleet, and sharing to cut the failures by 10", sc.name, local, shared)
			}
		}
	}
}
