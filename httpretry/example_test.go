package httpretry_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

func Example() {
	// A server that is busy for its first two requests.
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			fmt.Fprintf(w, "hello after %s attempts", r.Header.Get("Attempt-Count"))
		}
	}))
	defer srv.Close()

	client := httpretry.NewClient(retry.Policy{
		// Short waits for the example; the defaults start from 50 ms (1 s
		// for 429 and 503).
		Backoff:      backoff.Schedule{Base: time.Millisecond},
		ThrottleBase: time.Millisecond,
		OnRetry: func(w retry.Wait) {
			var se *httpretry.StatusError
			if errors.As(w.Err, &se) {
				fmt.Printf("attempt %d: %d, retrying (wait from %s)\n", w.Attempt, se.StatusCode(), w.Source)
			}
		},
	})
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// attempt 1: 429, retrying (wait from server)
	// attempt 2: 503, retrying (wait from backoff)
	// 200 hello after 3 attempts
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:00:30 GMT", "Sun, 01 Mar 2026 11:00:00 GMT", "-1", "soon"} {
		d, ok := httpretry.ParseRetryAfter(v, now)
		fmt.Printf("%-31q %v %v\n", v, d, ok)
	}
	// Output:
	// "120"                           2m0s true
	// "Sun, 01 Mar 2026 12:00:30 GMT" 30s true
	// "Sun, 01 Mar 2026 11:00:00 GMT" 0s true
	// "-1"                            0s false
	// "soon"                          0s false
}

func ExampleTransport() {
	// Keep an existing client's settings and transport; retry POSTs too,
	// with an Idempotency-Key created once per request.
	client := &http.Client{Timeout: 30 * time.Second}
	client.Transport = &httpretry.Transport{
		Base:           client.Transport, // nil: http.DefaultTransport
		Policy:         retry.Policy{MaxAttempts: 4},
		IdempotencyKey: httpretry.KeyAuto,
	}
	fmt.Println(client.Transport.(*httpretry.Transport).Validate())
	// Output: <nil>
}
