package httpretry_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func Example() {
	// A server that is busy for its first two requests.
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			// "Come back now": the backoff still spreads the clients
			// it reached (a longer Retry-After replaces it).
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
	// attempt 1: 429, retrying (wait from backoff)
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

// A server whose first answer hangs: the transport sends a copy of the GET
// after 20 ms and hands over the copy's answer; the first request is
// cancelled.
func ExampleTransport_hedge() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hangs until the client gives up on it
			return
		}
		fmt.Fprintf(w, "answered attempt %s", r.Header.Get("Attempt-Count"))
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := (&httpretry.Transport{Base: base, Hedge: &hedge.Config{Delay: 20 * time.Millisecond}}).Client()

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 answered attempt 2
}

// Per-host guards: each destination host gets its own budget (on by
// default) and, here, its own circuit breaker, which trips on the host that
// keeps failing and stops the calls to it.
func ExampleGuards() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()

	p, _ := retrytest.NoWait(retry.Policy{}) // no waiting, for the example
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{
		Breaker: func(host string) retry.Breaker {
			b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 3, OpenTimeout: time.Minute})
			return b
		},
	}}
	defer tr.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		resp, err := tr.Client().Get(down.URL)
		var he *httpretry.Error
		if errors.As(err, &he) {
			fmt.Println("refused:", he.Reason)
			continue
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	u, _ := url.Parse(down.URL)
	_, br, _ := tr.GuardsFor(u.Host)
	fmt.Println(br.(*breaker.Breaker).State())
	// Output:
	// 503
	// refused: breaker open
	// refused: breaker open
	// open
}

// A link cut as the answer comes: with ReadBody, the attempt reads the
// body before it returns, so the cut is retried and the caller reads the
// whole answer of the next attempt.
func ExampleTransport_readBody() {
	srv, err := retrytest.StartServer("200:body=order 7 is paid:cut=9,200:body=order 7 is paid")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()

	client := (&httpretry.Transport{
		Base:     base,
		ReadBody: 1 << 20, // answers up to 1 MiB are read within their attempt
		Policy: retry.Policy{
			Backoff: backoff.Schedule{Base: time.Millisecond}, // short waits for the example
			OnRetry: func(w retry.Wait) {
				var cut *httpretry.BodyCutError
				if errors.As(w.Err, &cut) {
					fmt.Printf("attempt %d: %s, body cut after %d bytes, retrying\n", w.Attempt, cut.Status, cut.Read)
				}
			},
		},
	}).Client()
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// attempt 1: 200 OK, body cut after 9 bytes, retrying
	// 200 order 7 is paid
}

func ExampleHint() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, h := range []http.Header{
		{"Retry-After": {"120"}},
		{"Retry-After": {"Sun, 01 Mar 2026 12:00:30 GMT"}, "Date": {"Sun, 01 Mar 2026 11:59:50 GMT"}}, // the server's clock is 10 s behind
		{"Ratelimit": {`"default";r=0;t=15`}},
		{},
	} {
		d, ok := httpretry.Hint(&http.Response{StatusCode: 429, Header: h}, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 40s true
	// 15s true
	// 0s false
}
