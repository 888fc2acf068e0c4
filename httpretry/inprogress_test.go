package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdr "github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A keyed request that reaches the server while the key's first request
// still runs there gets 409 with Retry-After from the idempotency
// middleware (as the Idempotency-Key draft says); the transport waits as
// asked and gets the first request's answer, replayed, instead of ending
// on the 409: the work is done once and the caller learns its outcome.
// A 409 without Retry-After, or to a request without a key, is final.
func TestInProgressConflictRetried(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	started := make(chan struct{}, 1)
	idem, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(idem.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "charged")
	})))
	defer srv.Close()
	defer free() // before the server closes, whatever the test found
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	// The key's first request, still running on the server.
	first := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
		req.Header.Set(hdr.IdempotencyKey, `"k1"`)
		resp, err := base.RoundTrip(req)
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	<-started

	// Its retry: the wait before the second attempt lets the first finish.
	p, waits := retrytest.NoWait(retry.Policy{})
	sleep := p.Env.Sleep
	p.Env.Sleep = func(ctx context.Context, d time.Duration) error {
		free()
		if resp := <-first; resp != nil {
			resp.Body.Close()
		}
		return sleep(ctx, d)
	}
	tr := &httpretry.Transport{Base: base, Policy: p}
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
	req.Header.Set(hdr.IdempotencyKey, `"k1"`)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != "charged" || resp.Header.Get(hdr.IdempotentReplayed) != "true" {
		t.Fatalf("retry of a key in progress: %d %q (replayed %q); want the first request's 201, replayed", resp.StatusCode, body, resp.Header.Get(hdr.IdempotentReplayed))
	}
	if got := waits.All(); len(got) != 1 || got[0] < time.Second {
		t.Errorf("waits %v; want one, of the Retry-After (1 s) at least", got)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// A 409 is final when it carries no Retry-After, or when the request has
// no Idempotency-Key: it says the request conflicts with the resource's
// state, which sending it again does not change.
func TestConflictNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key        bool
		retryAfter bool
	}{{"keyed, no Retry-After", true, false}, {"no key, Retry-After", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if tc.retryAfter {
					w.Header().Set("Retry-After", "1")
				}
				w.WriteHeader(http.StatusConflict)
			}))
			defer srv.Close()
			p, _ := retrytest.NoWait(retry.Policy{})
			tr := &httpretry.Transport{Policy: p, Base: &http.Transport{}}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest("PUT", srv.URL, nil)
			if tc.key {
				req.Header.Set(hdr.IdempotencyKey, `"k"`)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict || n.Load() != 1 {
				t.Fatalf("got %d after %d attempts; want the 409 after 1", resp.StatusCode, n.Load())
			}
		})
	}
}

// statusWriter notes the status a handler writes.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// A hedged keyed POST: the hedge reaches the server while the first
// attempt runs, and gets 409 in_progress at once. That answer must not win
// the race: the call waits for the first attempt, whose answer the caller
// gets, the handler having run once.
func TestHedgeInProgressConflictDoesNotWin(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	idem, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	inner := idem.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		<-release
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "charged")
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		inner.ServeHTTP(sw, r)
		if sw.code == http.StatusConflict {
			free() // the hedge was refused: the first attempt may answer
		}
	}))
	defer srv.Close()
	defer free()
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Base: &http.Transport{}, Policy: p, Hedge: &hedge.Config{Delay: 10 * time.Millisecond, MaxHedges: 1}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
	req.Header.Set(hdr.IdempotencyKey, `"k2"`)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != "charged" {
		t.Fatalf("hedged keyed POST: %d %q; want the first attempt's 201, not the hedge's 409", resp.StatusCode, body)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}
