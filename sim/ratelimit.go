package sim

import (
	"cmp"
	"math"
	"strconv"
	"time"
)

// RateLimit is an API behind a fixed-window rate limiter, the way many
// count their quotas: it admits PerWindow attempts in each Window (windows
// start at t = 0) and answers every other attempt 429 with Retry-After set
// to the whole seconds left in the window, rounded down as a server that
// writes delay-seconds truncates them (so a window of 1 s always says
// "Retry-After: 0", come back now), or up with RoundUp. An admitted attempt
// succeeds.
//
// Calls arrive from Clients clients as independent Poisson processes,
// Load·PerWindow per Window from all of them together, for Duration; then
// no new calls start and the calls in flight drain. Every hop takes
// Exp(mean HopMean).
//
// It shows what a client does with the server's word: retried at once, the
// calls refused in a window come back within it and are refused again,
// while the spread of a backoff moves them to windows with room left.
//
// The zero RateLimit is 10 clients offering 100 calls a second to a limit
// of 100 a second (windows of 1 s), for 20 s, with hops of 10 ms on
// average. A RateLimit is a value; Run is safe for concurrent use.
type RateLimit struct {
	// Clients is the number of clients. Zero: 10.
	Clients int
	// Load is the calls offered per window, as a share of PerWindow.
	// Zero: 1.
	Load float64
	// PerWindow is the number of attempts admitted per window. Zero: 100.
	PerWindow int
	// Window is the length of the limiter's windows. Zero: 1 s.
	Window time.Duration
	// Duration is how long new calls keep coming. Zero: 20 s.
	Duration time.Duration
	// HopMean is the mean of one network hop. Zero: 10 ms.
	HopMean time.Duration
	// RoundUp makes Retry-After the seconds left rounded up (a window of
	// 1 s then always says "Retry-After: 1") instead of down.
	RoundUp bool
}

func (l RateLimit) withDefaults() RateLimit {
	l.Clients = cmp.Or(l.Clients, 10)
	l.Load = cmp.Or(l.Load, 1)
	l.PerWindow = cmp.Or(l.PerWindow, 100)
	l.Window = cmp.Or(l.Window, time.Second)
	l.Duration = cmp.Or(l.Duration, 20*time.Second)
	l.HopMean = cmp.Or(l.HopMean, 10*time.Millisecond)
	return l
}

// Validate reports the first field out of range.
func (l RateLimit) Validate() error {
	c := checks{scenario: "RateLimit"}
	c.need(l.Clients >= 0 && l.Clients <= 1e6, "Clients", l.Clients, "1 to 1e6 (0 means 10)")
	c.need(l.Load >= 0 && l.Load <= 1000, "Load", l.Load, "a share of PerWindow in (0, 1000] (0 means 1)")
	c.need(l.PerWindow >= 0 && l.PerWindow <= 1e6, "PerWindow", l.PerWindow, "1 to 1e6 (0 means 100)")
	c.need(l.Window >= 0 && l.Window <= time.Hour, "Window", l.Window, "up to 1h (0 means 1s)")
	c.need(l.Duration >= 0 && l.Duration <= 24*time.Hour, "Duration", l.Duration, "up to 24h (0 means 20s)")
	c.need(l.HopMean >= 0, "HopMean", l.HopMean, "≥ 0 (0 means 10ms)")
	if c.err == nil {
		// Calls a nanosecond apart or closer would never let a run end;
		// more than 1e9 would take hours.
		d := l.withDefaults()
		perSecond := d.Load * float64(d.PerWindow) / d.Window.Seconds()
		c.need(perSecond/float64(d.Clients) <= 1e6, "Load", d.Load, "at most 1e6 calls per second from each client (Load × PerWindow / Window / Clients)")
		c.need(perSecond*d.Duration.Seconds() <= 1e9, "Load", d.Load, "at most 1e9 calls per run (Load × PerWindow × Duration / Window)")
	}
	return c.err
}

// RateLimitResult is what one run of the rate-limit scenario measured.
type RateLimitResult struct {
	FirstTries int           // calls started
	Attempts   int           // attempts that reached the server
	Limited    int           // attempts the server answered 429
	Succeeded  int           // calls that eventually succeeded
	GaveUp     GaveUp        // calls that did not, by reason
	Waited     time.Duration // over the calls that succeeded: the time from their start to their success
}

// Success returns the share of calls that eventually succeeded.
func (r RateLimitResult) Success() float64 { return ratio(r.Succeeded, r.FirstTries) }

// Amplification returns attempts per call.
func (r RateLimitResult) Amplification() float64 { return ratio(r.Attempts, r.FirstTries) }

// Latency returns the mean time from a call's start to its success, over
// the calls that succeeded.
func (r RateLimitResult) Latency() time.Duration {
	if r.Succeeded == 0 {
		return 0
	}
	return r.Waited / time.Duration(r.Succeeded)
}

// Event kinds of the rate-limit scenario.
const (
	rlArrive uint8 = iota // a client starts a call (ID: client)
	rlBegin               // a call is about to send an attempt (ID: call)
	rlServe               // an attempt reaches the server (ID: call)
	rlReply               // its answer comes back (ID: call, Arg: -1 for a success, else Retry-After in seconds)
)

// rlCall is a call in flight.
type rlCall struct {
	loop
	client int32
	start  time.Duration
}

// rateLimitRun holds what one run needs; it is reused across runs.
type rateLimitRun struct {
	runBase
	retry   rng // hops and jitter
	calls   []rlCall
	free    []int32
	limited []error // the 429 answers, by their Retry-After in seconds
}

// limitedError is the rate limiter's 429, with its Retry-After.
type limitedError struct {
	hint time.Duration
	msg  string
}

func (e *limitedError) Error() string             { return e.msg }
func (e *limitedError) StatusCode() int           { return 429 }
func (e *limitedError) RetryAfter() time.Duration { return e.hint }

// Run simulates the scenario once under policy p with the given seed.
func (l RateLimit) Run(p Policy, seed uint64) (RateLimitResult, error) {
	return runOnce[RateLimit, RateLimitResult, rateLimitRun](l, p, seed)
}

func (w *rateLimitRun) run(l RateLimit, c *compiled, seed uint64) RateLimitResult {
	var res RateLimitResult
	e, r := &w.eng, &w.rnd
	// Arrivals draw from r and everything else from another source, so
	// that every policy meets the same calls.
	w.retry.Seed(seed, uint64(l.Clients)|1<<41)
	rr := &w.retry
	w.start(c, l.Clients, seed, uint64(l.Clients), rr)
	w.calls, w.free = w.calls[:0], w.free[:0]
	for s := len(w.limited); s <= int((l.Window+time.Second-1)/time.Second); s++ {
		w.limited = append(w.limited, &limitedError{time.Duration(s) * time.Second,
			"sim: the rate limiter refused the attempt (429, Retry-After: " + strconv.Itoa(s) + ")"})
	}
	// Each client's calls are a Poisson process: together they offer
	// Load·PerWindow per Window.
	gap := time.Duration(float64(l.Window) * float64(l.Clients) / (l.Load * float64(l.PerWindow)))
	for i := range l.Clients {
		e.Add(simEvent{At: r.Exp(gap), Kind: rlArrive, ID: int32(i)})
	}
	window, admitted := int64(-1), 0
	begin := func(id int32, now time.Duration) {
		call := &w.calls[id]
		ok, refused := w.ask(&call.loop, call.client, id, rlBegin, now, &res.GaveUp)
		switch {
		case refused != 0:
			w.free = append(w.free, id)
		case ok:
			e.Add(simEvent{At: now + rr.Exp(l.HopMean), Kind: rlServe, ID: id})
		}
	}
	for ev := range e.Events() {
		now := ev.At
		switch ev.Kind {
		case rlArrive:
			if now >= l.Duration {
				break // draining: no more calls
			}
			e.Add(simEvent{At: now + r.Exp(gap), Kind: rlArrive, ID: ev.ID})
			res.FirstTries++
			id := take(&w.free, &w.calls)
			w.calls[id] = rlCall{client: ev.ID, start: now}
			begin(id, now)
		case rlBegin:
			begin(ev.ID, now)
		case rlServe:
			res.Attempts++
			if k := int64(now / l.Window); k != window {
				window, admitted = k, 0
			}
			answer := int64(-1)
			if admitted < l.PerWindow {
				admitted++
			} else {
				res.Limited++
				left := time.Duration(window+1)*l.Window - now
				answer = int64(left / time.Second)
				if l.RoundUp {
					answer = int64((left + time.Second - 1) / time.Second)
				}
			}
			e.Add(simEvent{At: now + rr.Exp(l.HopMean), Kind: rlReply, ID: ev.ID, Arg: answer})
		case rlReply:
			call := &w.calls[ev.ID]
			if ev.Arg < 0 {
				w.guards.end(&call.loop, now, succeeded)
				res.Succeeded++
				res.Waited += now - call.start
				w.free = append(w.free, ev.ID)
				break
			}
			wait, stop := w.guards.endErr(&call.loop, now, w.limited[ev.Arg])
			switch {
			case stop != 0:
				res.GaveUp[stop]++
				w.free = append(w.free, ev.ID)
			case wait > 0 || w.guards.before:
				e.Add(simEvent{At: now + wait, Kind: rlBegin, ID: ev.ID})
			default:
				begin(ev.ID, now)
			}
		}
	}
	return res
}

// DefaultLoads are the loads of the rate-limit sweep, as shares of the
// limit: from half of it to three times it.
func DefaultLoads() []float64 {
	return []float64{0.5, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3}
}

// RateLimitPolicies are the policies the rate-limit scenario compares:
// yaoki's defaults (Yaoki), the same retrying at once (what a client that
// reads "Retry-After: 0" as a wait of 0 does), and no retries.
func RateLimitPolicies() []Policy {
	atOnce := Yaoki()
	atOnce.Name = "yaoki, retrying at once"
	atOnce.Immediate = true
	atOnce.Description = "yaoki's defaults, but a retry is sent as soon as the 429 arrives, as a client that reads \"Retry-After: 0\" as a wait of 0 does (a longer Retry-After is still honoured)"
	return []Policy{Yaoki(), atOnce, NoRetries()}
}

// RateLimitSweep runs the rate-limit scenario for several loads and
// policies, several seeded runs each, and averages them. The zero
// RateLimitSweep runs the zero RateLimit at DefaultLoads, 3 runs per point,
// on one goroutine.
type RateLimitSweep struct {
	// RateLimit sets everything but the load.
	RateLimit RateLimit
	// Loads are the loads to run, as shares of the limit. Nil:
	// DefaultLoads.
	Loads []float64
	// Runs is the number of runs per point. Zero: 3.
	Runs int
	// Seed makes the sweep repeatable; every policy sees the same seeds.
	Seed uint64
	// Workers is the number of goroutines. Zero: 1. Results do not
	// depend on it.
	Workers int
	// Progress, if set, is told after each point.
	Progress Progress
}

// RateLimitPoint is one policy at one load, averaged over runs.
type RateLimitPoint struct {
	Policy        string  // the policy's name
	Load          float64 // the offered load, a share of the limit
	Runs          int     // the runs averaged
	Success       Stat    // share of calls that succeeded
	Amplification Stat    // attempts per call
	Limited       Stat    // 429s per call
	Latency       Stat    // mean seconds from a call's start to its success
}

// Run runs the sweep for each policy and returns one point per policy and
// load, policy by policy in the order given.
func (s RateLimitSweep) Run(policies []Policy) ([]RateLimitPoint, error) {
	if err := s.RateLimit.Validate(); err != nil {
		return nil, err
	}
	sw := sweep{runs: cmp.Or(max(s.Runs, 0), 3), seed: s.Seed, workers: s.Workers, progress: s.Progress}
	return sweepPoints[rateLimitRun](s.RateLimit, orDefault(s.Loads, DefaultLoads), func(l *RateLimit, v float64) { l.Load = v },
		func(l RateLimit) uint64 { return pointKey(math.Float64bits(l.Load)) }, sw, policies,
		func(l RateLimit, pi int, runs []RateLimitResult) RateLimitPoint {
			var succ, amp, lim, lat stat
			for _, r := range runs {
				succ.add(r.Success())
				amp.add(r.Amplification())
				lim.add(ratio(r.Limited, r.FirstTries))
				lat.add(r.Latency().Seconds())
			}
			return RateLimitPoint{Policy: policies[pi].Name, Load: l.Load, Runs: len(runs),
				Success: succ.result(), Amplification: amp.result(), Limited: lim.result(), Latency: lat.result()}
		})
}
