package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// The fault-injection suite of the Redis idempotency store (go test -run
// Fault): each test injects one fault against a real redis-server and
// checks the handler's runs and every client's answers; the scenarios are
// in internal/idemproc.

// redisFaults starts a redis-server and describes it to the scenarios.
func redisFaults(t *testing.T) idemproc.Faults {
	srv := redistest.Start(t)
	return idemproc.Faults{
		Target:    srv.Addr,
		ChildAddr: srv.Addr,
		Open: func(t *testing.T, addr string) idempotency.Store {
			// ContextTimeoutEnabled: the middleware's bounds on each call
			// hold (LostRenewalReply needs it).
			c := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			return redis.NewIdempotencyStore(c, redis.IdempotencyConfig{})
		},
		Stall: func(t *testing.T) (func() bool, func()) { return pauseWrites(t, srv) },
	}
}

// pauseWrites makes srv hold every write command and script (CLIENT PAUSE
// WRITE) until resume; held reports whether a client is waiting.
func pauseWrites(t *testing.T, srv *redistest.Server) (held func() bool, resume func()) {
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.Do(ctx, "CLIENT", "PAUSE", 60_000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				t.Errorf("CLIENT UNPAUSE: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	held = func() bool {
		info, err := c.Info(ctx, "clients").Result()
		for line := range strings.Lines(info) {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
				return err == nil && n != "0"
			}
		}
		return false
	}
	return held, resume
}

// TestFaultRedis runs the scenarios every store shares, each against a
// server of its own. When Begin's reply is lost, go-redis runs Begin's
// script again; the script recognises its own claim.
func TestFaultRedis(t *testing.T) {
	idemproc.Suite(t, redisFaults)
}

// TestFaultRedisCrashAtComplete: redis-server (append-only file, fsync
// at every command) is killed with SIGKILL as the handler returns and
// started again 4 s later (lease 10 s; go-redis's own retries ride out a
// 1.5 s outage unseen): the record in progress is still there, and
// Complete gets through.
func TestFaultRedisCrashAtComplete(t *testing.T) {
	srv := redistest.StartDurable(t)
	c := srv.Client(t)
	idemproc.OutageAtComplete(t, redis.NewIdempotencyStore(c, redis.IdempotencyConfig{}), 10*time.Second, srv.Kill, func() {
		if err := srv.Resume(); err != nil {
			t.Errorf("restart redis-server: %v", err)
		}
	}, 4*time.Second)
}

// TestFaultRedisRestart: a completed record survives a crash of a server
// with the append-only file, and is lost by one without it (appendonly no,
// no snapshots): its retry then runs the handler again. Check warns of the
// second at start.
func TestFaultRedisRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   func(testing.TB) *redistest.Server
		survive bool
	}{
		{"appendonly yes", redistest.StartDurable, true},
		{"appendonly no", redistest.Start, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.start(t)
			crash := func(t *testing.T) {
				srv.Kill()
				if err := srv.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.survive {
				idemproc.SurvivesRestart(t, srv.Addr, crash)
				return
			}
			store := redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{})
			if err := store.Check(t.Context()); err == nil {
				t.Fatal("Check: nil for a server without the append-only file")
			}
			id := idempotency.ID{Key: "k"}
			now := time.Now()
			if _, claimed, err := store.Begin(t.Context(), id, idempotency.Fingerprint{}, "t", now, time.Minute); err != nil || !claimed {
				t.Fatal(claimed, err)
			}
			if err := store.Complete(t.Context(), id, "t", idempotency.Response{Status: 201}, now, time.Hour); err != nil {
				t.Fatal(err)
			}
			crash(t)
			if _, ok, err := store.Get(t.Context(), id, now); err != nil || ok {
				t.Fatalf("after the crash of a server without the append-only file: record found %v (err %v), want it lost", ok, err)
			}
		})
	}
}

// logged keeps the lines a middleware logs, and passes them to t's log.
type logged struct {
	t  *testing.T
	mu sync.Mutex
	b  []string
}

func (l *logged) Write(p []byte) (int, error) {
	s := strings.TrimSpace(string(p))
	l.mu.Lock()
	l.b = append(l.b, s)
	l.mu.Unlock()
	l.t.Log(s)
	return len(p), nil
}

func (l *logged) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.b {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestFaultRedisCrashWhileHeld: redis-server is killed (SIGKILL) while a
// handler runs, after Begin claimed its key and before Complete, and
// started again at once; a retry arrives while the handler still runs,
// then the handler answers 201 and its response is stored, then a third
// request comes. With the append-only file on, whatever appendfsync says
// (Redis writes the file before it answers; appendfsync decides what a
// crash of the machine loses, which a test cannot cause), the claim is still there after the restart:
// the retry gets 409, the third request the first's response, one run.
// (Under everysec, Redis postpones the write, for up to 2 s, while an
// fsync of the file is still running on a slow disk; what it answered
// meanwhile a kill would lose.) Without it the claim is gone: the retry runs the handler beside the
// first, whose Complete is refused (its lease is lost), and the third
// request replays the retry's response: two runs; Check names the setting.
func TestFaultRedisCrashWhileHeld(t *testing.T) {
	for _, tc := range []struct {
		fsync string // appendfsync, "" for appendonly no
		kept  bool
	}{{"", false}, {"no", true}, {"everysec", true}, {"always", true}} {
		name := "appendonly no"
		if tc.fsync != "" {
			name = "appendfsync " + tc.fsync
		}
		t.Run(name, func(t *testing.T) {
			var srv *redistest.Server
			if tc.fsync == "" {
				srv = redistest.Start(t)
			} else {
				srv = redistest.StartAppendOnly(t, tc.fsync)
			}
			store := redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{})
			logs := &logged{t: t}
			m, err := idempotency.New(idempotency.Config{Store: store, Lease: 10 * time.Second, StoreTimeout: time.Minute, ErrorLog: log.New(logs, "", 0)})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			started, finish := make(chan struct{}), make(chan struct{})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n := runs.Add(1)
				if n == 1 {
					close(started)
					<-finish
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, "charge %d", n)
			}))
			done := make(chan *httptest.ResponseRecorder, 1)
			go func() { done <- post(h, "pay-1") }()
			<-started
			srv.Kill() // the claim made, the handler running
			if err := srv.Resume(); err != nil {
				close(finish)
				<-done
				t.Fatal(err)
			}
			retry := post(h, "pay-1")
			close(finish)
			first := <-done
			third := post(h, "pay-1")
			got := fmt.Sprintf("first %d %q, retry during it %d %q, third %d %q (replayed %q), %d runs",
				first.Code, first.Body, retry.Code, retry.Body, third.Code, third.Body, third.Header().Get("Idempotent-Replayed"), runs.Load())
			if first.Code != http.StatusCreated || first.Body.String() != "charge 1" {
				t.Fatalf("%s; the first client gets its handler's 201 either way", got)
			}
			if tc.kept {
				if retry.Code != http.StatusConflict || third.Body.String() != "charge 1" || runs.Load() != 1 {
					t.Fatalf("%s; want 409 for the retry, the first's response replayed, 1 run", got)
				}
				return
			}
			if retry.Code != http.StatusCreated || retry.Body.String() != "charge 2" || third.Body.String() != "charge 2" || runs.Load() != 2 {
				t.Fatalf("%s; want the retry to run beside the first, and its response replayed: 2 runs", got)
			}
			if logs.count("lease lost") == 0 {
				t.Fatal("the first request's Complete, refused, was not logged as a lost lease")
			}
			var unsafe *redis.UnsafeServerError
			if err := store.Check(t.Context()); !errors.As(err, &unsafe) || !unsafe.NotAppendOnly {
				t.Fatalf("Check: %v; want it to name the missing append-only file", err)
			}
			t.Log(got)
		})
	}
}

// TestFaultRedisEviction: the server reaches its memory limit
// (maxmemory set to 1 byte, then a write) under an eviction policy, once
// one request's record is complete and while another's handler runs. Both
// policies pick the store's keys (each has an expiry, so volatile-lru too):
// the completed record and the claim are evicted. The completed request's
// retry runs its handler again; the running request's retry runs beside
// it, and the first's Complete is refused. Check names the policy.
func TestFaultRedisEviction(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.StartAppendOnly(t, "always")
			c := srv.Client(t)
			ctx := t.Context()
			store := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{})
			logs := &logged{t: t}
			m, err := idempotency.New(idempotency.Config{Store: store, ErrorLog: log.New(logs, "", 0)})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			started, finish := make(chan struct{}), make(chan struct{})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := runs.Add(1)
				if r.Header.Get("Idempotency-Key") == "held" && n == 2 {
					close(started)
					<-finish
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, "charge %d", n)
			}))
			if rec := post(h, "done"); rec.Code != http.StatusCreated {
				t.Fatalf("first request: %d %s", rec.Code, rec.Body)
			}
			held := make(chan *httptest.ResponseRecorder, 1)
			go func() { held <- post(h, "held") }()
			<-started

			if err := c.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
			_ = c.Set(ctx, "filler", "x", 0).Err() // evicts what the policy may, then fails with OOM
			n, err := c.Exists(ctx, redis.DefaultIdempotencyPrefix+"0::done", redis.DefaultIdempotencyPrefix+"0::held").Result()
			var unsafe *redis.UnsafeServerError
			checked := store.Check(ctx)
			if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
				t.Fatal(err)
			}
			if err != nil || n != 0 {
				close(finish)
				<-held
				t.Fatalf("%d of the 2 records left after the eviction (err %v); want both evicted", n, err)
			}
			if !errors.As(checked, &unsafe) || !unsafe.Evicts || unsafe.MaxmemoryPolicy != policy || unsafe.NotAppendOnly {
				t.Errorf("Check at the memory limit: %v; want it to name %s alone", checked, policy)
			}

			again := post(h, "done")
			beside := post(h, "held")
			close(finish)
			first := <-held
			got := fmt.Sprintf("done's retry %d %q (replayed %q); held: the first %d %q, its retry %d %q; %d runs",
				again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), first.Code, first.Body, beside.Code, beside.Body, runs.Load())
			if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "" || beside.Code != http.StatusCreated ||
				first.Code != http.StatusCreated || runs.Load() != 4 || logs.count("lease lost") != 1 {
				t.Fatalf("%s; want each retry to run its handler again (4 runs) and the first held request's Complete refused", got)
			}
			t.Log(got)
		})
	}
}

// TestFaultRedisRestartDuringWait: redis-server is killed (SIGKILL) as the
// handler answers, so that Complete fails past StoreTimeout (200 ms): the
// client gets its 201 and the middleware tries Complete on in the
// background. The server shuts down (httptest's Close, as
// http.Server.Shutdown) and calls Middleware.Wait, which holds until
// redis-server is started again and the record stored. With the
// append-only file the claim survived: Wait returns nil once Complete got
// through, and a retry to another instance, after the lease, replays the
// answer. Without it the claim is gone: the background Complete is refused
// (logged as a lost lease), Wait returns nil as well, having nothing left to
// try, and the retry runs the handler again.
func TestFaultRedisRestartDuringWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) *redistest.Server
		kept  bool
	}{{"appendonly yes", redistest.StartDurable, true}, {"appendonly no", redistest.Start, false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.start(t)
			const lease = 10 * time.Second
			logs := &logged{t: t}
			var runs atomic.Int64
			handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n := runs.Add(1)
				if n == 1 {
					srv.Kill()
				}
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, "charge %d", n)
			})
			m, err := idempotency.New(idempotency.Config{Store: redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}),
				Lease: lease, StoreTimeout: 200 * time.Millisecond, ErrorLog: log.New(logs, "", 0)})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(m.Handler(handler))
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/pay", strings.NewReader(`{"amount":1}`))
			req.Header.Set("Idempotency-Key", "pay-1")
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			hs.Close() // the server shuts down, its response sent, its record not stored
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("first: %d; want 201 after StoreTimeout", resp.StatusCode)
			}
			waited := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			defer cancel()
			go func() { waited <- m.Wait(ctx) }()
			select {
			case err := <-waited:
				t.Fatalf("Wait returned %v while redis-server was down; want it to hold until Complete ends", err)
			default:
			}
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatalf("Wait: %v; want nil once the background Complete ended", err)
			}
			// Another instance, after the lease.
			other, err := idempotency.New(idempotency.Config{Store: redis.NewIdempotencyStore(srv.Client(t), redis.IdempotencyConfig{}),
				Now: func() time.Time { return time.Now().Add(lease + time.Second) }})
			if err != nil {
				t.Fatal(err)
			}
			again := post(other.Handler(handler), "pay-1")
			got := fmt.Sprintf("the retry %d %q (replayed %q), %d runs", again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), runs.Load())
			if tc.kept != (again.Header().Get("Idempotent-Replayed") == "true" && again.Body.String() == "charge 1" && runs.Load() == 1) {
				t.Fatalf("%s; want the replay of charge 1 and 1 run exactly when the append-only file kept the claim", got)
			}
			if !tc.kept && (runs.Load() != 2 || logs.count("lease lost") == 0) {
				t.Fatalf("%s; want 2 runs and the refused Complete logged as a lost lease", got)
			}
			t.Log(got)
		})
	}
}

// TestFaultRedisRingShardDown: through a Ring of two shards (each with
// the append-only file, without eviction: safe servers), a request
// completes on one shard, and that shard's redis-server is killed. Once
// the Ring has marked it down (its heartbeat, every 10 ms here) it sends
// the shard's keys to the other shard, which has no record of them: the
// retry runs the handler again. A Ring gives up consistency for
// availability, so Check names it whatever its servers' settings.
func TestFaultRedisRingShardDown(t *testing.T) {
	a, b := redistest.StartAppendOnly(t, "everysec"), redistest.StartAppendOnly(t, "everysec")
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}, HeartbeatFrequency: 10 * time.Millisecond})
	t.Cleanup(func() { _ = ring.Close() })
	store := redis.NewIdempotencyStore(ring, redis.IdempotencyConfig{})
	ctx := t.Context()
	var unsafe *redis.UnsafeServerError
	if err := store.Check(ctx); !errors.As(err, &unsafe) || !unsafe.Ring || !strings.Contains(err.Error(), "Cluster") {
		t.Errorf("Check through a Ring of safe servers: %v; want an UnsafeServerError naming the Ring and what to use instead", err)
	}
	m, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charge %d", runs.Add(1))
	}))
	// A key whose record the Ring puts on shard a.
	ac := a.Client(t)
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("pay-%d", i)
		if rec := post(h, k); rec.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", k, rec.Code, rec.Body)
		}
		if ac.Exists(ctx, redis.DefaultIdempotencyPrefix+"0::"+k).Val() == 1 {
			key = k
		}
	}
	before := runs.Load()
	a.Kill()
	for deadline := time.Now().Add(10 * time.Second); ring.Len() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Ring still counts %d live shards 10 s after shard a was killed", ring.Len())
		}
	}
	again := post(h, key)
	if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "" || runs.Load() != before+1 {
		t.Fatalf("retry of %s with its shard down: %d %q (replayed %q), %d runs more; want the handler run again on the other shard",
			key, again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), runs.Load()-before)
	}
}
