package proxy

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/retry"
)

// Fleet makes the guards of yaoki proxy fleet-wide (--redis): every
// proxy that uses the same Redis shares, per upstream host, one retry
// budget (redis.Budget) and, where there is a breaker, its open state
// (redis.Breaker). Calls never wait for Redis: the guards sync in the
// background, and decide alone while Redis cannot be reached.
type Fleet struct {
	client *goredis.Client
	stderr io.Writer

	mu      sync.Mutex
	lastErr time.Time // when a sync error was last reported
}

// NewFleet returns a Fleet over the Redis at rawURL, which writes the sync
// errors it meets (at most one a minute) on stderr. Its only error is a
// URL it cannot read. Close it when the proxy stops.
func NewFleet(rawURL string, stderr io.Writer) (*Fleet, error) {
	opt, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--redis %q: %v: want e.g. redis://127.0.0.1:6379/0 or rediss://user:password@host:6380/1", rawURL, err)
	}
	return &Fleet{client: goredis.NewClient(opt), stderr: stderr}, nil
}

// Close closes the connections to Redis.
func (f *Fleet) Close() { _ = f.client.Close() }

// onError reports a failed sync, at most once a minute: the guards go on
// alone meanwhile.
func (f *Fleet) onError(err error) {
	f.mu.Lock()
	now := time.Now()
	report := now.Sub(f.lastErr) >= time.Minute
	if report {
		f.lastErr = now
	}
	f.mu.Unlock()
	if report {
		msg := err.Error()
		if !strings.HasPrefix(msg, "redis: ") { // package redis's errors say it
			msg = "redis: " + msg
		}
		fmt.Fprintf(f.stderr, "yaoki proxy: %s (each proxy decides alone until a sync succeeds)\n", msg)
	}
}

// share replaces t's guards with fleet-wide ones, synced until ctx ends:
// the route's own budget (from its policy document) under the route's
// upstream host, and its breaker (routeBreaker) under that host too;
// otherwise the per-host guards httpretry makes by default, each under its
// host: a budget is shared as a redis.Budget with budget.Share's defaults,
// a breaker by its name.
func (f *Fleet) share(ctx context.Context, t *httpretry.Transport, rc *Route) error {
	name := "proxy:" + rc.Upstream.Host
	if d := rc.Doc; d != nil && (d.Budget != nil || d.Breaker != nil) {
		e := t.Policy.Env.Clone()
		if d.Budget != nil {
			b, err := f.budget(ctx, redis.BudgetConfig{Name: name, Ratio: d.Budget.Ratio, Window: d.Budget.Window, MinPerSecond: d.Budget.MinPerSecond})
			if err != nil {
				return err
			}
			e.Budget = b
		}
		if local, ok := e.Breaker.(*breaker.Breaker); ok && d.Breaker != nil {
			b, err := f.breaker(ctx, local)
			if err != nil {
				return err
			}
			e.Breaker = b
		}
		t.Policy.Env = e
	}
	defaults := &httpretry.Transport{} // asked for the guards httpretry gives a host by default
	t.Guards.Budget = func(host string) retry.Budget {
		b, err := f.budget(ctx, redis.BudgetConfig{Name: "proxy:" + host})
		if err != nil {
			panic("yaoki proxy: the default fleet budget is invalid: " + err.Error()) // unreachable: the defaults are valid
		}
		return b
	}
	t.Guards.Breaker = func(host string) retry.Breaker {
		_, br, _ := defaults.GuardsFor(host)
		local, ok := br.(*breaker.Breaker)
		if !ok || local == nil || local.Name() == "" {
			return br // none by default, or one that cannot be named for the fleet
		}
		b, err := f.breaker(ctx, local)
		if err != nil {
			return br
		}
		return b
	}
	return nil
}

func (f *Fleet) budget(ctx context.Context, c redis.BudgetConfig) (*redis.Budget, error) {
	c.Client, c.OnError = f.client, f.onError
	b, err := redis.NewBudget(c)
	if err != nil {
		return nil, err
	}
	go b.Run(ctx)
	return b, nil
}

// fleetBreakerPrefix starts the Redis key of a fleet breaker, which goes
// on with the breaker's name: the upstream host (routeBreaker, and the
// breakers httpretry makes per host).
const fleetBreakerPrefix = redis.DefaultBreakerPrefix + "proxy:"

func (f *Fleet) breaker(ctx context.Context, local *breaker.Breaker) (*redis.Breaker, error) {
	b, err := redis.NewBreaker(redis.BreakerConfig{Client: f.client, Local: local, Prefix: fleetBreakerPrefix, OnError: f.onError})
	if err != nil {
		return nil, err
	}
	go b.Run(ctx)
	return b, nil
}
