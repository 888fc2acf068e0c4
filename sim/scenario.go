package sim

import (
	"context"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/retry"
)

// What the scenarios share: how their fields are checked (all of them), and,
// for those that run a Policy (Herd, Outage, Collapse, RateLimit), how one run is
// made, the workspace every run starts from, how a request asks its guards
// before an attempt, and the free lists of requests in flight.

// checks collects a scenario's range checks in order; err is the error of
// the first that failed, naming the field as Scenario.Field (Outage.Rate),
// its value and what is accepted.
type checks struct {
	scenario string
	err      error
}

// need records that field, whose value is v, must satisfy ok; want says
// what is accepted. Once a check has failed, the later ones change nothing.
func (c *checks) need(ok bool, field string, v any, want string) {
	if c.err == nil && !ok {
		c.err = configerr.Invalid(ErrInvalidConfig, c.scenario+"."+field, v, want)
	}
}

// scenario is a scenario's configuration as runOnce needs it: it checks
// itself and fills in its defaults.
type scenario[S any] interface {
	Validate() error
	withDefaults() S
}

// runOnce is the Run of a scenario S: it checks s and p, and runs s with
// its defaults once under p with seed, on a new workspace W (the reusable
// state that a sweep keeps per worker instead).
func runOnce[S scenario[S], R, W any, PW interface {
	*W
	run(s S, c *compiled, seed uint64) R
}](s S, p Policy, seed uint64) (R, error) {
	var zero R
	if err := s.Validate(); err != nil {
		return zero, err
	}
	if err := p.Validate(); err != nil {
		return zero, err
	}
	c := compile(p)
	return PW(new(W)).run(s.withDefaults(), &c, seed), nil
}

// runBase is what every run of a Policy needs, reused across runs: the
// event engine, the scenario's random source, the guards' own source, and
// the clients' loop policies with their guards.
type runBase struct {
	eng    engine
	rnd    rng
	grnd   rng
	guards guardSet
}

// start empties the engine, seeds the scenario's source with seed on
// stream, and builds the guards of clients clients under c (seeded with
// seed), whose jitter draws from jitter.
func (b *runBase) start(c *compiled, clients int, seed, stream uint64, jitter *rng) {
	b.eng.Reset()
	b.rnd.Seed(seed, stream)
	b.guards.build(c, clients, &b.grnd, seed, jitter)
}

// ask asks, at now, the guards of client whether request id's next
// attempt (its loop l) may go, and returns true to send it now. When a
// throttle asks to wait, the request's begin event (an event of kind for
// id) is added after the wait; when a guard refuses, the request is over:
// refused says why, and it is counted in gave.
func (b *runBase) ask(l *loop, client, id int32, kind uint8, now time.Duration, gave *GaveUp) (send bool, refused retry.Reason) {
	wait, refused := l.begin(context.Background(), b.guards.of(client), now)
	switch {
	case refused != 0:
		gave[refused]++
	case wait > 0:
		b.eng.Add(simEvent{At: now + wait, Kind: kind, ID: id})
	}
	return refused == 0 && wait == 0, refused
}

// take returns an index of items to reuse from the free list free, or
// the index of a zero item it appends to items.
func take[T any](free *[]int32, items *[]T) int32 {
	if n := len(*free); n > 0 {
		id := (*free)[n-1]
		*free = (*free)[:n-1]
		return id
	}
	*items = append(*items, *new(T))
	return int32(len(*items) - 1)
}
