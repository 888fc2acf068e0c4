// Command payment shows a charge made once although the network lost the
// answer: a payment endpoint behind the idempotency middleware, and a
// client that retries through a flaky network.
//
// The network (a RoundTripper between the client's retry layer and the
// connection) delivers the request, lets the server execute it, then drops
// the response, as a reset connection would. The retrying client cannot
// know whether the charge was made, so it sends the request again with the
// same Idempotency-Key. Without the middleware the customer is charged
// twice; with it, the retry gets the first charge's response replayed.
//
//	go run ./examples/payment
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
)

// ledger is the payment provider's book of charges.
type ledger struct {
	mu      sync.Mutex
	charges []string
}

// charge is the payment endpoint: every call that reaches it charges.
func (l *ledger) charge(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	id := fmt.Sprintf("ch_%d", len(l.charges)+1)
	l.charges = append(l.charges, id)
	l.mu.Unlock()
	fmt.Printf("  server: charged %s for %s\n", id, body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"charge":%q,"status":"succeeded"}`, id)
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.charges)
}

// flaky is the network: it drops the first response after the server has
// executed the request, as a connection reset after the request was sent
// would.
type flaky struct {
	base    http.RoundTripper
	mu      sync.Mutex
	dropped bool
}

func (f *flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	drop := !f.dropped
	f.dropped = true
	f.mu.Unlock()
	if drop {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("  network: lost the %d response on its way back\n", resp.StatusCode)
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	return resp, nil
}

func main() {
	fmt.Println("without the idempotency middleware:")
	charged, err := run(false)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("  the customer was charged %d times\n\n", charged)

	fmt.Println("with the idempotency middleware:")
	charged, err = run(true)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("  the customer was charged %d time\n", charged)
	if charged != 1 {
		os.Exit(1)
	}
}

// run serves the payment endpoint on loopback, with or without the
// middleware, makes one payment through the flaky network and returns how
// many charges the server made.
func run(withMiddleware bool) (int, error) {
	l := &ledger{}
	var h http.Handler = http.HandlerFunc(l.charge)
	if withMiddleware {
		idem, err := idempotency.New(idempotency.Config{
			Scope: func(r *http.Request) string { return r.Header.Get("X-Customer") },
		})
		if err != nil {
			return 0, err
		}
		h = idem.Require(h)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", h)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &httpretry.Transport{
		Base: &flaky{base: base},
		// One Idempotency-Key per payment, created by the transport and
		// sent unchanged on every attempt.
		IdempotencyKey: httpretry.KeyAuto,
		Policy: retry.Policy{
			Backoff: backoff.Schedule{Base: 10 * time.Millisecond},
			OnRetry: func(w retry.Wait) {
				fmt.Printf("  client: attempt %d failed (%v); retrying in %v\n", w.Attempt, shortErr(w.Err), w.Delay.Round(time.Millisecond))
			},
		},
	}}

	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
		"http://"+lis.Addr().String()+"/payments", strings.NewReader(`{"amount":1000,"currency":"eur"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Customer", "cus_42")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	replayed := ""
	if resp.Header.Get(header.IdempotentReplayed) == "true" {
		replayed = " (replayed: " + header.IdempotentReplayed + ": true)"
	}
	fmt.Printf("  client: got %d %s%s\n", resp.StatusCode, body, replayed)
	return l.count(), nil
}

func shortErr(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err.Error()
	}
	return err.Error()
}
