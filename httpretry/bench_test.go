package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// benchServer answers "ok"; with busyFirst, it answers 503 to the first
// attempt of each logical request (Attempt-Count "1") and 200 to the next.
func benchServer(b *testing.B, busyFirst bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busyFirst && r.Header.Get("Attempt-Count") == "1" {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
			return
		}
		io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	return srv
}

func newBase(b *testing.B) *http.Transport {
	t := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(t.CloseIdleConnections)
	return t
}

func benchGet(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("got %d, want 200", resp.StatusCode)
	}
}

// BenchmarkTransportGet measures a loopback GET answered 200 through a
// plain http.Client and through the same client with a Transport in front
// of an identical http.Transport. "ratio" sends both alternately in the
// same loop, so that both see the same machine load, and reports
// yaoki/plain, the time of a GET through the Transport over the time of a
// plain one. "httpretry-readbody" reads each answer's body within its
// attempt (ReadBody).
func BenchmarkTransportGet(b *testing.B) {
	srv := benchServer(b, false)
	plain := &http.Client{Transport: newBase(b)}
	yaoki := &http.Client{Transport: &httpretry.Transport{Base: newBase(b)}}
	noHeader := &http.Client{Transport: &httpretry.Transport{Base: newBase(b), AttemptHeader: httpretry.NoHeader}}
	observed := &http.Client{Transport: &httpretry.Transport{Base: newBase(b), Observer: nopObserver{}}}
	readBody := &http.Client{Transport: &httpretry.Transport{Base: newBase(b), ReadBody: 1 << 20}}
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"plain", plain}, {"httpretry", yaoki}, {"httpretry-no-attempt-header", noHeader}, {"httpretry-observer", observed}, {"httpretry-readbody", readBody}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, c.client, srv.URL)
			}
		})
	}
	b.Run("ratio", func(b *testing.B) { ratio(b, srv.URL, plain, yaoki) })
	b.Run("ratio-no-attempt-header", func(b *testing.B) { ratio(b, srv.URL, plain, noHeader) })
}

// ratio sends GETs through plain and yaoki alternately, in alternating
// order, and reports the time of one through yaoki over one through plain.
func ratio(b *testing.B, url string, plain, yaoki *http.Client) {
	var tp, ty time.Duration
	i := 0
	for b.Loop() {
		first, second := plain, yaoki
		if i%2 == 1 {
			first, second = yaoki, plain
		}
		t0 := time.Now()
		benchGet(b, first, url)
		t1 := time.Now()
		benchGet(b, second, url)
		t2 := time.Now()
		if i%2 == 0 {
			tp, ty = tp+t1.Sub(t0), ty+t2.Sub(t1)
		} else {
			ty, tp = ty+t1.Sub(t0), tp+t2.Sub(t1)
		}
		i++
	}
	b.ReportMetric(float64(ty)/float64(tp), "yaoki/plain")
	b.ReportMetric(float64(tp.Nanoseconds())/float64(i), "plain-ns/GET")
	b.ReportMetric(float64(ty.Nanoseconds())/float64(i), "yaoki-ns/GET")
}

// BenchmarkTransportRetry503 measures a logical GET whose first attempt is
// answered 503 and its second 200, with the wait removed (Env.Sleep), so
// that what is measured is the cost of a retry: two round trips, the
// classification, the drain of the 503 and the loop.
func BenchmarkTransportRetry503(b *testing.B) {
	srv := benchServer(b, true)
	noWait := func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	// Without a retry budget: every request retries once, which the
	// default per-host budget (budget.Recommended: two retries before any success) would refuse.
	client := &http.Client{Transport: &httpretry.Transport{Base: newBase(b), Policy: retry.Policy{Env: &retry.Env{Sleep: noWait}},
		Guards: httpretry.Guards{Budget: httpretry.NoBudget}}}
	b.ReportAllocs()
	for b.Loop() {
		benchGet(b, client, srv.URL)
	}
}

type nopObserver struct{}

func (nopObserver) Observe(context.Context, event.Event) {}

// okRoundTripper answers every request 200 from memory, with one shared
// empty body: it isolates the Transport's own cost from the network's.
type okRoundTripper struct{}

func (okRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: http.NoBody, Request: req}, nil
}

// BenchmarkTransportOverhead measures what the Transport itself costs on
// a first attempt that succeeds, over an in-memory RoundTripper: "base" is
// that RoundTripper called directly.
//
// "numbered" sends a request that already carries "Attempt-Count: 1", as
// yaoki proxy's outgoing requests do: its first attempt needs no copy.
func BenchmarkTransportOverhead(b *testing.B) {
	req, _ := http.NewRequest("GET", "http://api.test/x", nil)
	req.Header.Set("Accept", "application/json")
	numbered := req.Clone(req.Context())
	numbered.Header.Set("Attempt-Count", "1")
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
		req  *http.Request
	}{
		{"base", okRoundTripper{}, req},
		{"httpretry", &httpretry.Transport{Base: okRoundTripper{}}, req},
		{"httpretry-no-attempt-header", &httpretry.Transport{Base: okRoundTripper{}, AttemptHeader: httpretry.NoHeader}, req},
		{"httpretry-no-budget", &httpretry.Transport{Base: okRoundTripper{}, Guards: httpretry.Guards{Budget: httpretry.NoBudget}}, req},
		{"httpretry-no-budget-no-attempt-header", &httpretry.Transport{Base: okRoundTripper{}, AttemptHeader: httpretry.NoHeader,
			Guards: httpretry.Guards{Budget: httpretry.NoBudget}}, req},
		{"httpretry-observer", &httpretry.Transport{Base: okRoundTripper{}, Observer: nopObserver{}}, req},
		{"httpretry-numbered", &httpretry.Transport{Base: okRoundTripper{}}, numbered},
		{"httpretry-hedged", &httpretry.Transport{Base: okRoundTripper{}, Hedge: &hedge.Config{}}, req},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.rt.RoundTrip(c.req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(resp, err)
				}
			}
		})
	}
}
