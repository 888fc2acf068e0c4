package sim

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// Collapse is a metastable failure: a short trigger pushes a server into a
// state that the clients' retries alone keep it in after the trigger is
// gone.
//
// Requests arrive as an open-loop Poisson process (Rate per second, each a
// new request that no one waits on before sending the next). A client sends
// an attempt; it reaches the server after Exp(mean HopMean). The server has
// unlimited concurrency and never cancels work; an attempt's service time
// is fixed when it starts, at ServiceBase + ServicePerRequest·C, where C is
// the number of attempts in service including it, and the answer takes
// Exp(mean HopMean) back. The client times out an attempt after Timeout and
// then retries as its policy says; only the answer to the current attempt,
// before its timeout, counts. Every answer that counts is a success.
//
// With the defaults the server holds about 67 attempts and answers in
// about 1.9 s; the most it can finish is 100 per second (C/(1 + 0.01·C)
// tends to 100). Once answers take more than 3 s, every attempt times out,
// 3 attempts per request make 120 per second, and the work in flight grows
// without end: the run has collapsed. A run is collapsed if more than
// Threshold attempts are in service at its end (t = Duration).
//
// Requests are spread evenly at random over Clients client processes, each
// with its own guards (one process by default). The zero Collapse is the
// scenario of the issue: 40 requests/s, a spike to 80/s for 5 s from
// t = 20 s, 3 s timeout, 80 s. A Collapse is a value; Run is safe for
// concurrent use.
type Collapse struct {
	// Rate is the base arrival rate of requests per second. Zero: 40.
	Rate float64
	// Trigger is what pushes the server over. Zero: a spike to 80/s for
	// 5 s from t = 20 s.
	Trigger Trigger
	// Timeout is how long a client waits for an attempt's answer. Zero:
	// 3 s.
	Timeout time.Duration
	// HopMean is the mean of one network hop (exponential). Zero: 100 ms.
	HopMean time.Duration
	// ServiceBase and ServicePerRequest give an attempt's service time:
	// ServiceBase + ServicePerRequest·C. Zero: 1 s and 10 ms. A negative
	// ServicePerRequest is none: the service time does not grow with the
	// work in service.
	ServiceBase, ServicePerRequest time.Duration
	// Duration is the length of the run. Zero: 80 s.
	Duration time.Duration
	// Threshold is the number of attempts in service above which the
	// server counts as collapsed. Zero: 150.
	Threshold int
	// Clients is the number of client processes the requests are spread
	// over, each with its own guards. Zero: 1.
	Clients int
}

// TriggerKind says what a Trigger does.
type TriggerKind uint8

const (
	// Spike raises the arrival rate to Peak during the window.
	Spike TriggerKind = iota
	// Slowdown multiplies by Factor the service time of attempts that
	// start during the window (a loss of capacity: a bad deploy, a noisy
	// neighbour, a failover).
	Slowdown
	// NoTrigger leaves the server alone.
	NoTrigger
)

// String returns the kind's lowercase name.
func (k TriggerKind) String() string {
	switch k {
	case Spike:
		return "spike"
	case Slowdown:
		return "slowdown"
	case NoTrigger:
		return "none"
	}
	return fmt.Sprintf("TriggerKind(%d)", uint8(k))
}

// Trigger is a short disturbance from At for Width. The zero Trigger is a
// spike to 80/s for 5 s from t = 20 s.
type Trigger struct {
	// Kind is what happens: a spike of arrivals or a slowdown of the
	// server. Zero: Spike.
	Kind TriggerKind
	// At is when it starts. Zero: 20 s. Negative: at the start of the
	// run (t = 0).
	At time.Duration
	// Width is how long it lasts. Zero: 5 s.
	Width time.Duration
	// Peak is the arrival rate per second during a Spike. Zero: 80.
	Peak float64
	// Factor multiplies the service time during a Slowdown. Zero: 2.
	Factor float64
}

// End returns when the trigger is over.
func (t Trigger) End() time.Duration { return t.At + t.Width }

func (c Collapse) withDefaults() Collapse {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	c.Rate = cmp.Or(c.Rate, 40)
	def(&c.Trigger.At, 20*time.Second)
	def(&c.Trigger.Width, 5*time.Second)
	if c.Trigger.Peak == 0 {
		c.Trigger.Peak = 80
	}
	if c.Trigger.Factor == 0 {
		c.Trigger.Factor = 2
	}
	def(&c.Timeout, 3*time.Second)
	def(&c.HopMean, 100*time.Millisecond)
	def(&c.ServiceBase, time.Second)
	def(&c.ServicePerRequest, 10*time.Millisecond)
	def(&c.Duration, 80*time.Second)
	c.Trigger.At, c.ServicePerRequest = max(c.Trigger.At, 0), max(c.ServicePerRequest, 0)
	c.Threshold = cmp.Or(c.Threshold, 150)
	c.Clients = cmp.Or(c.Clients, 1)
	return c
}

// Validate reports the first field out of range.
func (c Collapse) Validate() error {
	rate := func(v float64) bool { return v >= 0 && v <= 1e6 }
	k := checks{scenario: "Collapse"}
	tr := c.Trigger
	k.need(rate(c.Rate), "Rate", c.Rate, "0 < Rate ≤ 1e6 per second (0 means 40)")
	k.need(tr.Kind <= NoTrigger, "Trigger.Kind", tr.Kind, "Spike, Slowdown or NoTrigger")
	k.need(tr.Width >= 0, "Trigger.Width", tr.Width, "≥ 0 (0 means 5s)")
	k.need(rate(tr.Peak), "Trigger.Peak", tr.Peak, "0 < Peak ≤ 1e6 per second (0 means 80)")
	k.need(tr.Factor >= 0 && tr.Factor <= 1000, "Trigger.Factor", tr.Factor, "0 < Factor ≤ 1000 (0 means 2)")
	k.need(c.Timeout >= 0, "Timeout", c.Timeout, "> 0 (0 means 3s)")
	k.need(c.HopMean >= 0, "HopMean", c.HopMean, "≥ 0 (0 means 100ms)")
	k.need(c.ServiceBase >= 0, "ServiceBase", c.ServiceBase, "> 0 (0 means 1s)")
	k.need(c.Duration >= 0 && c.Duration <= 24*time.Hour, "Duration", c.Duration, "0 < Duration ≤ 24h (0 means 80s)")
	k.need(c.Threshold >= 0, "Threshold", c.Threshold, "≥ 1 (0 means 150)")
	k.need(c.Clients >= 0 && c.Clients <= 1e6, "Clients", c.Clients, "1 to 1e6 (0 means 1)")
	return k.err
}

// rateAt returns the arrival rate at t and when it next changes.
func (c *Collapse) rateAt(t time.Duration) (float64, time.Duration) {
	tr := c.Trigger
	if tr.Kind != Spike || tr.Width == 0 {
		return c.Rate, math.MaxInt64
	}
	switch {
	case t < tr.At:
		return c.Rate, tr.At
	case t < tr.End():
		return tr.Peak, tr.End()
	}
	return c.Rate, math.MaxInt64
}

// CollapseResult is what one run of the collapse scenario measured.
type CollapseResult struct {
	FirstTries int    // requests that arrived
	Attempts   int    // attempts sent
	Succeeded  int    // requests that got an answer in time
	GaveUp     GaveUp // requests that did not, by reason (those still waiting at the end are in neither)
	// InFlightAtEnd is the number of attempts in service at the end.
	InFlightAtEnd int
	// Collapsed is InFlightAtEnd > Threshold.
	Collapsed bool
	// Recovery is how long after the trigger's end the work in service
	// last exceeded Threshold (0 if it never did after the trigger's
	// end); -1 when the run ended collapsed.
	Recovery time.Duration
	// Goodput is the answers that counted in each second of the run.
	Goodput []int
	// InFlight is the number of attempts in service at the end of each
	// second of the run.
	InFlight []int
}

// Amplification returns attempts per request.
func (r CollapseResult) Amplification() float64 { return ratio(r.Attempts, r.FirstTries) }

// Event kinds of the collapse scenario. Arg carries the attempt's id, which
// is unique in the run, so answers and timeouts of an earlier attempt are
// told apart from the current one's.
const (
	colArrive    uint8 = iota // a request arrives
	colBegin                  // a request is about to send an attempt (ID: request)
	colServerIn               // an attempt reaches the server
	colServerOut              // the server finishes it
	colAnswer                 // its answer reaches the client
	colTimeout                // the client stops waiting for it
	colTick                   // the end of a second: sample the server
)

// colReq is a request in progress.
type colReq struct {
	loop
	client  int32
	attempt int64 // id of the attempt in flight; 0 while waiting to send
}

// collapseRun holds what one run needs; it is reused across runs.
type collapseRun struct {
	runBase
	reqs   []colReq
	free   []int32
	nextID int64
}

// Run simulates the scenario once under policy p with the given seed.
func (c Collapse) Run(p Policy, seed uint64) (CollapseResult, error) {
	return runOnce[Collapse, CollapseResult, collapseRun](c, p, seed)
}

func (w *collapseRun) run(c Collapse, cp *compiled, seed uint64) CollapseResult {
	secs := int((c.Duration + time.Second - 1) / time.Second)
	res := CollapseResult{Goodput: make([]int, secs), InFlight: make([]int, secs)}
	e, r := &w.eng, &w.rnd
	w.start(cp, c.Clients, seed, 0xc011a95e, r)
	w.reqs, w.free, w.nextID = w.reqs[:0], w.free[:0], 0
	inService := 0
	lastAbove := time.Duration(-1)
	tr := c.Trigger

	arrival := func(now time.Duration) time.Duration {
		for {
			rate, change := c.rateAt(now)
			if rate <= 0 {
				if change == math.MaxInt64 {
					return math.MaxInt64
				}
				now = change
				continue
			}
			t := now + time.Duration(r.r.ExpFloat64()*float64(time.Second)/rate)
			if t < change {
				return t
			}
			now = change // memoryless: draw again from where the rate changes
		}
	}
	begin := func(id int32, now time.Duration) {
		q := &w.reqs[id]
		ok, refused := w.ask(&q.loop, q.client, id, colBegin, now, &res.GaveUp)
		switch {
		case refused != 0:
			w.free = append(w.free, id)
		case ok:
			res.Attempts++
			w.nextID++
			q.attempt = w.nextID
			e.Add(simEvent{At: now + r.Exp(c.HopMean), Kind: colServerIn, ID: id, Arg: q.attempt})
			e.Add(simEvent{At: now + c.Timeout, Kind: colTimeout, ID: id, Arg: q.attempt})
		}
	}
	// finish ends request id's attempt with outcome o at now.
	finish := func(id int32, now time.Duration, o outcome) {
		q := &w.reqs[id]
		q.attempt = 0
		wait, stop := w.guards.end(&q.loop, now, o)
		switch {
		case o == succeeded:
			res.Succeeded++
			res.Goodput[min(int(now/time.Second), secs-1)]++
			w.free = append(w.free, id)
		case stop != 0:
			res.GaveUp[stop]++
			w.free = append(w.free, id)
		case wait > 0 || w.guards.before:
			e.Add(simEvent{At: now + wait, Kind: colBegin, ID: id})
		default:
			begin(id, now)
		}
	}

	if t := arrival(0); t < c.Duration {
		e.Add(simEvent{At: t, Kind: colArrive})
	}
	for s := 1; s <= secs; s++ {
		e.Add(simEvent{At: min(time.Duration(s)*time.Second, c.Duration), Kind: colTick, Arg: int64(s - 1)})
	}
	for ev := range e.Events() {
		if ev.At > c.Duration {
			break
		}
		now := ev.At
		switch ev.Kind {
		case colArrive:
			if t := arrival(now); t < c.Duration {
				e.Add(simEvent{At: t, Kind: colArrive})
			}
			res.FirstTries++
			id := take(&w.free, &w.reqs)
			client := int32(0)
			if c.Clients > 1 {
				client = int32(r.r.IntN(c.Clients))
			}
			w.reqs[id] = colReq{client: client}
			begin(id, now)
		case colBegin:
			begin(ev.ID, now)
		case colServerIn:
			inService++
			if inService > c.Threshold && now >= tr.At {
				lastAbove = now
			}
			svc := float64(c.ServiceBase) + float64(c.ServicePerRequest)*float64(inService)
			if tr.Kind == Slowdown && now >= tr.At && now < tr.End() {
				svc *= tr.Factor
			}
			e.Add(simEvent{At: now + time.Duration(svc), Kind: colServerOut, ID: ev.ID, Arg: ev.Arg})
		case colServerOut:
			if inService > c.Threshold && now >= tr.At {
				lastAbove = now
			}
			inService--
			e.Add(simEvent{At: now + r.Exp(c.HopMean), Kind: colAnswer, ID: ev.ID, Arg: ev.Arg})
		case colAnswer:
			if w.reqs[ev.ID].attempt == ev.Arg {
				finish(ev.ID, now, succeeded)
			}
		case colTimeout:
			if w.reqs[ev.ID].attempt == ev.Arg {
				finish(ev.ID, now, timedOut)
			}
		case colTick:
			res.InFlight[ev.Arg] = inService
		}
	}
	res.InFlightAtEnd = inService
	res.Collapsed = inService > c.Threshold
	switch {
	case res.Collapsed:
		res.Recovery = -1
	case lastAbove > tr.End():
		res.Recovery = lastAbove - tr.End()
	}
	return res
}
