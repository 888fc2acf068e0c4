package httpletter_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// expiring is a caller's context whose deadline passes when expire is
// called: the deadline reached without a real wait.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiring) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestCaptureCallerDeadline: a charge sent by an httpretry client with
// KeyAuto reaches a server (behind the idempotency middleware) that
// executes it and then hangs; the caller's deadline passes while it waits.
// The call ran out of time, as work that ran out of retries: Capture keeps
// it, with the key the attempt carried, and its redrive is replayed, the
// charge executed once. A call the caller cancelled is still not kept.
func TestCaptureCallerDeadline(t *testing.T) {
	ctx := context.Background()
	var (
		mu         sync.Mutex
		executions int
		hang       = true
	)
	arrived := make(chan struct{}, 1)
	mw, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		executions++
		h := hang
		mu.Unlock()
		if h {
			arrived <- struct{}{}
			<-r.Context().Done() // the reply never reaches the caller
		}
		w.WriteHeader(http.StatusCreated)
	})))
	defer srv.Close()
	p, _ := retrytest.NoWait(retry.Policy{})
	client := &http.Client{Transport: &httpretry.Transport{Policy: p, IdempotencyKey: httpretry.KeyAuto, Base: &http.Transport{}}}
	defer client.CloseIdleConnections()

	call := newExpiring()
	req, err := http.NewRequestWithContext(call, http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-arrived; call.expire() }()
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the call succeeded: want it ended by its deadline")
	}
	store, _ := deadletter.NewMemory(0)
	l, kept, cerr := httpletter.Capture(ctx, store, "payments", req, resp, err, time.Now())
	if !kept || cerr != nil || len(l.Key) != 36 || l.Reason != "deadline" {
		t.Fatalf("Capture of a call that reached its deadline (%v): kept %v, %v, key %q, reason %q; want it kept with the created key, reason deadline", err, kept, cerr, l.Key, l.Reason)
	}

	mu.Lock()
	hang = false
	mu.Unlock()
	var sent string
	r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "payments",
		Handler: httpletter.Handler(srv.Client(), func(req *http.Request) error { sent = req.Header.Get(header.IdempotencyKey); return nil })})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := r.RedriveAt(ctx, time.Now()); err != nil || rep.Done != 1 {
		t.Fatalf("redrive: %+v %v, want done", rep, err)
	}
	srv.Client().CloseIdleConnections()
	mu.Lock()
	defer mu.Unlock()
	if executions != 1 || sent != l.Key {
		t.Fatalf("the charge was executed %d times, the redrive sent key %q; want once, key %q (replayed)", executions, sent, l.Key)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	req, _ = http.NewRequestWithContext(cctx, http.MethodPost, srv.URL+"/charges", strings.NewReader(`{}`))
	resp, err = client.Do(req)
	if _, kept, _ := httpletter.Capture(ctx, store, "payments", req, resp, err, time.Now()); kept {
		t.Fatalf("a call the caller cancelled was kept (%v)", err)
	}
}
