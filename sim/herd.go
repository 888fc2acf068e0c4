package sim

import (
	"cmp"
	"context"
	"math"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/retry"
)

// Herd is the thundering-herd scenario of the AWS Architecture Blog's
// "Exponential Backoff And Jitter" (2015): one row under optimistic
// concurrency control. All clients start at t = 0 and each wants one
// successful write. An attempt is a read (one network hop to the server,
// one back) followed by a conditional write carrying the version read (one
// hop each way); the write succeeds if the version still matches, which
// bumps it. The server answers instantly; every hop takes |Normal(HopMean,
// HopStdDev)|. After a failed write the client waits as its policy says and
// reads again.
//
// Calls are the writes that reach the server; the completion time is when
// the last client gets its successful write response (or gives up, for a
// policy that limits attempts or has guards that refuse).
//
// The zero Herd is the published set-up: 100 clients, hops of
// |N(10 ms, 2 ms)|. A Herd is a value; Run is safe for concurrent use.
type Herd struct {
	// Clients is the number of clients. Zero: 100.
	Clients int
	// HopMean and HopStdDev describe one network hop. Zero: 10 ms and
	// 2 ms. A negative HopStdDev is none: every hop takes HopMean.
	HopMean, HopStdDev time.Duration
}

func (h Herd) withDefaults() Herd {
	h.Clients = cmp.Or(h.Clients, 100)
	h.HopMean = cmp.Or(h.HopMean, 10*time.Millisecond)
	h.HopStdDev = max(cmp.Or(h.HopStdDev, 2*time.Millisecond), 0)
	return h
}

// HerdResult is what one run of the herd scenario measured.
type HerdResult struct {
	Calls     int           // writes that reached the server
	Time      time.Duration // when the last client finished
	Succeeded int           // clients that got their write in
	GaveUp    GaveUp        // clients that stopped without it, by reason
}

// HerdStrategies returns the five strategies of the 2015 post with its
// base and cap (the post: 5 ms and 2 s), all retrying without limit:
// "none" (no wait), "exponential", "full", "equal" and "decorrelated".
//
// The post numbers retries from 1 and computes exponential =
// min(cap, base·2^attempt), so its first retry waits 2·base; package
// backoff computes Base·2^(n−1) for retry n, so the post's strategies are
// the Schedules with Base = 2·base. Full jitter draws from [0, that),
// equal jitter keeps half and draws the other half; both are the same
// arithmetic in backoff. Decorrelated jitter, min(cap, U[base, 3·sleep))
// with sleep starting at base, ignores the retry number: it is the
// Decorrelated Schedule with Base = base itself.
func HerdStrategies(base, limit time.Duration) []Policy {
	exp := backoff.Schedule{Kind: backoff.Exponential, Base: 2 * base, Multiplier: 2, Cap: limit}
	named := func(name string, j backoff.Jitter) Policy {
		s := exp
		s.Jitter = j
		how := "with " + j.String() + " jitter"
		if j == backoff.None {
			how = "without jitter"
		}
		return Policy{Name: name, MaxAttempts: retry.Unlimited, Backoff: s,
			Description: "min(cap, base·2^attempt) " + how + " (the post's base " + base.String() + ", cap " + limit.String() + ")"}
	}
	return []Policy{
		{Name: "none", MaxAttempts: retry.Unlimited, Immediate: true, Description: "retries at once, without any wait"},
		named("exponential", backoff.None),
		named("full", backoff.Full),
		named("equal", backoff.Equal),
		{Name: "decorrelated", MaxAttempts: retry.Unlimited,
			Backoff:     backoff.Schedule{Base: base, Cap: limit, Jitter: backoff.Decorrelated},
			Description: "min(cap, U[base, 3·previous)) (the post's base " + base.String() + ", cap " + limit.String() + ")"},
	}
}

// Event kinds of the herd scenario. A read is not an event of its own: the
// version it returns is the number of successful writes before it, so the
// server can tell at the write whether the version still matches from the
// time of its last successful write. This is the same model with half the
// events.
const (
	herdBegin uint8 = iota // a client is about to start an attempt
	herdWrite              // its conditional write reaches the server (Arg: when its read did)
	herdReply              // the write's answer reaches it (Arg: the Outcome)
)

// herdRun holds what one run needs; it is reused across runs.
type herdRun struct {
	runBase
	loops []loop
}

// Validate reports the first field out of range.
func (h Herd) Validate() error {
	c := checks{scenario: "Herd"}
	c.need(h.Clients >= 0 && h.Clients <= 1e6, "Clients", h.Clients, "1 to 1e6 (0 means 100)")
	c.need(h.HopMean >= 0, "HopMean", h.HopMean, "≥ 0 (0 means 10ms)")
	return c.err
}

// Run simulates the scenario once under policy p with the given seed.
func (h Herd) Run(p Policy, seed uint64) (HerdResult, error) {
	return runOnce[Herd, HerdResult, herdRun](h, p, seed)
}

func (w *herdRun) run(h Herd, c *compiled, seed uint64) HerdResult {
	var res HerdResult
	e, r := &w.eng, &w.rnd
	w.start(c, h.Clients, seed, uint64(h.Clients), r)
	w.loops = append(w.loops[:0], make([]loop, h.Clients)...)
	hop := func() time.Duration { return r.AbsNormal(h.HopMean, h.HopStdDev) }
	res.Time = 0
	for i := range h.Clients {
		e.Add(simEvent{At: 0, Kind: herdBegin, ID: int32(i)})
	}
	lastWrite := time.Duration(math.MinInt64) // when the version last changed
	for ev := range e.Events() {
		now := ev.At
		switch ev.Kind {
		case herdBegin:
			ok, refused := w.ask(&w.loops[ev.ID], ev.ID, ev.ID, herdBegin, now, &res.GaveUp)
			switch {
			case refused != 0:
				res.Time = max(res.Time, now)
			case ok:
				w.send(e, h, ev.ID, now)
			}
		case herdWrite:
			res.Calls++
			o := conflicted
			if lastWrite < time.Duration(ev.Arg) {
				lastWrite = now
				o = succeeded
			}
			if c.shared && c.guards != nil {
				// Guards shared between clients must see every client's
				// answers in time order: deliver the answer as an event.
				e.Add(simEvent{At: now + hop(), Kind: herdReply, ID: ev.ID, Arg: int64(o)})
				break
			}
			// Only this client acts on the answer, and nothing it does
			// before it arrives depends on it: handle it at once, on its
			// arrival time. This saves a third of the events.
			w.reply(e, h, c, &res, ev.ID, now+hop(), o)
		case herdReply:
			w.reply(e, h, c, &res, ev.ID, now, outcome(ev.Arg))
		}
	}
	return res
}

// reply handles the answer to client id's write, arriving at now.
func (w *herdRun) reply(e *engine, h Herd, c *compiled, res *HerdResult, id int32, now time.Duration, o outcome) {
	l, g := &w.loops[id], w.guards.of(id)
	wait, stop := w.guards.end(l, now, o)
	switch {
	case o == succeeded:
		res.Succeeded++
		res.Time = max(res.Time, now)
	case stop != 0:
		res.GaveUp[stop]++
		res.Time = max(res.Time, now)
	case w.guards.before:
		e.Add(simEvent{At: now + wait, Kind: herdBegin, ID: id})
	default:
		// Nothing to ask before the attempt: start it now.
		l.begin(context.Background(), g, now+wait)
		w.send(e, h, id, now+wait)
	}
}

// send starts client id's attempt at now: its read reaches the server one
// hop later, its answer comes back and the write goes out at once, so the
// write arrives three hops after now.
func (w *herdRun) send(e *engine, h Herd, id int32, now time.Duration) {
	read := now + w.rnd.AbsNormal(h.HopMean, h.HopStdDev)
	write := read + w.rnd.AbsNormal(h.HopMean, h.HopStdDev) + w.rnd.AbsNormal(h.HopMean, h.HopStdDev)
	e.Add(simEvent{At: write, Kind: herdWrite, ID: id, Arg: int64(read)})
}

// DefaultHerdClients are the client counts of the published sweep: 10, 20,
// … 190.
func DefaultHerdClients() []int {
	out := make([]int, 0, 19)
	for n := 10; n <= 190; n += 10 {
		out = append(out, n)
	}
	return out
}

// HerdSweep runs the herd scenario for several client counts and policies,
// many seeded runs each, and averages them. The zero HerdSweep is the
// published sweep: 10 to 190 clients, 100 runs per point, on one goroutine.
type HerdSweep struct {
	// Herd sets the hops; its Clients field is ignored.
	Herd Herd
	// Clients are the client counts. Nil: DefaultHerdClients.
	Clients []int
	// Runs is the number of runs per point. Zero: 100.
	Runs int
	// Seed makes the sweep repeatable; every policy sees the same seeds.
	Seed uint64
	// Workers is the number of goroutines. Zero: 1. Results do not
	// depend on it.
	Workers int
	// Progress, if set, is told after each point.
	Progress Progress
}

// HerdPoint is one policy at one client count, averaged over runs.
type HerdPoint struct {
	Policy  string // the policy's name
	Clients int    // the clients contending at this point
	Runs    int    // the runs averaged
	Calls   Stat   // writes that reached the server, per run
	Time    Stat   // completion time per run, in seconds
	GaveUp  Stat   // clients per run that stopped without their write
}

// Run runs the sweep for each policy and returns one point per policy and
// client count, policy by policy in the order given.
func (s HerdSweep) Run(policies []Policy) ([]HerdPoint, error) {
	sw := sweep{runs: cmp.Or(max(s.Runs, 0), 100), seed: s.Seed, workers: s.Workers, progress: s.Progress}
	return sweepPoints[herdRun](s.Herd, orDefault(s.Clients, DefaultHerdClients), func(h *Herd, n int) { h.Clients = n },
		func(h Herd) uint64 { return pointKey(uint64(h.Clients)) }, sw, policies,
		func(h Herd, pi int, runs []HerdResult) HerdPoint {
			var calls, tm, gave stat
			for _, r := range runs {
				calls.add(float64(r.Calls))
				tm.add(r.Time.Seconds())
				gave.add(float64(r.GaveUp.Total()))
			}
			return HerdPoint{Policy: policies[pi].Name, Clients: h.Clients, Runs: len(runs),
				Calls: calls.result(), Time: tm.result(), GaveUp: gave.result()}
		})
}
