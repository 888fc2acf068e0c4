package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestHTTPRetry drives a scripted server on loopback through httpretry with
// the Observer on the SDK's manual reader, and checks the exact counts and
// attributes recorded. The policy does not wait (retrytest.NoWait) but
// decides its waits as in production, with a fixed jitter draw of 0.5.
func TestHTTPRetry(t *testing.T) {
	o, collect := newObserver(t)
	// GET /a: 503, 429 (Retry-After: 1), 200. GET /b: 500 three times.
	// GET /c: 404. POST /d (no Idempotency-Key): 503, not retried.
	srv := retrytest.NewServer(t, "503,429:retry-after=1,200,500,500,500,404,503")
	p, waits := retrytest.NoWait(retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0.5 }}})
	// No budget: the script fails 6 attempts of 8, more than the default
	// budget lets a new host retry.
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	client := tr.Client()
	defer client.CloseIdleConnections()
	var got []string
	for _, req := range []struct{ method, path string }{{"GET", "/a"}, {"GET", "/b"}, {"GET", "/c"}, {"POST", "/d"}} {
		r, _ := http.NewRequestWithContext(context.Background(), req.method, srv.URL+req.path, strings.NewReader("x"))
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", req.method, req.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, fmt.Sprint(resp.StatusCode))
	}
	if g := strings.Join(got, ","); g != "200,500,404,503" {
		t.Fatalf("statuses %s, want 200,500,404,503", g)
	}
	// 503 is throttling: 1 s base × 0.5; Retry-After 1 s + 20 % × 0.5;
	// then 50 ms × 0.5 and 100 ms × 0.5.
	if w := fmt.Sprint(waits.All()); w != "[500ms 1.1s 25ms 50ms]" {
		t.Fatalf("waits %s", w)
	}

	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	dest := ",yaoki.component=httpretry,server.address=127.0.0.1,server.port=" + port
	get, post := "http.request.method=GET"+dest, "http.request.method=POST"+dest
	s := collect()
	s.expect(t, yotel.MetricAttempts, map[string]float64{
		get + ",error.type=503,http.response.status_code=503,yaoki.status_class=5xx,yaoki.outcome=throttled": 1,
		get + ",error.type=429,http.response.status_code=429,yaoki.status_class=4xx,yaoki.outcome=throttled": 1,
		get + ",http.response.status_code=200,yaoki.status_class=2xx,yaoki.outcome=success":                  1,
		get + ",error.type=500,http.response.status_code=500,yaoki.status_class=5xx,yaoki.outcome=failure":   3,
		// A 404 is handed to the caller at once: the loop saw no error.
		get + ",error.type=404,http.response.status_code=404,yaoki.status_class=4xx,yaoki.outcome=success":   1,
		post + ",error.type=503,http.response.status_code=503,yaoki.status_class=5xx,yaoki.outcome=rejected": 1,
	})
	s.expect(t, yotel.MetricRetries, map[string]float64{
		get + ",error.type=503,http.response.status_code=503,yaoki.status_class=5xx,yaoki.wait.source=backoff": 1,
		get + ",error.type=429,http.response.status_code=429,yaoki.status_class=4xx,yaoki.wait.source=server":  1,
		get + ",error.type=500,http.response.status_code=500,yaoki.status_class=5xx,yaoki.wait.source=backoff": 2,
	})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		get + ",error.type=500,http.response.status_code=500,yaoki.status_class=5xx,yaoki.reason=attempts_exhausted": 1,
		post + ",error.type=503,http.response.status_code=503,yaoki.status_class=5xx,yaoki.reason=not_idempotent":    1,
	})
	// The histograms: the server's wait of 1.1 s, the waits after 500s.
	w := s[yotel.MetricRetryWait]
	if p := w[sorted(get+",error.type=429,http.response.status_code=429,yaoki.status_class=4xx,yaoki.wait.source=server")]; p.Count != 1 || !near(p.Sum, 1.1) {
		t.Errorf("server wait: %+v, want one of 1.1 s", p)
	}
	if p := w[sorted(get+",error.type=500,http.response.status_code=500,yaoki.status_class=5xx,yaoki.wait.source=backoff")]; p.Count != 2 || !near(p.Sum, 0.075) {
		t.Errorf("backoff waits after 500s: %+v, want 25 ms + 50 ms", p)
	}
	var attempts uint64
	for _, p := range s[yotel.MetricAttemptDuration] {
		attempts += p.Count
		if p.Sum <= 0 || p.Sum > 60 {
			t.Errorf("attempt durations sum to %v s", p.Sum)
		}
	}
	if attempts != 8 || len(srv.Attempts()) != 8 {
		t.Errorf("%d attempt durations recorded, server saw %d attempts; want 8 and 8", attempts, len(srv.Attempts()))
	}
}

// TestTrackTransport reads the per-host guards of an httpretry.Transport:
// each destination's budget level and breaker state, named by its host.
func TestTrackTransport(t *testing.T) {
	o, collect := newObserver(t)
	srv := retrytest.NewServer(t, "503,503,503")
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o, Guards: httpretry.Guards{
		Budget: func(string) retry.Budget { b, _ := budget.NewBucket(budget.BucketConfig{}); return b },
		Breaker: func(host string) retry.Breaker {
			b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 3, Observer: o})
			return b
		},
	}}
	untrack := o.TrackTransport(tr)
	client := tr.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := collect()
	// Two retries took 5 tokens each; three failures tripped the breaker.
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=" + host: 490})
	s.expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=" + host: 2})
	s.expect(t, yotel.MetricBreakerTransitions, map[string]float64{
		"yaoki.component=breaker,yaoki.name=" + host + ",yaoki.state.from=closed,yaoki.state.to=open": 1,
	})
	// Untracked: the host's budget and breaker are gone, though the breaker
	// reported its transition to open.
	untrack()
	s = collect()
	s.expect(t, yotel.MetricBudgetLevel, map[string]float64{})
	s.expect(t, yotel.MetricBreakerState, map[string]float64{})
}

// TestTrackTransportsReadOnlyTheirHosts tracks two transports, each calling
// a host of its own (as the routes of the proxy do): each host's gauges are
// its own transport's guards at every collection, and reading them makes no
// guards in the other transport for a host it never called.
func TestTrackTransportsReadOnlyTheirHosts(t *testing.T) {
	o, collect := newObserver(t)
	p, _ := retrytest.NoWait(retry.Policy{})
	transport := func(srv *retrytest.Server, made *[]string) *httpretry.Transport {
		return &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o, Guards: httpretry.Guards{
			Budget: func(host string) retry.Budget {
				*made = append(*made, host)
				b, _ := budget.NewBucket(budget.BucketConfig{})
				return b
			},
			Breaker: func(host string) retry.Breaker {
				b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 3, Observer: o})
				return b
			},
		}}
	}
	down, up := retrytest.NewServer(t, "503,503,503"), retrytest.NewServer(t, "200")
	var madeDown, madeUp []string
	trDown, trUp := transport(down, &madeDown), transport(up, &madeUp)
	defer o.TrackTransport(trDown)()
	defer o.TrackTransport(trUp)()
	for _, c := range []struct {
		tr  *httpretry.Transport
		url string
	}{{trDown, down.URL}, {trUp, up.URL}} {
		client := c.tr.Client()
		resp, err := client.Get(c.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		client.CloseIdleConnections()
	}
	hostDown, hostUp := strings.TrimPrefix(down.URL, "http://"), strings.TrimPrefix(up.URL, "http://")
	for i := 0; i < 20; i++ {
		s := collect()
		s.expect(t, yotel.MetricBudgetLevel, map[string]float64{"yaoki.name=" + hostDown: 490, "yaoki.name=" + hostUp: 500})
		s.expect(t, yotel.MetricBreakerState, map[string]float64{"yaoki.name=" + hostDown: 2, "yaoki.name=" + hostUp: 0})
		if t.Failed() {
			break
		}
	}
	if fmt.Sprint(madeDown) != "["+hostDown+"]" || fmt.Sprint(madeUp) != "["+hostUp+"]" {
		t.Errorf("budgets made: %v by the transport calling %s, %v by the one calling %s; want one each, for its own host",
			madeDown, hostDown, madeUp, hostUp)
	}
}

// TestCancelledCallCountsNoAttempt: a call whose context has ended before
// its first attempt makes none, through the retry loop or through
// httpretry to a real server on loopback. The Observer records no attempt
// (nor its duration), one give-up whose reason is the cancellation, and
// the server gets nothing.
func TestCancelledCallCountsNoAttempt(t *testing.T) {
	o, collect := newObserver(t)
	srv := retrytest.NewServer(t, "200")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := retry.Do(ctx, retry.Policy{Env: &retry.Env{Observer: o}}, func(ctx context.Context) error { return ctx.Err() })
	if !errors.Is(err, retry.ErrCancelled) {
		t.Fatalf("retry.Do = %v, want cancelled", err)
	}
	tr := &httpretry.Transport{Base: srv.Client().Transport, Observer: o}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/x", nil)
	if resp, err := tr.RoundTrip(req); resp != nil || !errors.Is(err, retry.ErrCancelled) {
		t.Fatalf("RoundTrip = %v, %v; want no response and a cancelled error", resp, err)
	}
	if n := len(srv.Attempts()); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	s := collect()
	s.expect(t, yotel.MetricAttempts, map[string]float64{})
	s.expect(t, yotel.MetricAttemptDuration, map[string]float64{})
	s.expect(t, yotel.MetricGiveUps, map[string]float64{
		"error.type=cancelled,yaoki.component=retry,yaoki.reason=cancelled":                                                                               1,
		"error.type=cancelled,http.request.method=GET,yaoki.component=httpretry,server.address=127.0.0.1,server.port=" + port + ",yaoki.reason=cancelled": 1,
	})
}

// TestTrackTransportAfterManyUntrackedHosts: a program's crawler (a
// transport given the Observer but not tracked) has called more hosts than
// the Observer keeps for tracked transports (httpretry.MaxGuardedHosts)
// before the tracked transport of its API calls its host: that host's
// budget still shows on the gauge.
func TestTrackTransportAfterManyUntrackedHosts(t *testing.T) {
	o, collect := newObserver(t)
	p, _ := retrytest.NoWait(retry.Policy{})
	ctx := context.Background()
	for i := range httpretry.MaxGuardedHosts + 10 {
		o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Component: "httpretry", Method: "GET",
			Host: fmt.Sprintf("site%d.test", i), Outcome: event.Success, Status: 200})
	}
	srv := retrytest.NewServer(t, "200")
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o}
	defer o.TrackTransport(tr)()
	client := tr.Client()
	resp, err := client.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	host := strings.TrimPrefix(srv.URL, "http://")
	if got := collect().values(yotel.MetricBudgetLevel); len(got) != 1 || got["yaoki.name="+host] == 0 {
		t.Errorf("budget levels = %v, want the tracked transport's host %s", got, host)
	}
}
