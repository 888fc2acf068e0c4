package otel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
)

// Values of the yaoki.breaker.state gauge: ordered by severity, so that
// "min over 5 minutes ≥ 1" means "not closed once in 5 minutes".
const (
	StateClosed   = 0
	StateHalfOpen = 1
	StateOpen     = 2
)

// StateValue returns the gauge value of a breaker state named as
// event.Event's From and To name them ("closed", "half_open", "open"; case
// and the separator of "half-open" do not matter), and false for any other
// name.
func StateValue(state string) (int64, bool) {
	switch {
	case strings.EqualFold(state, event.StateClosed):
		return StateClosed, true
	case strings.EqualFold(state, event.StateOpen):
		return StateOpen, true
	case strings.EqualFold(state, event.StateHalfOpen), strings.EqualFold(state, "half-open"),
		strings.EqualFold(state, "halfopen"), strings.EqualFold(state, "half open"):
		return StateHalfOpen, true
	}
	return 0, false
}

// gauges are the two observable gauges and what they read: breakers and
// budgets registered with TrackBreaker and TrackBudget, the guards of
// transports registered with TrackTransport, and the last state of every
// other breaker that reported a transition.
//
// A name whose tracked breaker stops being tracked is retired: what its
// events said is forgotten, and its later events are not learned (they come
// from the breaker that was untracked, a call still finishing on it), so
// that the name leaves the gauge, unless a breaker tracked since serves it.
type gauges struct {
	state metric.Int64ObservableGauge
	level metric.Float64ObservableGauge

	mu         sync.Mutex
	breakers   map[string]*tracked[string]
	budgets    map[string]*tracked[float64]
	learned    map[string]learnedState
	retired    map[string]bool                 // names whose tracking ended: not learned
	transports map[*httpretry.Transport]uint64 // the number of its tracking: an earlier one's untrack leaves it
	trackings  atomic.Uint64
	hosts      map[string][]metric.ObserveOption // destinations seen in httpretry's events, with their name set
	// hostsGuarded: hosts is full, and every host in it is guarded by a
	// tracked transport (none can make room).
	hostsGuarded bool
}

type tracked[T any] struct {
	read func() T
	opt  []metric.ObserveOption
}

type learnedState struct {
	value int64
	opt   []metric.ObserveOption
}

func nameSet(name string) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(event.AttrName, name)))}
}

func (g *gauges) register(m metric.Meter) error {
	g.breakers = make(map[string]*tracked[string])
	g.budgets = make(map[string]*tracked[float64])
	g.learned = make(map[string]learnedState)
	g.retired = make(map[string]bool)
	g.transports = make(map[*httpretry.Transport]uint64)
	g.hosts = make(map[string][]metric.ObserveOption)
	var err error
	g.state, err = m.Int64ObservableGauge(MetricBreakerState, metric.WithUnit("{state}"),
		metric.WithDescription("Circuit breaker state: 0 closed, 1 half-open, 2 open."))
	if err != nil {
		return err
	}
	g.level, err = m.Float64ObservableGauge(MetricBudgetLevel,
		metric.WithDescription("Level of a retry budget, as its Level method says: retries still granted (share-of-traffic budget) or tokens (token bucket); 0 is empty."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(g.observe, g.state, g.level)
	return err
}

// learn records a breaker's state from a BreakerStateChange event, for
// breakers that nobody tracks (those a transport makes per destination,
// when the transport is not tracked).
func (g *gauges) learn(name, to string) {
	v, ok := StateValue(to)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.retired[name] {
		return
	}
	if l, seen := g.learned[name]; seen {
		l.value = v
		g.learned[name] = l
		return
	}
	g.learned[name] = learnedState{value: v, opt: nameSet(name)}
}

// retireLocked forgets what the events of name said and learns no more of
// them; g.mu is held.
func (g *gauges) retireLocked(name string) {
	delete(g.learned, name)
	g.retired[name] = true
}

// sawHost records a destination of httpretry's events, for the transports
// tracked with TrackTransport. It is called when an event's attribute set
// is not cached yet, so not on the hot path. When maxHosts are recorded,
// those that no tracked transport has guards for (the hosts of transports
// not tracked, a crawler's say) make room, so that they cannot keep a
// tracked transport's hosts off the gauges.
func (g *gauges) sawHost(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.hosts[host]; ok {
		return
	}
	if len(g.hosts) >= maxHosts && !g.hostsGuarded {
		for h := range g.hosts {
			if !g.guardedLocked(h) {
				delete(g.hosts, h)
			}
		}
		// Full of hosts that tracked transports guard: no need to look
		// again until one of them is untracked.
		g.hostsGuarded = len(g.hosts) >= maxHosts
	}
	if len(g.hosts) < maxHosts {
		g.hosts[host] = nameSet(host)
	}
}

// guardedLocked says whether a tracked transport has guards of host's own;
// g.mu is held.
func (g *gauges) guardedLocked(host string) bool {
	for t := range g.transports {
		if _, _, _, ok := t.Guarded(host); ok {
			return true
		}
	}
	return false
}

// maxHosts bounds the destinations read from tracked transports, as
// httpretry.MaxGuardedHosts bounds those a transport guards.
const maxHosts = httpretry.MaxGuardedHosts

// observe is the gauges' callback. It reads the tracked functions outside
// the lock, so that they may take their own locks (or even track or
// untrack) without deadlocking.
//
// Each name is observed once: a breaker or budget tracked by name wins;
// otherwise the guards of the tracked transports that have guards for the
// host, the worst of them when several have (a breaker's highest state, a
// budget's lowest level); otherwise, for breakers, the learned state.
func (g *gauges) observe(_ context.Context, o metric.Observer) error {
	type breakerRead struct {
		name string
		t    *tracked[string]
	}
	g.mu.Lock()
	breakers := make([]breakerRead, 0, len(g.breakers))
	for name, t := range g.breakers {
		breakers = append(breakers, breakerRead{name, t})
	}
	type budgetRead struct {
		name string
		t    *tracked[float64]
	}
	budgets := make([]budgetRead, 0, len(g.budgets))
	for name, t := range g.budgets {
		budgets = append(budgets, budgetRead{name, t})
	}
	type hostRead struct {
		host                          string
		opt                           []metric.ObserveOption
		breakerTracked, budgetTracked bool // by name, which wins
	}
	var hosts []hostRead
	var transports []*httpretry.Transport
	if len(g.transports) > 0 {
		for t := range g.transports {
			transports = append(transports, t)
		}
		for h, opt := range g.hosts {
			_, brk := g.breakers[h]
			_, bud := g.budgets[h]
			hosts = append(hosts, hostRead{h, opt, brk, bud})
		}
	}
	g.mu.Unlock()
	// The guards of tracked transports, per destination: their budget's
	// level and their breaker's state.
	type worst[T int64 | float64] struct {
		v   T
		opt []metric.ObserveOption
	}
	states := map[string]worst[int64]{}
	levels := map[string]worst[float64]{}
	var errs []error
	for _, t := range transports {
		for _, h := range hosts {
			budget, brk, _, ok := t.Guarded(h.host)
			if !ok {
				continue // a host of another transport
			}
			if l, ok := budget.(interface{ Level() float64 }); ok && !h.budgetTracked {
				v, err := read("the budget of host", h.host, l.Level)
				if err != nil {
					errs = append(errs, err)
				} else if w, seen := levels[h.host]; !seen || v < w.v {
					levels[h.host] = worst[float64]{v, h.opt}
				}
			}
			if s, ok := brk.(interface{ State() breaker.State }); ok && !h.breakerTracked {
				st, err := read("the breaker of host", h.host, s.State)
				if err != nil {
					errs = append(errs, err)
				} else if v, ok := StateValue(st.String()); ok {
					if w, seen := states[h.host]; !seen || v > w.v {
						states[h.host] = worst[int64]{v, h.opt}
					}
				}
			}
		}
	}
	for _, w := range states {
		o.ObserveInt64(g.state, w.v, w.opt...)
	}
	for _, w := range levels {
		o.ObserveFloat64(g.level, w.v, w.opt...)
	}
	g.mu.Lock()
	for name, l := range g.learned {
		if _, tracked := g.breakers[name]; !tracked {
			if _, read := states[name]; !read {
				o.ObserveInt64(g.state, l.value, l.opt...)
			}
		}
	}
	g.mu.Unlock()
	for _, b := range breakers {
		st, err := read("breaker", b.name, b.t.read)
		if err != nil {
			errs = append(errs, err)
		} else if v, ok := StateValue(st); ok {
			o.ObserveInt64(g.state, v, b.t.opt...)
		}
	}
	for _, b := range budgets {
		v, err := read("budget", b.name, b.t.read)
		if err != nil {
			errs = append(errs, err)
		} else {
			o.ObserveFloat64(g.level, v, b.t.opt...)
		}
	}
	return errors.Join(errs...)
}

// read returns what f returns, or an error naming what was read if f
// panics: a tracked function with a bug leaves its name out of one
// collection (the SDK hands the error to its error handler) instead of
// ending the scrape, or the program when the collection runs on an
// exporter's goroutine.
func read[T any](what, name string, f func() T) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("otel: reading %s %q: it panicked: %v (left out of this collection)", what, name, r)
		}
	}()
	return f(), nil
}

// Breaker is what TrackBreaker reads; *breaker.Breaker implements it.
type Breaker interface {
	Name() string         // the breaker's name, the gauge's yaoki.name
	State() breaker.State // its state now
}

// TrackBreaker reports b's state on the yaoki.breaker.state gauge, under
// its name (yaoki.name): at each collection it asks b.State(), so that an
// open period that has ended shows as half-open even before the next call.
// Tracking a name again replaces the earlier breaker. The returned function
// stops tracking (later calls do nothing).
//
// Untracked, the name leaves the gauge at the next collection (so
// Prometheus marks its series stale), and from then on the events of that
// name are not taken for its state: they come from the breaker untracked.
//
// Breakers that nobody tracks are reported too, from their last
// event.BreakerStateChange (when the Observer is their Config.Observer),
// keyed by the event's Name (an unnamed breaker's transitions are counted,
// not shown on the gauge); such a breaker shows "open" until a call finds
// its open period over, and stays on the gauge for as long as the Observer
// lives: track a breaker that a program may drop.
func (o *Observer) TrackBreaker(b Breaker) (untrack func()) {
	return o.TrackBreakerFunc(b.Name(), func() string { return b.State().String() })
}

// TrackBreakerFunc is TrackBreaker for a breaker of another kind: at each
// collection it calls state, which must return "closed", "half_open" (or
// "half-open") or "open" (any other answer is not reported) and be safe for
// concurrent use. If it panics, the name is left out of that collection and
// the SDK's error handler is told.
func (o *Observer) TrackBreakerFunc(name string, state func() string) (untrack func()) {
	g := &o.gauges
	t := &tracked[string]{read: state, opt: nameSet(name)}
	return track(&g.mu, g.breakers, name, t, func() { g.retireLocked(name) })
}

// TrackTransport reports the guards that t keeps per destination host (see
// httpretry.Guards): the level of each host's retry budget on the
// yaoki.budget.level gauge and the state of each host's breaker on the
// yaoki.breaker.state gauge, under yaoki.name = the host (as in the URL,
// with its port). The hosts are those of the events of component
// "httpretry" that this Observer has recorded, so give the Observer to t
// (Transport.Observer). With several transports tracked, each reports the
// hosts it has guards of its own for (httpretry.Transport.Guarded); reading
// makes none. A host that several tracked transports have guards for (two
// routes to one upstream) shows the worst of them: the highest breaker
// state, the lowest budget level. A breaker or budget tracked by the
// host's name (TrackBreaker, TrackBudget) is shown instead. A host that no tracked transport has guards for is not
// reported: after the transport of a host is replaced, the host shows the
// new transport's guards from its first request to the host on, and
// nothing before. Tracking t again replaces the earlier tracking. The
// returned function stops tracking; the hosts whose breaker t read leave
// the gauge as a breaker untracked from TrackBreaker does, with the events
// of that name.
func (o *Observer) TrackTransport(t *httpretry.Transport) (untrack func()) {
	g := &o.gauges
	return track(&g.mu, g.transports, t, g.trackings.Add(1), func() {
		g.hostsGuarded = false
		for h := range g.hosts {
			if _, brk, _, ok := t.Guarded(h); ok {
				if _, reads := brk.(interface{ State() breaker.State }); reads {
					g.retireLocked(h)
				}
			}
		}
	})
}

// track puts v in m under key, with mu held, and returns the function that
// takes it out again if it is still the one there, and then calls
// removed (if not nil) with mu still held.
func track[K, V comparable](mu *sync.Mutex, m map[K]V, key K, v V, removed func()) (untrack func()) {
	mu.Lock()
	m[key] = v
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if m[key] == v {
			delete(m, key)
			if removed != nil {
				removed()
			}
		}
	}
}

// TrackBudget reports the level of the retry budget called name on the
// yaoki.budget.level gauge: at each collection it calls level, which must
// be safe for concurrent use. The budgets of package budget have a Level
// method to pass as it is (obs.TrackBudget("partner", b.Level)): retries
// still granted for a share-of-traffic budget, tokens for a token bucket.
// If level panics, the name is left out of that collection and the SDK's
// error handler is told. Tracking a name again replaces the earlier
// function. The returned function stops tracking.
func (o *Observer) TrackBudget(name string, level func() float64) (untrack func()) {
	t := &tracked[float64]{read: level, opt: nameSet(name)}
	return track(&o.gauges.mu, o.gauges.budgets, name, t, nil)
}
