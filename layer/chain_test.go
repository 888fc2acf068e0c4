package layer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/layer"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// mode is how a hop of the chain protects itself.
type mode int

const (
	relay      mode = iota // no protection: relay whatever the next hop answered
	guarded                // layer.Middleware, layer.Fail: only the top layer retries
	doNotRetry             // every hop retries, then answers with Do-Not-Retry: only the bottom layer retries
)

// hop is a service that serves each request by calling next through its
// own retrying transport (3 attempts, no waiting) and relaying the answer:
// the handler every layer of the chain runs.
func hop(t *testing.T, next string, m mode) *httptest.Server {
	t.Helper()
	p, _ := retrytest.NoWait(retry.Policy{MaxAttempts: 3})
	// No retry budget: it would bound the multiplication too (a host that
	// keeps failing gets a few retries in all); this test is about the
	// layer rules alone.
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
	client := tr.Client()
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), "GET", next, nil)
		resp, err := client.Do(req)
		if err != nil {
			if m == relay {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			layer.Fail(w, r, err)
			return
		}
		defer resp.Body.Close()
		if m != relay && resp.StatusCode >= 500 && !layer.FromRetryingCaller(r) {
			// This layer retried already: the layers above must not.
			layer.DoNotRetry(w, r)
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	if m == guarded {
		h = layer.Middleware(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.Close(); tr.CloseIdleConnections() })
	return s
}

// chain builds A → B → C → D, where D always answers 503, and returns A's
// URL and D's request counter.
func chain(t *testing.T, m mode) (string, *atomic.Int64) {
	var n atomic.Int64
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(d.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	c := hop(t, d.URL, m)
	b := hop(t, c.URL, m)
	a := hop(t, b.URL, m)
	return a.URL, &n
}

// TestChainAmplification: one call to A, three hops each retrying 3 times.
func TestChainAmplification(t *testing.T) {
	for _, c := range []struct {
		name string
		m    mode
		want int64
	}{
		{"every layer retries", relay, 27},
		{"layer guard: the top layer retries", guarded, 3},
		{"Do-Not-Retry: the bottom layer retries", doNotRetry, 3},
	} {
		a, d := chain(t, c.m)
		resp, err := http.Get(a) // a caller that does not retry
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		t.Logf("%s: D received %d requests for one call to A (status %d, Do-Not-Retry %q)",
			c.name, d.Load(), resp.StatusCode, resp.Header.Get("Do-Not-Retry"))
		if d.Load() != c.want {
			t.Errorf("%s: D received %d requests, want %d", c.name, d.Load(), c.want)
		}
		// A retried on its own caller's behalf and says not to retry again.
		if c.m != relay && (resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "true") {
			t.Errorf("%s: A answered %d with Do-Not-Retry %q, want 503 with true", c.name, resp.StatusCode, resp.Header.Get("Do-Not-Retry"))
		}
	}
}

// TestChainFromARetryingClient: the caller of A retries too (httpretry,
// which sends Attempt-Count). With the guard, A makes single attempts, so
// the only retrying layer is the client: D still sees 3 requests.
func TestChainFromARetryingClient(t *testing.T) {
	a, d := chain(t, guarded)
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p}
	defer tr.CloseIdleConnections()
	resp, err := tr.Client().Get(a)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d.Load() != 3 || resp.StatusCode != 503 {
		t.Fatalf("D received %d requests, client got %d; want 3 and 503", d.Load(), resp.StatusCode)
	}
}

// TestDoNotRetryStopsTheCaller: a server that retries on its own (no
// layer middleware between it and its caller's retries) answers with
// Do-Not-Retry once its retries are exhausted, and the caller's transport
// honours it: C receives 3 requests, not 9.
func TestDoNotRetryStopsTheCaller(t *testing.T) {
	var n atomic.Int64
	c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer c.Close()
	b := hop(t, c.URL, doNotRetry) // retries C itself, then says Do-Not-Retry
	p, _ := retrytest.NoWait(retry.Policy{})
	tr := &httpretry.Transport{Policy: p}
	defer tr.CloseIdleConnections()
	resp, err := tr.Client().Get(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n.Load() != 3 {
		t.Fatalf("C received %d requests, want 3: the client must not retry a Do-Not-Retry answer", n.Load())
	}
}

// TestSingleAttemptTransportErrorAnswers503: under the guard, a hop whose
// single attempt fails in transport (the next service is down) answers 503
// without Do-Not-Retry, so that the retrying caller retries.
func TestSingleAttemptTransportErrorAnswers503(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connections to it are refused
	b := hop(t, deadURL, guarded)
	req, _ := http.NewRequest("GET", b.URL, nil)
	req.Header.Set("Attempt-Count", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "" {
		t.Fatalf("got %d, Do-Not-Retry %q (%s); want 503 without Do-Not-Retry", resp.StatusCode, resp.Header.Get("Do-Not-Retry"), body)
	}
	// Without the attempt header, the hop retries itself, gives up, and
	// says so.
	resp, err = http.Get(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "true" {
		t.Fatalf("got %d, Do-Not-Retry %q; want 503 with true", resp.StatusCode, resp.Header.Get("Do-Not-Retry"))
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestRetryingCallerPastAttempt1000: a caller that retries for hours
// (MaxAttempts Unlimited under a long MaxElapsed) numbers its attempts
// past 1000. Its attempt 1001, 5000 or 999999999 still comes from a
// retrying caller: the guarded hop makes a single attempt, so C receives
// one request per attempt, not 3 (the guard took any number above 1000
// for "does not retry", and the hop's own retries multiplied the
// caller's).
func TestRetryingCallerPastAttempt1000(t *testing.T) {
	var n atomic.Int64
	c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer c.Close()
	b := hop(t, c.URL, guarded)
	for _, attempt := range []string{"1000", "1001", "5000", "999999999"} {
		n.Store(0)
		req, _ := http.NewRequest("GET", b.URL, nil)
		req.Header.Set("Attempt-Count", attempt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n.Load() != 1 || resp.StatusCode != 503 || resp.Header.Get("Do-Not-Retry") != "" {
			t.Errorf("Attempt-Count: %s: C received %d requests, B answered %d with Do-Not-Retry %q; want 1, and 503 without it (the caller retries)",
				attempt, n.Load(), resp.StatusCode, resp.Header.Get("Do-Not-Retry"))
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestDetachedWorkRetries: a handler served under the guard (its caller
// retries) that answers 202 and finishes its work in the background, on
// context.WithoutCancel(r.Context()), keeps the single-attempt mark with
// the context's values: the work's one failed call is not retried,
// though the caller has its answer and will not retry it. Under
// retry.WithoutSingleAttempt the work's loop makes its attempts again: C
// receives 2 requests (503, then 200), and nothing is lost.
func TestDetachedWorkRetries(t *testing.T) {
	for _, detach := range []bool{false, true} {
		var n atomic.Int64
		c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		p, _ := retrytest.NoWait(retry.Policy{})
		tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
		done := make(chan int, 1)
		b := httptest.NewServer(layer.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := context.WithoutCancel(r.Context())
			if detach {
				ctx = retry.WithoutSingleAttempt(ctx)
			}
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "GET", c.URL, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					done <- 0
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			w.WriteHeader(http.StatusAccepted)
		})))
		req, _ := http.NewRequest("GET", b.URL, nil)
		req.Header.Set("Attempt-Count", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		status := <-done
		b.Close()
		c.Close()
		tr.CloseIdleConnections()
		http.DefaultClient.CloseIdleConnections()
		want, requests := 503, int64(1)
		if detach {
			want, requests = 200, 2
		}
		if status != want || n.Load() != requests {
			t.Errorf("WithoutSingleAttempt %v: the background call got %d after %d requests; want %d after %d",
				detach, status, n.Load(), want, requests)
		}
	}
}
