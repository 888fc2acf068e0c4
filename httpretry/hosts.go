package httpretry

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/retry"
)

// MaxGuardedHosts is how many destination hosts get guards of their own;
// requests to further hosts share one more set, so that a client that
// calls an unbounded number of hosts (a crawler) keeps bounded memory.
const MaxGuardedHosts = 1024

// Guards makes the guards of each destination host: a Transport calls a
// factory the first time it sends a request to a host (the URL's host, with
// its port if it has one, in lower case) and keeps what it returns for
// every later request to that host. A factory must return a new guard (or
// nil for none): guards shared between hosts would let one failing host
// trip the others' breaker or spend their budget.
//
// A guard set in Transport.Policy (Budget, Breaker, Throttle) is shared by
// every host and replaces the factory of its kind.
type Guards struct {
	// Budget makes a host's retry budget. Nil: the recommended budget
	// (budget.NewGRPC(budget.Recommended()): a bucket of 10 tokens that
	// starts at 8, a failed attempt takes one, a success gives back 0.2,
	// retries stop at 5), so that retries cannot multiply the load on a
	// host that is down: a new host's first failed call gets its retries
	// (two), and further retries are earned from successes; nothing
	// refuses a first attempt. The simulator measures it as sim.Yaoki
	// (docs/simulator.md). NoBudget: none.
	Budget func(host string) retry.Budget
	// Breaker makes a host's circuit breaker. Nil: none. For example
	//
	//	func(host string) retry.Breaker {
	//		b, _ := breaker.New(breaker.Config{Name: host})
	//		return b
	//	}
	Breaker func(host string) retry.Breaker
	// Throttle makes a host's client-side throttle (throttle.NewAdaptive,
	// throttle.NewCubic). Nil: none.
	Throttle func(host string) retry.Throttle
}

// NoBudget as Guards.Budget turns the default per-host budget off.
func NoBudget(host string) retry.Budget { return nil }

// defaultBudget is the Guards.Budget used when none is given.
func defaultBudget(string) retry.Budget {
	b, _ := budget.NewGRPC(budget.Recommended()) // the recommended config is valid
	return b
}

// hosts holds one retrier per destination host, each built from the
// transport's policy with that host's guards. Lookups are lock-free and
// allocate nothing: the map is copied when a host is added (at most
// MaxGuardedHosts times).
type hosts struct {
	g    Guards
	base retry.Policy
	m    atomic.Pointer[map[string]*hostGuards]

	mu       sync.Mutex
	overflow *hostGuards

	// shared, when the policy sets every guard, is what every host gets:
	// the policy's retrier and guards. The map still records the hosts
	// called, for Guarded.
	shared *hostGuards

	// hedged, when requests are hedged, makes a host's hedging retrier
	// (with a Hedger of its own) from its retrier.
	hedged func(*retry.Retrier) *retry.Retrier
}

// hostGuards is one host's retrier and the guards in it.
type hostGuards struct {
	r        *retry.Retrier
	hedged   *retry.Retrier // r with a Hedger, when requests are hedged
	budget   retry.Budget
	breaker  retry.Breaker
	throttle retry.Throttle
}

// newHosts returns the per-host guards of a transport whose policy is
// base's; when the policy sets every guard itself, every host shares them
// (and base).
func newHosts(g Guards, base *retry.Retrier) *hosts {
	p := base.Policy()
	if g.Budget == nil {
		g.Budget = defaultBudget
	}
	h := &hosts{g: g, base: p}
	if e := p.Env; e != nil && e.Budget != nil && e.Breaker != nil && e.Throttle != nil {
		h.shared = &hostGuards{r: base, budget: e.Budget, breaker: e.Breaker, throttle: e.Throttle}
	}
	h.m.Store(&map[string]*hostGuards{})
	return h
}

// retrierFor returns the retrier of req's host.
func (h *hosts) retrierFor(req *http.Request) *retry.Retrier {
	return h.get(hostKey(req.URL.Host)).r
}

func (h *hosts) get(key string) *hostGuards {
	if g, ok := (*h.m.Load())[key]; ok {
		return g
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := *h.m.Load()
	if g, ok := m[key]; ok {
		return g
	}
	if len(m) >= MaxGuardedHosts {
		if h.overflow == nil {
			h.overflow = h.build("")
		}
		return h.overflow
	}
	g := h.build(key)
	next := maps.Clone(m)
	next[key] = g
	h.m.Store(&next)
	return g
}

// build makes host's guards and the retrier that applies them (the shared
// ones when the policy sets every guard).
func (h *hosts) build(host string) *hostGuards {
	if h.shared != nil {
		return h.shared
	}
	p := h.base
	e := p.Env.Clone() // the base policy's Env is shared by every host
	if e.Budget == nil {
		e.Budget = h.g.Budget(host)
	}
	if e.Breaker == nil && h.g.Breaker != nil {
		e.Breaker = h.g.Breaker(host)
	}
	if e.Throttle == nil && h.g.Throttle != nil {
		e.Throttle = h.g.Throttle(host)
	}
	p.Env = e
	r, err := retry.New(p)
	if err != nil {
		panic("httpretry: a validated policy became invalid: " + err.Error()) // unreachable: only guards changed
	}
	g := &hostGuards{r: r, budget: e.Budget, breaker: e.Breaker, throttle: e.Throttle}
	if h.hedged != nil {
		g.hedged = h.hedged(r)
	}
	return g
}

// hostKey lower-cases a host only when it has to, so that the common case
// allocates nothing.
func hostKey(host string) string {
	for i := 0; i < len(host); i++ {
		if c := host[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(host)
		}
	}
	return host
}

// GuardsFor returns the guards the transport uses for host (as in a URL:
// "api.example.com" or "127.0.0.1:8080"), creating them if no request went
// there yet; for observability (a budget's Level, a breaker's State). Nil
// results are guards the transport does not use. It returns nils when the
// transport's fields are invalid.
func (t *Transport) GuardsFor(host string) (retry.Budget, retry.Breaker, retry.Throttle) {
	c, err := t.config()
	if err != nil {
		return nil, nil, nil
	}
	g := c.hosts.get(hostKey(host))
	return g.budget, g.breaker, g.throttle
}

// Guarded returns the guards the transport keeps for host, as GuardsFor
// does, but makes none: ok is false when the transport has no guards of
// host's own (no request went there and GuardsFor was not asked, or host
// came past MaxGuardedHosts and shares the guards of the hosts beyond).
// When the transport's policy sets every guard, they are those of every
// host it has called. For observers that read the guards of hosts they learned from
// elsewhere, without making guards for hosts the transport never calls.
func (t *Transport) Guarded(host string) (b retry.Budget, br retry.Breaker, th retry.Throttle, ok bool) {
	c, err := t.config()
	if err != nil {
		return nil, nil, nil, false
	}
	g, ok := (*c.hosts.m.Load())[hostKey(host)]
	if !ok {
		return nil, nil, nil, false
	}
	return g.budget, g.breaker, g.throttle, true
}
