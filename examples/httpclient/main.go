// Command httpclient shows httpretry against a local server that answers
// 429 (with Retry-After: 1) and then 503 before it answers 200, printing
// each attempt and each wait as the transport reports them. Then it sends
// a POST to a server that answers 503 once: without an Idempotency-Key it
// is sent once, with a key created by the transport it is retried, with the
// same key on both attempts.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func main() {
	if err := run(os.Stdout, retry.Policy{}); err != nil {
		fmt.Fprintln(os.Stderr, "httpclient:", err)
		os.Exit(1)
	}
}

// run is the program, writing to w, with p the policy of every transport
// (the defaults here; its test gives a policy that does not wait).
func run(w io.Writer, p retry.Policy) error {
	srv, err := retrytest.StartServer("429:retry-after=1:body=slow down,503:body=busy,200:body=hello")
	if err != nil {
		return err
	}
	defer srv.Close()

	start := time.Now()
	tr := &httpretry.Transport{Policy: p, Observer: printer(w, start)} // the defaults: 3 attempts, Retry-After honoured up to 60 s
	defer tr.CloseIdleConnections()
	client := tr.Client()

	fmt.Fprintln(w, "GET", srv.URL+"/greeting")
	resp, err := client.Get(srv.URL + "/greeting")
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprintf(w, "%8.1f ms  got %s %q\n\n", ms(time.Since(start)), resp.Status, body)

	fmt.Fprintln(w, "What the server saw:")
	for _, a := range srv.Attempts() {
		fmt.Fprintf(w, "  %8.1f ms  %s %s  Attempt-Count: %s  → %s\n", ms(a.At.Sub(start)), a.Method, a.URL, a.Header.Get(header.AttemptCount), a.Step)
	}

	for _, mode := range []httpretry.KeyMode{httpretry.KeyOff, httpretry.KeyAuto} {
		if err := post(w, p, mode); err != nil {
			return err
		}
	}
	return nil
}

// post sends a POST to a server that answers 503 once, then 200.
func post(w io.Writer, p retry.Policy, mode httpretry.KeyMode) error {
	srv, err := retrytest.StartServer("503,200:body=created")
	if err != nil {
		return err
	}
	defer srv.Close()
	tr := &httpretry.Transport{Policy: p, IdempotencyKey: mode}
	defer tr.CloseIdleConnections()
	resp, err := tr.Client().Post(srv.URL+"/orders", "application/json", strings.NewReader(`{"item":42}`))
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(w, "\nPOST with IdempotencyKey %s: %s after %d attempt(s)\n", mode, resp.Status, len(srv.Attempts()))
	for _, a := range srv.Attempts() {
		key := a.Header.Get(header.IdempotencyKey)
		if key == "" {
			key = "(none)"
		}
		fmt.Fprintf(w, "  attempt %s  Idempotency-Key: %s  body %s\n", a.Header.Get(header.AttemptCount), key, a.Body)
	}
	return nil
}

// printer returns an observer that prints the transport's events to w.
func printer(w io.Writer, start time.Time) event.Observer {
	return event.Func(func(_ context.Context, e event.Event) {
		at := ms(e.Time.Sub(start))
		switch e.Kind {
		case event.AttemptEnd:
			fmt.Fprintf(w, "%8.1f ms  attempt %d: %s %s → %d %s (%s)\n", at, e.Attempt, e.Method, e.Host, e.Status, http.StatusText(e.Status), e.Outcome)
		case event.RetryScheduled:
			why := "the backoff schedule"
			switch e.Source {
			case event.ServerHint:
				why = "the server's Retry-After, plus jitter"
			case event.RateLimit:
				why = "the client-side rate limiter"
			}
			fmt.Fprintf(w, "%8.1f ms  waiting %v (from %s)\n", at, e.Wait.Round(time.Millisecond), why)
		case event.GaveUp:
			fmt.Fprintf(w, "%8.1f ms  gave up after %d attempts: %s\n", at, e.Attempt, e.Reason)
		}
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
