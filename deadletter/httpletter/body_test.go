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
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestCaptureBufferedBody: a POST whose body is a plain io.Reader (no
// GetBody) goes through an httpretry client with KeyAuto, which buffers the
// body to replay it, and its three attempts get 503. The caller's request
// is read by then; Capture keeps the body the attempts sent (the response's
// request has it), whole, and the redrive sends it with the created key.
func TestCaptureBufferedBody(t *testing.T) {
	ctx := context.Background()
	const body = `{"amount":1000,"note":"` + "0123456789abcdef" + `"}`
	var (
		mu   sync.Mutex
		down = true
		got  []string // body and key of each request received
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(b)+" key="+r.Header.Get(header.IdempotencyKey))
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	p, _ := retrytest.NoWait(retry.Policy{})
	client := &http.Client{Transport: &httpretry.Transport{Policy: p, IdempotencyKey: httpretry.KeyAuto, Base: &http.Transport{}}}
	defer client.CloseIdleConnections()

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/charges", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	store, _ := deadletter.NewMemory(0)
	l, ok, cerr := httpletter.Capture(ctx, store, "payments", req, resp, nil, time.Now())
	if !ok || cerr != nil {
		t.Fatalf("Capture after three 503s of a buffered body: kept %v, %v; want it kept", ok, cerr)
	}
	r, err := httpletter.Decode(l.Payload)
	if err != nil || string(r.Body) != body || l.Attempts != 3 || len(l.Key) != 36 {
		t.Fatalf("letter: body %q (%v), %d attempts, key %q; want the whole body, 3 attempts and the created key", r.Body, err, l.Attempts, l.Key)
	}

	mu.Lock()
	down = false
	mu.Unlock()
	rd, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "payments", Handler: httpletter.Handler(srv.Client(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := rd.RedriveAt(ctx, time.Now()); err != nil || rep.Done != 1 {
		t.Fatalf("redrive: %+v %v, want done", rep, err)
	}
	srv.Client().CloseIdleConnections()
	mu.Lock()
	defer mu.Unlock()
	want := body + " key=" + l.Key
	if len(got) != 4 || got[0] != want || got[3] != want {
		t.Fatalf("the server received %q; want 4 requests, each %q", got, want)
	}
}
