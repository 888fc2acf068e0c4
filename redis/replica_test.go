package redis_test

import (
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// replicated is a primary and its replica, which reaches the primary
// through link, so that a test can cut replication.
type replicated struct {
	primary, replica *redistest.Server
	link             *redistest.Proxy
}

func startReplicated(t *testing.T) replicated {
	primary := redistest.Start(t)
	link := primary.Proxy(t)
	return replicated{primary: primary, replica: redistest.StartReplica(t, link.Addr), link: link}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func middlewareOver(t *testing.T, store idempotency.Store, storeTimeout time.Duration) *idempotency.Middleware {
	m, err := idempotency.New(idempotency.Config{Store: store, StoreTimeout: storeTimeout, ErrorLog: log.New(testWriter{t}, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func post(h http.Handler, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{"amount":1}`))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// failover sends a request with a key to a middleware over a store on
// r's primary (configured by cfg); while its handler runs, r's replica is
// promoted, as a failover does, and a second request with the same key
// goes to a middleware over it. It returns the second request's status and
// how many times the handler ran. With cut set, the replication link drops
// everything from the primary from before the first request on.
func failover(t *testing.T, r replicated, cfg redis.IdempotencyConfig, cut bool) (int, int64) {
	var runs atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if runs.Add(1) == 1 {
			close(started)
			<-finish
			// A status the middleware does not keep: it releases the key
			// instead of completing it, which the old primary, with its
			// replica gone, would refuse (with Replicas) and try again in
			// the background for the lease.
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	first := middlewareOver(t, redis.NewIdempotencyStore(r.primary.Client(t), cfg), 0).Handler(handler)
	second := middlewareOver(t, redis.NewIdempotencyStore(r.replica.Client(t), redis.IdempotencyConfig{}), 0).Handler(handler)
	if cut {
		r.link.DropReplies()
	}
	done := make(chan int, 1)
	go func() { done <- post(first, "pay-1").Code }()
	select {
	case <-started:
	case code := <-done:
		t.Fatalf("the first request ended with %d before its handler ran", code)
	}
	r.replica.Promote(t)
	code := post(second, "pay-1").Code
	close(finish)
	<-done
	return code, runs.Load()
}

// TestReplicaFailoverLosesClaim shows the limit of asynchronous
// replication: a claim the replica had not received when it was promoted
// is gone there, and a retry runs the handler a second time.
func TestReplicaFailoverLosesClaim(t *testing.T) {
	code, runs := failover(t, startReplicated(t), redis.IdempotencyConfig{}, true)
	if code != http.StatusCreated || runs != 2 {
		t.Fatalf("after failover the duplicate got %d and the handler ran %d times; want 201 and 2 (the claim lost)", code, runs)
	}
}

// TestReplicaWaitKeepsClaim: with Replicas 1, Begin returns once the
// replica has the claim, so the promoted replica refuses the duplicate
// with 409 and the handler runs once.
func TestReplicaWaitKeepsClaim(t *testing.T) {
	code, runs := failover(t, startReplicated(t), redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: 5 * time.Second}, false)
	if code != http.StatusConflict || runs != 1 {
		t.Fatalf("after failover the duplicate got %d and the handler ran %d times; want 409 and 1", code, runs)
	}
}

// TestReplicaWaitKeepsRecord: with Replicas 1, Complete returns once the
// replica has the record, so the promoted replica replays it.
func TestReplicaWaitKeepsRecord(t *testing.T) {
	r := startReplicated(t)
	var runs atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	cfg := redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: 5 * time.Second}
	first := post(middlewareOver(t, redis.NewIdempotencyStore(r.primary.Client(t), cfg), 0).Handler(handler), "pay-1")
	r.replica.Promote(t)
	second := post(middlewareOver(t, redis.NewIdempotencyStore(r.replica.Client(t), redis.IdempotencyConfig{}), 0).Handler(handler), "pay-1")
	if first.Code != http.StatusCreated || second.Code != http.StatusCreated || second.Header().Get("Idempotent-Replayed") != "true" || runs.Load() != 1 {
		t.Fatalf("first %d, after failover the duplicate %d (replayed %q), handler ran %d times; want 201, a replayed 201, 1",
			first.Code, second.Code, second.Header().Get("Idempotent-Replayed"), runs.Load())
	}
}

// TestReplicaWaitUnreachable: with Replicas 1 and the replica cut off,
// Begin fails within ReplicaTimeout saying how many replicas acknowledged,
// and the middleware answers 503 store_unavailable without running the
// handler, and releases the claim.
func TestReplicaWaitUnreachable(t *testing.T) {
	r := startReplicated(t)
	r.link.Down()
	const timeout = 100 * time.Millisecond
	c := r.primary.Client(t)
	store := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Prefix: "p:", Replicas: 1, ReplicaTimeout: timeout})

	start := time.Now()
	_, claimed, err := store.Begin(t.Context(), idempotency.ID{Key: "direct"}, idempotency.Fingerprint{}, "t", time.Now(), time.Minute)
	took := time.Since(start)
	var re *redis.ReplicaError
	if !errors.As(err, &re) || !errors.Is(err, redis.ErrNotReplicated) || claimed {
		t.Fatalf("Begin with the replica cut off: claimed %v, err %v; want a *ReplicaError", claimed, err)
	}
	if re.Op != "begin" || re.Acked != 0 || re.Asked != 1 || re.Timeout != timeout {
		t.Fatalf("ReplicaError %+v; want begin, 0 acknowledged of 1 asked within %v", *re, timeout)
	}
	if want := "0 of the 1 replicas asked for acknowledged the write within 100ms"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q; want it to say %q", err, want)
	}
	if took < timeout || took > timeout+5*time.Second {
		t.Fatalf("Begin failed after %v; want the timeout, %v, and little more", took, timeout)
	}

	var runs atomic.Int64
	h := middlewareOver(t, store, 0).Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	rec := post(h, "pay-1")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "store_unavailable") || runs.Load() != 0 {
		t.Fatalf("with the replica cut off: %d %s, handler ran %d times; want 503 store_unavailable and no run", rec.Code, rec.Body, runs.Load())
	}
	if n := c.Exists(t.Context(), "p:0::pay-1").Val(); n != 0 {
		t.Fatal("the claim of the refused request is still held on the primary; want it released")
	}
}

// TestReplicaWaitCluster: the store sends WAIT to the primary of the key's
// slot; a one-node cluster has no replica, so Begin fails.
func TestReplicaWaitCluster(t *testing.T) {
	srv := redistest.StartCluster(t)
	store := redis.NewIdempotencyStore(srv.ClusterClient(t), redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: 50 * time.Millisecond})
	_, _, err := store.Begin(t.Context(), idempotency.ID{Key: "k"}, idempotency.Fingerprint{}, "t", time.Now(), time.Minute)
	var re *redis.ReplicaError
	if !errors.As(err, &re) || re.Acked != 0 || re.Asked != 1 {
		t.Fatalf("Begin on a cluster without replicas: %v; want 0 of 1 acknowledged", err)
	}
}

// TestReplicasInvalid: a negative Replicas or ReplicaTimeout, or Replicas
// with a Ring, is refused, and the store returns the refusal from every
// call.
func TestReplicasInvalid(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never reached
	t.Cleanup(func() { _ = c.Close() })
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = ring.Close() })
	for _, tc := range []struct {
		name   string
		client goredis.UniversalClient
		cfg    redis.IdempotencyConfig
		want   string
	}{
		{"negative replicas", c, redis.IdempotencyConfig{Replicas: -1}, "Replicas: -1 out of range; want 0 (no waiting for replicas) or more"},
		{"negative timeout", c, redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: -time.Second}, "ReplicaTimeout: -1s out of range; want 0 (DefaultReplicaTimeout) or more"},
		{"ring", ring, redis.IdempotencyConfig{Replicas: 1}, "*redis.Ring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.client == c {
				if err := tc.cfg.Validate(); !errors.Is(err, redis.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate: %v; want ErrInvalidConfig saying %q", err, tc.want)
				}
			}
			s := redis.NewIdempotencyStore(tc.client, tc.cfg)
			_, _, err := s.Begin(t.Context(), idempotency.ID{Key: "k"}, idempotency.Fingerprint{}, "t", time.Now(), time.Minute)
			if !errors.Is(err, redis.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Begin: %v; want ErrInvalidConfig saying %q", err, tc.want)
			}
			if err := s.Check(t.Context()); !errors.Is(err, redis.ErrInvalidConfig) {
				t.Fatalf("Check: %v; want ErrInvalidConfig", err)
			}
		})
	}
	if err := (redis.IdempotencyConfig{Replicas: 2, ReplicaTimeout: time.Second}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaCheck: with Replicas set, Check says when the server has fewer
// connected replicas than each write waits for (every write would then
// fail with 503), and is quiet once they are connected.
func TestReplicaCheck(t *testing.T) {
	primary := redistest.Start(t)
	c := primary.Client(t)
	ctx := t.Context()
	if err := c.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	s := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{Replicas: 1})
	var unsafe *redis.UnsafeServerError
	err := s.Check(ctx)
	if !errors.Is(err, redis.ErrUnsafeServer) || !errors.As(err, &unsafe) || !unsafe.TooFewReplicas || unsafe.ConnectedReplicas != 0 ||
		unsafe.NotAppendOnly || !strings.Contains(err.Error(), "0 connected replicas of the 1") {
		t.Fatalf("Replicas 1 without a replica: %v, want an UnsafeServerError saying 0 connected replicas of the 1", err)
	}
	if err := redis.NewIdempotencyStore(c, redis.IdempotencyConfig{}).Check(ctx); err != nil {
		t.Fatalf("Replicas 0 without a replica: %v, want nil", err)
	}
	redistest.StartReplica(t, primary.Addr)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Replicas 1 with a replica in sync: %v, want nil", err)
	}
}

// TestReplicaWaitSentAgain: the replica is frozen (SIGSTOP: its primary
// still counts it as connected, it acknowledges nothing) and the reply to
// a Complete, then to a Begin, is lost after the primary ran it. The call
// sent again (by the middleware, which tries a failed Complete again; by
// go-redis) runs on a new connection, finds its own work done on the
// primary and writes nothing; it still fails with a *ReplicaError rather
// than report the first call's write replicated: its WAIT too waits for
// the replicas to acknowledge it (Redis sets a connection's WAIT offset
// to the replication offset after each of its commands, writes or not).
// Once the replica is thawed, the same calls succeed and the replica holds
// both records.
func TestReplicaWaitSentAgain(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary.Addr)
	link := primary.Proxy(t)
	ctx := t.Context()
	// patient waits for a replica in sync; store gives up on a frozen one
	// sooner and reaches the primary through link. Both keep the same
	// records.
	patient := redis.NewIdempotencyStore(primary.Client(t), redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: 10 * time.Second})
	lc := goredis.NewClient(&goredis.Options{Addr: link.Addr})
	t.Cleanup(func() { _ = lc.Close() })
	store := redis.NewIdempotencyStore(lc, redis.IdempotencyConfig{Replicas: 1, ReplicaTimeout: 100 * time.Millisecond})
	now := time.Now()
	done, claim, warm := idempotency.ID{Key: "done"}, idempotency.ID{Key: "claim"}, idempotency.ID{Key: "warm"}
	resp := idempotency.Response{Status: http.StatusCreated, Body: []byte("charged")}
	// Every script in the server's cache, so that the lost replies below
	// are the scripts' own, not NOSCRIPT's.
	if _, _, err := patient.Begin(ctx, warm, idempotency.Fingerprint{}, "t0", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := patient.Complete(ctx, warm, "t0", resp, now, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := patient.Begin(ctx, done, idempotency.Fingerprint{}, "t1", now, time.Minute); err != nil || !claimed {
		t.Fatalf("Begin with the replica in sync: claimed %v, err %v", claimed, err)
	}
	if _, _, err := store.Get(ctx, done, now); err != nil { // a connection through link, ready
		t.Fatal(err)
	}
	replica.Freeze(t)
	frozen := true
	defer func() {
		if frozen {
			replica.Thaw(t)
		}
	}()
	link.DropNextReply()
	err := store.Complete(ctx, done, "t1", resp, now, time.Hour)
	if err == nil {
		t.Fatal("Complete whose reply was lost, with the replica frozen: nil; want an error")
	}
	err = store.Complete(ctx, done, "t1", resp, now, time.Hour)
	if !errors.Is(err, redis.ErrNotReplicated) {
		t.Fatalf("Complete sent again with the replica frozen: %v; want a *ReplicaError (the record is on the primary only)", err)
	}
	link.DropNextReply()
	if _, claimed, err := store.Begin(ctx, claim, idempotency.Fingerprint{}, "t2", now, time.Minute); err == nil || claimed {
		t.Fatalf("Begin whose reply was lost, with the replica frozen: claimed %v, err %v; want an error", claimed, err)
	}
	if _, claimed, err := store.Begin(ctx, claim, idempotency.Fingerprint{}, "t2", now, time.Minute); !errors.Is(err, redis.ErrNotReplicated) || claimed {
		t.Fatalf("Begin sent again with the replica frozen: claimed %v, err %v; want a *ReplicaError (the claim is on the primary only)", claimed, err)
	}
	replica.Thaw(t)
	frozen = false
	if err := patient.Complete(ctx, done, "t1", resp, now, time.Hour); err != nil {
		t.Fatalf("Complete sent again with the replica thawed: %v", err)
	}
	if _, claimed, err := patient.Begin(ctx, claim, idempotency.Fingerprint{}, "t2", now, time.Minute); err != nil || !claimed {
		t.Fatalf("Begin sent again with the replica thawed: claimed %v, err %v", claimed, err)
	}
	rc := replica.Client(t)
	if n, err := rc.Exists(ctx, redis.DefaultIdempotencyPrefix+done.String(), redis.DefaultIdempotencyPrefix+claim.String()).Result(); err != nil || n != 2 {
		t.Fatalf("the replica holds %d of the 2 records (err %v) after the calls succeeded; want both", n, err)
	}
}
