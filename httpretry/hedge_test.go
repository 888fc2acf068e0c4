package httpretry_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// tailServer is a real HTTP server on loopback where each answer, drawn
// at random (seeded), is slow with probability 5 %: it takes slow, or
// until its request is cancelled; the others answer at once. Each answer
// says in X-Slow whether it was a slow one. It counts the connections that
// are active (a request in progress or a response not yet read to its end
// and closed).
type tailServer struct {
	*httptest.Server
	slow   time.Duration
	mu     sync.Mutex
	rnd    *rand.Rand
	states map[net.Conn]http.ConnState
}

func newTailServer(t testing.TB, slow time.Duration) *tailServer {
	s := &tailServer{slow: slow, states: map[net.Conn]http.ConnState{}, rnd: rand.New(rand.NewPCG(17, 5))}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		unlucky := s.rnd.Float64() < 0.05
		s.mu.Unlock()
		if unlucky {
			w.Header().Set("X-Slow", "1")
			select {
			case <-time.After(s.slow):
			case <-r.Context().Done():
				return
			}
		}
		w.Write([]byte("answer"))
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if st == http.StateClosed || st == http.StateHijacked {
			delete(s.states, c)
			return
		}
		s.states[c] = st
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// active returns how many connections carry a request or response.
func (s *tailServer) active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.states {
		if st == http.StateActive {
			n++
		}
	}
	return n
}

// bodies is a RoundTripper that counts the response bodies it hands out
// and those closed.
type bodies struct {
	base           http.RoundTripper
	opened, closed atomic.Int64
}

func (b *bodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if resp != nil {
		b.opened.Add(1)
		resp.Body = &countedBody{ReadCloser: resp.Body, closed: &b.closed}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	closed *atomic.Int64
	once   sync.Once
}

func (c *countedBody) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.ReadCloser.Close()
}

// tailRun sends n GETs from workers goroutines through tr and returns how
// many of the answers handed over were slow ones, and each GET's latency.
func tailRun(t testing.TB, tr *httpretry.Transport, url string, n, workers int) (slow int, lat []time.Duration) {
	t.Helper()
	client := tr.Client()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				start := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					t.Error(err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(start)
				if err != nil || string(body) != "answer" {
					t.Errorf("GET: %q, %v", body, err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				if resp.Header.Get("X-Slow") != "" {
					slow++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	return slow, lat
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[len(lat)*99/100]
}

// TestHedgeTailLoopback: 1000 GETs against a real server on loopback where
// 5 % of answers take 1 s. Without hedging, 5 % of the GETs wait for a slow
// answer (their 99th percentile is above 1 s); with hedging after 50 ms,
// a GET waits for one only when its first attempt and both hedges are slow
// (0.05³: once in 8000 GETs), so the 99th percentile is that of fast
// answers plus 50 ms. The test asserts on the count of slow answers handed
// over (at most 5 of 1000 keeps the 99th percentile, the 10th slowest, a
// fast one), not on wall time, which a loaded machine stretches; the
// latencies are logged (BenchmarkHedgeTail measures them). Every losing response body is
// closed, no connection stays active and no goroutine is left.
func TestHedgeTailLoopback(t *testing.T) {
	srv := newTailServer(t, time.Second)
	goroutines := runtime.NumGoroutine()
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	defer base.CloseIdleConnections()
	counted := &bodies{base: base}
	var hedges, won atomic.Int64
	obs := event.Func(func(_ context.Context, e event.Event) {
		switch e.Kind {
		case event.Hedge:
			hedges.Add(1)
		case event.HedgeWon:
			won.Add(1)
		}
	})
	// No budgets and no brownout stop: with 5 % of answers slow, the
	// default hedge budget (5 %) is all the hedges need, and on a loaded
	// machine (the race detector, other tests) many fast answers take more
	// than 50 ms too, whose hedges would spend the hedge budget and the
	// host's retry budget (20 %) and leave slow answers unhedged. The
	// budgets and the brownout stop are tested on stepped instants in
	// packages hedge and budget and on virtual time in package sim.
	tr := &httpretry.Transport{Base: counted, Observer: obs, Guards: httpretry.Guards{Budget: httpretry.NoBudget},
		Hedge: &hedge.Config{Delay: 50 * time.Millisecond, Budget: hedge.Off, Brownout: hedge.Off}}
	slow, lat := tailRun(t, tr, srv.URL, 1000, 8)
	t.Logf("hedged after 50ms: %d GETs, %d slow answers handed over, %d hedges sent, %d won; p50 %v, p99 %v, max %v",
		len(lat), slow, hedges.Load(), won.Load(), lat[len(lat)/2], p99(lat), lat[len(lat)-1])
	if len(lat) != 1000 || slow > 5 {
		t.Errorf("hedged: %d GETs, %d slow answers handed over; want 1000, at most 5", len(lat), slow)
	}
	if h, w := hedges.Load(), won.Load(); w < 45 || h < w {
		t.Errorf("%d hedges sent, %d won; want one won per slow first attempt (50)", h, w)
	}

	// The losers' bodies are closed by the goroutines that collect them:
	// give them a moment, then count.
	settled := func(cond func() bool) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return cond()
	}
	if !settled(func() bool { return counted.opened.Load() == counted.closed.Load() }) {
		t.Errorf("%d response bodies opened, %d closed", counted.opened.Load(), counted.closed.Load())
	}
	if !settled(func() bool { return srv.active() == 0 }) {
		t.Errorf("%d connections still active", srv.active())
	}
	// A connection whose dial a cancelled hedge started joins the idle
	// pool when the dial completes: close the idle ones until none is left.
	if !settled(func() bool { base.CloseIdleConnections(); return runtime.NumGoroutine() <= goroutines }) {
		t.Errorf("%d goroutines, %d before", runtime.NumGoroutine(), goroutines)
	}

	// Without hedging, the slow answers are handed over.
	plain := &httpretry.Transport{Base: base}
	slow, lat = tailRun(t, plain, srv.URL, 1000, 50)
	t.Logf("without hedging: %d GETs, %d slow answers handed over; p50 %v, p99 %v", len(lat), slow, lat[len(lat)/2], p99(lat))
	if p99(lat) < time.Second {
		t.Errorf("without hedging: p99 %v, want above 1s (5 %% of answers take 1 s)", p99(lat))
	}
}

// Only requests that are safe to send twice are hedged: a POST without an
// Idempotency-Key is sent once, however slow; with a key, its copies carry
// the same key.
func TestHedgeOnlySafeRequests(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		if first {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		w.Write([]byte("done " + strconv.Itoa(len(keys))))
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Hedge: &hedge.Config{Delay: 20 * time.Millisecond, Budget: hedge.Off},
		Policy: retry.Policy{MaxAttempts: 3}}
	client := tr.Client()

	resp, err := client.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	if len(keys) != 1 {
		t.Errorf("a POST without key was sent %d times, want once", len(keys))
	}
	keys = nil
	mu.Unlock()

	tr = &httpretry.Transport{Base: base, Hedge: &hedge.Config{Delay: 20 * time.Millisecond, Budget: hedge.Off},
		IdempotencyKey: httpretry.KeyAuto}
	resp, err = tr.Client().Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(keys) < 2 || keys[0] == "" || keys[1] != keys[0] {
		t.Errorf("a POST with a created key: keys %q, want it hedged with one key on every copy", keys)
	}
}

// An invalid hedge configuration is reported by Validate, naming the field.
func TestHedgeConfigInvalid(t *testing.T) {
	tr := &httpretry.Transport{Hedge: &hedge.Config{Quantile: 2}}
	err := tr.Validate()
	if !errors.Is(err, httpretry.ErrInvalidConfig) || !errors.Is(err, hedge.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "Hedge.Quantile: 2 out of range") {
		t.Errorf("Validate = %v, want an invalid Transport naming Hedge and Quantile 2", err)
	}
}

// BenchmarkHedgeTail measures on the wall clock what TestHedgeTailLoopback
// asserts by counts: the 99th percentile of 1000 GETs from 8 goroutines
// against a loopback server where 5 % of answers take 1 s, hedged after
// 50 ms (p99-ms, extra-%: hedges per GET) and not (p99-ms-plain). Run it
// with -benchtime 1x: each iteration takes seconds.
func BenchmarkHedgeTail(b *testing.B) {
	srv := newTailServer(b, time.Second)
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	defer base.CloseIdleConnections()
	var hedges atomic.Int64
	obs := event.Func(func(_ context.Context, e event.Event) {
		if e.Kind == event.Hedge {
			hedges.Add(1)
		}
	})
	for b.Loop() {
		hedges.Store(0)
		tr := &httpretry.Transport{Base: base, Observer: obs, Hedge: &hedge.Config{Delay: 50 * time.Millisecond, Budget: 0.2}}
		_, lat := tailRun(b, tr, srv.URL, 1000, 8)
		b.ReportMetric(float64(p99(lat))/1e6, "p99-ms")
		b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
		b.ReportMetric(float64(hedges.Load())/10, "extra-%")
		_, lat = tailRun(b, &httpretry.Transport{Base: base}, srv.URL, 1000, 8)
		b.ReportMetric(float64(p99(lat))/1e6, "p99-ms-plain")
	}
}

// A hedge whose request cannot be built (the caller's GetBody fails) was
// never sent: it does not end the call while the first attempt runs, whose
// answer is handed over; when nothing else can answer any more, the call
// ends with the GetBody error, counting only the attempts sent.
func TestHedgeUnbuiltLeavesFirstAttempt(t *testing.T) {
	for _, first := range []int{200, 503} {
		t.Run(strconv.Itoa(first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int64
				base, _ := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					_, _ = io.Copy(io.Discard, r.Body)
					select { // virtual time: slower than the hedge delay
					case <-time.After(time.Second):
					case <-r.Context().Done():
						return
					}
					w.WriteHeader(first)
					_, _ = w.Write([]byte("first"))
				}))
				tr := &httpretry.Transport{Base: base, Hedge: &hedge.Config{Delay: 20 * time.Millisecond, Budget: hedge.Off}}
				req, _ := http.NewRequest("PUT", "http://api.test/", strings.NewReader("payload"))
				errGone := errors.New("payload gone")
				req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
				resp, body, err := send(t, tr, req)
				if first == 200 {
					wantAnswer(t, resp, body, err, 200, "first")
				} else {
					var he *httpretry.Error
					if !errors.As(err, &he) || !errors.Is(err, errGone) || he.Attempts != 1 || he.LastStatus != 503 {
						t.Fatalf("got %v, %v; want an *httpretry.Error matching the GetBody error, 1 attempt sent, last status 503", resp, err)
					}
					if strings.Contains(err.Error(), "2 attempts") {
						t.Errorf("message %q counts the hedge that was not sent", err)
					}
				}
				if n.Load() != 1 {
					t.Errorf("server saw %d requests, want 1", n.Load())
				}
			})
		})
	}
}

// countingRT counts the requests handed to its base.
type countingRT struct {
	base http.RoundTripper
	n    atomic.Int32
}

func (c *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

// A hedged request whose context has ended before its first attempt is
// treated as one that is not hedged (TestCancelledBeforeSending): nothing
// is handed to Base, its body is closed and not replayed, and the error
// counts no attempt, matches the context's error and says the call was
// cancelled after 0 attempts. The observer sees what it sees for the same
// request without hedging.
func TestHedgedCancelledBeforeSending(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired} {
		for _, observed := range []bool{false, true} {
			t.Run(ctx.Err().Error()+"/observed="+strconv.FormatBool(observed), func(t *testing.T) {
				kinds := func(hc *hedge.Config) ([]string, error, *closeCounter, int32, int32) {
					var (
						mu  sync.Mutex
						evs []string
					)
					rt := &countingRT{base: base}
					tr := &httpretry.Transport{Base: rt, Hedge: hc}
					if observed {
						tr.Observer = event.Func(func(_ context.Context, e event.Event) {
							mu.Lock()
							defer mu.Unlock()
							evs = append(evs, e.Kind.String()+"#"+strconv.Itoa(e.Attempt))
						})
					}
					body := &closeCounter{Reader: strings.NewReader("payload")}
					req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL, body)
					var replays atomic.Int32
					req.GetBody = func() (io.ReadCloser, error) {
						replays.Add(1)
						return io.NopCloser(strings.NewReader("payload")), nil
					}
					resp, err := tr.RoundTrip(req)
					if resp != nil {
						resp.Body.Close()
						t.Fatalf("got a response %d with %v", resp.StatusCode, err)
					}
					mu.Lock()
					defer mu.Unlock()
					return evs, err, body, rt.n.Load(), replays.Load()
				}
				plain, _, _, _, _ := kinds(nil)
				evs, err, body, sent, replays := kinds(&hedge.Config{Delay: time.Hour, Budget: hedge.Off})
				var he *httpretry.Error
				if !errors.As(err, &he) || !errors.Is(err, ctx.Err()) || !errors.Is(err, retry.ErrCancelled) {
					t.Fatalf("got %v; want an *httpretry.Error matching %v and retry.ErrCancelled", err, ctx.Err())
				}
				if he.Attempts != 0 || !strings.Contains(err.Error(), "gave up after 0 attempts") || strings.Contains(err.Error(), "1 attempt") {
					t.Errorf("Attempts %d, error %q: want 0 attempts, said so", he.Attempts, err)
				}
				if sent != 0 || got.Load() != 0 || replays != 0 || body.closed != 1 {
					t.Errorf("%d requests handed to Base, %d reached the server, GetBody called %d times, body closed %d times; want 0, 0, 0, 1",
						sent, got.Load(), replays, body.closed)
				}
				if !slices.Equal(evs, plain) {
					t.Errorf("events %q, want those without hedging: %q", evs, plain)
				}
			})
		}
	}
}

// A hedge that starts after the caller's context has ended is not sent
// and not counted either: here the context ends as the hedge falls due,
// while the first attempt waits at the server, and the error counts that
// one attempt.
func TestHedgeAfterCancelNotCounted(t *testing.T) {
	arrived := make(chan struct{}, 1)
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got.Add(1)
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	rt := &countingRT{base: base}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &httpretry.Transport{Base: rt, Hedge: &hedge.Config{Delay: time.Nanosecond, Budget: hedge.Off},
		Observer: event.Func(func(_ context.Context, e event.Event) {
			if e.Kind == event.Hedge { // the driver, about to start the hedge
				<-arrived
				cancel()
			}
		})}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	var he *httpretry.Error
	if resp != nil || !errors.As(err, &he) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, %v; want an *httpretry.Error matching context.Canceled", resp, err)
	}
	if he.Attempts != 1 || !strings.Contains(err.Error(), "gave up after 1 attempt ") {
		t.Errorf("Attempts %d, error %q: want the 1 attempt sent, said so", he.Attempts, err)
	}
	if n, g := rt.n.Load(), got.Load(); n != 1 || g != 1 {
		t.Errorf("%d requests handed to Base, %d reached the server; want 1, 1", n, g)
	}
}
