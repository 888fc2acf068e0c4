package otel_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

var sink error

// BenchmarkCall measures one call through retry.Do: with no observer (the
// baseline), and with this package's Observer on the OpenTelemetry SDK
// (a manual reader; collection is not part of the cost). "success" is a
// call whose first attempt succeeds (one attempt event); "one_retry" fails
// once and succeeds (two attempts, one retry with its wait, no real wait).
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	o, _ := newObserver(b)
	ok := func(context.Context) error { return nil }
	fail := errors.New("503 Service Unavailable")
	for _, bc := range []struct {
		name     string
		observer event.Observer
	}{{"observer=none", nil}, {"observer=otel", o}} {
		b.Run("success/"+bc.name, func(b *testing.B) {
			r, err := retry.New(retry.Policy{Env: &retry.Env{Observer: bc.observer}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				sink = r.Do(ctx, ok)
			}
		})
		b.Run("one_retry/"+bc.name, func(b *testing.B) {
			p, _ := retrytest.NoWait(retry.Policy{Env: &retry.Env{Observer: bc.observer}})
			p.Env.Sleep = func(context.Context, time.Duration) error { return nil } // NoWait records; this does not
			r, err := retry.New(p)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				sink = r.Do(ctx, func(context.Context) error {
					if n++; n == 1 {
						return fail
					}
					return nil
				})
			}
		})
	}
}

// BenchmarkObserve is the Observer's own cost per event, from many
// goroutines at once: an HTTP attempt's end (a counter and a histogram).
func BenchmarkObserve(b *testing.B) {
	o, _ := newObserver(b)
	e := event.Event{Kind: event.AttemptEnd, Component: "httpretry", Method: "GET", Host: "api.example.com",
		Attempt: 1, Outcome: event.Success, Status: 200, Duration: 12 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			o.Observe(ctx, e)
		}
	})
}

// TestAllocations: without an observer the success path of retry allocates
// nothing (as BenchmarkDoSuccess in package retry shows), and with this
// package's Observer it still allocates nothing once the attribute sets of
// the call's events have been seen.
func TestAllocations(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	o, _ := newObserver(t)
	for _, tc := range []struct {
		name string
		p    retry.Policy
	}{{"no observer", retry.Policy{}}, {"otel observer", retry.Policy{Env: &retry.Env{Observer: o}}}} {
		r, err := retry.New(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Do(ctx, ok) // the first call caches the attribute set
		if n := testing.AllocsPerRun(200, func() { sink = r.Do(ctx, ok) }); n != 0 {
			t.Errorf("%s: a successful call allocates %v times, want 0", tc.name, n)
		}
		if n := testing.AllocsPerRun(200, func() { sink = retry.Do(ctx, tc.p, ok) }); n != 0 {
			t.Errorf("%s: retry.Do allocates %v times, want 0", tc.name, n)
		}
	}
}

// answerOK answers every request with the same 200 at once, without a
// network, so that what a request through httpretry allocates is
// httpretry's own doing.
type answerOK struct{ resp *http.Response }

func (a answerOK) RoundTrip(*http.Request) (*http.Response, error) {
	a.resp.Body = http.NoBody
	return a.resp, nil
}

// TestObservedCallAllocations: observing a request through
// httpretry.Transport costs it no allocation (the call, its observer and
// their Env are taken together from a pool), and nothing in this package
// once its attribute set has been seen. (Under the race detector the pool
// drops a quarter of what is put back: AllocsPerRun's whole average stays
// 0.)
func TestObservedCallAllocations(t *testing.T) {
	o, _ := newObserver(t)
	base := answerOK{&http.Response{StatusCode: 200, Header: http.Header{}}}
	req, _ := http.NewRequest("GET", "http://api.example.com/", nil)
	allocs := func(obs event.Observer) float64 {
		rt := &httpretry.Transport{Base: base, Observer: obs}
		_, _ = rt.RoundTrip(req) // the first request caches the attribute set
		return testing.AllocsPerRun(200, func() {
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("RoundTrip = %v, %v", resp, err)
			}
		})
	}
	plain, observed := allocs(nil), allocs(o)
	if observed != plain {
		t.Errorf("an observed request allocates %v times, an unobserved one %v: want as many", observed, plain)
	}
}

// BenchmarkHTTPGet is a GET answered 200 over loopback through
// httpretry.Transport, without an observer and with this package's
// Observer: the cost of the metrics on the path most users take.
func BenchmarkHTTPGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	o, _ := newObserver(b)
	for _, bc := range []struct {
		name     string
		observer event.Observer
	}{{"observer=none", nil}, {"observer=otel", o}} {
		b.Run(bc.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 4}
			defer base.CloseIdleConnections()
			client := (&httpretry.Transport{Base: base, Observer: bc.observer}).Client()
			req, _ := http.NewRequest("GET", srv.URL+"/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
