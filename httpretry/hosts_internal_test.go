package httpretry

import (
	"fmt"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

func TestHostsOverflowShareOneSet(t *testing.T) {
	r, _ := retry.New(retry.Policy{})
	built := 0
	h := newHosts(Guards{Budget: func(string) retry.Budget { built++; return defaultBudget("") }}, r)
	first := map[string]*hostGuards{}
	for i := 0; i < MaxGuardedHosts+10; i++ {
		key := fmt.Sprintf("h%d:80", i)
		g := h.get(key)
		if g != h.get(key) {
			t.Fatalf("host %s got a new set on its second request", key)
		}
		first[key] = g
	}
	over := first[fmt.Sprintf("h%d:80", MaxGuardedHosts)]
	for i := MaxGuardedHosts; i < MaxGuardedHosts+10; i++ {
		if first[fmt.Sprintf("h%d:80", i)] != over {
			t.Fatal("hosts beyond MaxGuardedHosts do not share one set")
		}
	}
	if built != MaxGuardedHosts+1 {
		t.Fatalf("%d budgets built, want %d", built, MaxGuardedHosts+1)
	}
	if len(*h.m.Load()) != MaxGuardedHosts {
		t.Fatalf("%d hosts kept, want %d", len(*h.m.Load()), MaxGuardedHosts)
	}
	// A transport whose policy sets every guard builds no guards: every
	// host gets the policy's retrier, and only the hosts are recorded.
	p := retry.Policy{Env: &retry.Env{Budget: defaultBudget(""), Breaker: noBreaker{}, Throttle: noThrottle{}}}
	r, _ = retry.New(p)
	built = 0
	h = newHosts(Guards{Budget: func(string) retry.Budget { built++; return defaultBudget("") }}, r)
	if g := h.get("a:80"); g.r != r || g != h.get("b:80") || built != 0 {
		t.Fatalf("policy with every guard: own retrier %v, one set for two hosts %v, %d budgets built; want true, true, 0", g.r == r, g == h.get("b:80"), built)
	}
}

type noBreaker struct{}

func (noBreaker) AllowAt(time.Time, bool) (uint64, error)        { return 0, nil }
func (noBreaker) DoneAt(time.Time, uint64, time.Duration, error) {}

type noThrottle struct{}

func (noThrottle) AdmitAt(time.Time) (time.Duration, error) { return 0, nil }
func (noThrottle) RecordAt(time.Time, bool)                 {}
