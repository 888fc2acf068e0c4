package httpretry_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
	"github.com/yaoki-go/yaoki/throttle"
)

// counting starts a loopback server that answers status to every request
// and counts them.
func guardedServer(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func guardedGet(t *testing.T, c *http.Client, u string) (int, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func guardedHost(s *httptest.Server) string {
	u, _ := url.Parse(s.URL)
	return u.Host
}

// TestDefaultBudgetPerHost: by default each host has its own recommended
// budget (budget.Recommended): a host that is down gets two retries in all
// (the first failed call's, from the starting credit) and then first
// attempts only, and spending its budget leaves another host's untouched.
func TestDefaultBudgetPerHost(t *testing.T) {
	down, downN := guardedServer(t, 503)
	other, otherN := guardedServer(t, 503)
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p}
	c := tr.Client()
	defer tr.CloseIdleConnections()

	const calls = 200
	for i := 0; i < calls; i++ {
		if code, err := guardedGet(t, c, down.URL); err != nil || code != 503 {
			t.Fatalf("call %d: %v %v", i, code, err)
		}
	}
	t.Logf("200 calls to a host answering 503: %d requests (600 without the budget)", downN.Load())
	// Without a budget: 600 attempts. With it: 200 first attempts and the
	// first call's two retries (8 tokens, 7 after the first failure, 6
	// after the first retry's, 5 after the second's: retries stop at half
	// of 10).
	if n := downN.Load(); n != calls+2 {
		t.Fatalf("the failing host got %d requests for %d calls, want %d", n, calls, calls+2)
	}
	b, br, th := tr.GuardsFor(guardedHost(down))
	if g, ok := b.(*budget.GRPC); !ok || g.Level() != 0 || br != nil || th != nil {
		t.Fatalf("guards of the failing host: %T %v %v %v, want an empty *budget.GRPC only", b, b, br, th)
	}
	// The other host's budget is its own: its first call gets its 3
	// attempts.
	if code, _ := guardedGet(t, c, other.URL); code != 503 || otherN.Load() != 3 {
		t.Fatalf("other host: status %d after %d attempts, want 503 after 3", code, otherN.Load())
	}
}

func TestNoBudget(t *testing.T) {
	down, n := guardedServer(t, 503)
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	defer tr.CloseIdleConnections()
	for i := 0; i < 100; i++ {
		guardedGet(t, tr.Client(), down.URL)
	}
	if n.Load() != 300 {
		t.Fatalf("%d requests for 100 calls without a budget, want 300", n.Load())
	}
}

// TestBreakerPerHost: a breaker factory gives each host its own breaker; the
// failing host's trips, the healthy host's stays closed.
func TestBreakerPerHost(t *testing.T) {
	down, downN := guardedServer(t, 503)
	up, upN := guardedServer(t, 200)
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{
		Budget: httpretry.NoBudget,
		Breaker: func(host string) retry.Breaker {
			b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 5, OpenTimeout: time.Hour})
			return b
		},
	}}
	defer tr.CloseIdleConnections()
	c := tr.Client()
	for i := 0; i < 5; i++ {
		guardedGet(t, c, down.URL)
		guardedGet(t, c, up.URL)
	}
	// Call 1: 3 attempts; call 2: 2 attempts, the fifth failure trips; the
	// rest are refused before any attempt.
	if downN.Load() != 5 {
		t.Fatalf("failing host got %d requests, want 5", downN.Load())
	}
	_, err := guardedGet(t, c, down.URL)
	var he *httpretry.Error
	if !errors.As(err, &he) || he.Reason != retry.ReasonBreakerOpen || !errors.Is(err, breaker.ErrOpen) || he.Attempts != 0 {
		t.Fatalf("call through an open breaker: %v, want an *httpretry.Error with reason breaker open and no attempt", err)
	}
	_, br, _ := tr.GuardsFor(guardedHost(down))
	if s := br.(*breaker.Breaker).State(); s != breaker.Open {
		t.Fatalf("failing host's breaker %v, want open", s)
	}
	_, br, _ = tr.GuardsFor(guardedHost(up))
	if s := br.(*breaker.Breaker).State(); s != breaker.Closed || upN.Load() != 5 {
		t.Fatalf("healthy host's breaker %v after %d requests, want closed after 5", s, upN.Load())
	}
}

// TestPolicyGuardsAreShared: guards set in the policy serve every host.
func TestPolicyGuardsAreShared(t *testing.T) {
	a, _ := guardedServer(t, 503)
	b, _ := guardedServer(t, 503)
	shared, _ := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor})
	p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Budget: shared}})
	tr := &httpretry.Transport{Policy: p}
	defer tr.CloseIdleConnections()
	for i := 0; i < 10; i++ {
		guardedGet(t, tr.Client(), a.URL)
		guardedGet(t, tr.Client(), b.URL)
	}
	ba, _, _ := tr.GuardsFor(guardedHost(a))
	bb, _, _ := tr.GuardsFor(guardedHost(b))
	if ba != retry.Budget(shared) || bb != retry.Budget(shared) {
		t.Fatal("the policy's budget is not the one used for every host")
	}
}

func TestGuardsForIsCaseInsensitive(t *testing.T) {
	tr := &httpretry.Transport{}
	b1, _, _ := tr.GuardsFor("API.example:443")
	b2, _, _ := tr.GuardsFor("api.example:443")
	b3, _, _ := tr.GuardsFor("api.example:8443")
	if b1 == nil || b1 != b2 || b1 == b3 {
		t.Fatal("hosts must be told apart by name and port, not by case")
	}
}

// TestGuardedMakesNoGuards: Guarded finds the guards a host has and makes
// none for a host the transport has not guarded.
func TestGuardedMakesNoGuards(t *testing.T) {
	made := 0
	tr := &httpretry.Transport{Guards: httpretry.Guards{Budget: func(string) retry.Budget {
		made++
		b, _ := budget.NewBucket(budget.BucketConfig{})
		return b
	}}}
	if _, _, _, ok := tr.Guarded("api.example:443"); ok || made != 0 {
		t.Fatalf("Guarded of a host never called: ok %v, %d budgets made; want false, 0", ok, made)
	}
	b, _, _ := tr.GuardsFor("api.example:443")
	g, _, _, ok := tr.Guarded("API.example:443")
	if !ok || g != b || made != 1 {
		t.Fatalf("Guarded after GuardsFor: ok %v, same budget %v, %d made; want true, true, 1", ok, g == b, made)
	}
}

// A transport whose policy sets every guard uses them for every host, but
// Guarded reports them only for the hosts it has called: an observer that
// learned of other hosts elsewhere (another transport's events) must not
// show this transport's breaker under their names.
func TestGuardedSharedGuardsOnlyForHostsCalled(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer s.Close()
	bud, _ := budget.NewBucket(budget.BucketConfig{})
	br, _ := breaker.New(breaker.Config{})
	th, _ := throttle.NewAdaptive(throttle.AdaptiveConfig{})
	tr := &httpretry.Transport{Policy: retry.Policy{Env: &retry.Env{Budget: bud, Breaker: br, Throttle: th}}}
	defer tr.CloseIdleConnections()
	if _, _, _, ok := tr.Guarded("other.example:443"); ok {
		t.Fatal("Guarded of a host never called: ok; want false")
	}
	resp, err := tr.Client().Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	host := strings.TrimPrefix(s.URL, "http://")
	b, k, h, ok := tr.Guarded(host)
	if !ok || b != retry.Budget(bud) || k != retry.Breaker(br) || h != retry.Throttle(th) {
		t.Fatalf("Guarded(%s) after a request: ok %v, the policy's guards %v %v %v; want true and the policy's", host, ok, b == retry.Budget(bud), k == retry.Breaker(br), h == retry.Throttle(th))
	}
	if _, _, _, ok := tr.Guarded("other.example:443"); ok {
		t.Fatal("Guarded of a host never called, after a request to another: ok; want false")
	}
}

func BenchmarkTransportGetGuarded(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer s.Close()
	for _, c := range []struct {
		name string
		g    httpretry.Guards
	}{{"default-budget", httpretry.Guards{}}, {"no-guards", httpretry.Guards{Budget: httpretry.NoBudget}}} {
		b.Run(c.name, func(b *testing.B) {
			tr := &httpretry.Transport{Guards: c.g}
			defer tr.CloseIdleConnections()
			client := tr.Client()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Get(s.URL)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// A success at the first attempt, made outside the retry loop when the
// default budget is the only guard, still counts for the host's budget.
func TestSuccessCountsForTheBudget(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	tr := &httpretry.Transport{Guards: httpretry.Guards{Budget: func(string) retry.Budget {
		s, _ := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor})
		return s
	}}}
	defer tr.CloseIdleConnections()
	c := tr.Client()
	for i := 0; i < 10; i++ {
		if code, err := guardedGet(t, c, up.URL); err != nil || code != 200 {
			t.Fatalf("call %d: %v %v", i, code, err)
		}
	}
	b, _, _ := tr.GuardsFor(guardedHost(up))
	if got := b.(*budget.Share).Level(); got < 1.99 || got > 2.01 {
		t.Fatalf("budget level after 10 successes: %v, want 2 (20 %% of 10 requests)", got)
	}
}

// A failed first attempt, handed from the transport's own first attempt to
// the retry loop, earns nothing: 10 successes earn 2 retries, and the 5
// failing calls that follow get those 2 and no more.
func TestFailuresEarnNothing(t *testing.T) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 10 {
			w.WriteHeader(503)
		}
	}))
	defer s.Close()
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{Budget: func(string) retry.Budget {
		b, _ := budget.NewShare(budget.ShareConfig{MinPerSecond: budget.NoFloor})
		return b
	}}}
	defer tr.CloseIdleConnections()
	c := tr.Client()
	for i := 0; i < 15; i++ {
		want := 200
		if i >= 10 {
			want = 503
		}
		if code, err := guardedGet(t, c, s.URL); err != nil || code != want {
			t.Fatalf("call %d: %v %v, want %d", i, code, err, want)
		}
	}
	if got := n.Load(); got != 15+2 {
		t.Fatalf("%d requests for 10 successful and 5 failing calls, want 17 (2 retries earned)", got)
	}
	b, _, _ := tr.GuardsFor(guardedHost(s))
	if got := b.(*budget.Share).Level(); got != 0 {
		t.Fatalf("budget level %v after the failures, want 0", got)
	}
}
