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
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestFaultCaptureKeepsCreatedKey: an httpretry client with KeyAuto sends a
// charge to a server behind the idempotency middleware. The first attempt
// is executed and its reply lost (the connection is closed after the
// handler ran); the retries get their replies lost too (the outcome is an
// error) or a 503 from the load balancer in front (the outcome is that
// response). The letter Capture keeps must carry the key the client
// created, so that its redrive is replayed, not executed a second time.
func TestFaultCaptureKeepsCreatedKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(attempt int) string // "lost" or "503"
	}{
		{"replies lost: an error", func(int) string { return "lost" }},
		{"then 503: a response", func(n int) string {
			if n == 1 {
				return "lost"
			}
			return "503"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var (
				mu         sync.Mutex
				executions int
				attempts   int
				faulty     = true
			)
			mw, err := idempotency.New(idempotency.Config{})
			if err != nil {
				t.Fatal(err)
			}
			charge := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				executions++
				mu.Unlock()
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ch_1"}`)
			}))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				attempts++
				fault := ""
				if faulty {
					fault = tc.fault(attempts)
				}
				mu.Unlock()
				switch fault {
				case "503":
					w.WriteHeader(http.StatusServiceUnavailable)
				case "lost":
					charge.ServeHTTP(httptest.NewRecorder(), r) // executed...
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					conn.Close() // ...and its reply lost
				default:
					charge.ServeHTTP(w, r)
				}
			}))
			defer srv.Close()
			p, _ := retrytest.NoWait(retry.Policy{})
			tr := &httpretry.Transport{Policy: p, IdempotencyKey: httpretry.KeyAuto, Base: &http.Transport{}}
			client := &http.Client{Transport: tr}
			defer client.CloseIdleConnections()

			req, err := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if resp != nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			store, _ := deadletter.NewMemory(0)
			l, ok, cerr := httpletter.Capture(ctx, store, "payments", req, resp, err, time.Now())
			if !ok || cerr != nil {
				t.Fatalf("Capture of %v, %v: kept %v, %v", resp, err, ok, cerr)
			}
			if len(l.Key) != 36 || l.Attempts != 3 {
				t.Errorf("letter key %q, %d attempts: want the created key (a UUID) and 3 attempts", l.Key, l.Attempts)
			}

			mu.Lock()
			faulty = false
			mu.Unlock()
			r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "payments", Handler: httpletter.Handler(srv.Client(), nil)})
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := r.RedriveAt(ctx, time.Now()); err != nil || rep.Done != 1 {
				t.Fatalf("redrive: %+v %v, want done", rep, err)
			}
			srv.Client().CloseIdleConnections()
			mu.Lock()
			defer mu.Unlock()
			if executions != 1 {
				t.Fatalf("the charge was executed %d times, want once (the redrive replayed under the created key)", executions)
			}
		})
	}
}
