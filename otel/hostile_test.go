package otel_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestHostileInputBoundedSeries: clients that make up what they send
// cannot grow the series. 300 requests through httpretry to the
// idempotency middleware on loopback (one Observer on both sides), each
// with a path, query, Host header, Idempotency-Key and body of its own, a
// method out of five (two of them made up, one in lower case), and
// answers whose bodies repeat the path. No attribute value carries what
// a request made up (every one has "hostile" in it), and the series stay
// a handful: what varies is the method (the made-up ones as _OTHER), the
// status, the outcome and the reason.
func TestHostileInputBoundedSeries(t *testing.T) {
	o, collect := newObserver(t)
	idem, err := idempotency.New(idempotency.Config{Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(idem.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "0") {
			http.Error(w, "no such thing as "+r.URL.Path, http.StatusNotFound)
			return
		}
		io.WriteString(w, "ok "+r.URL.Path)
	})))
	defer srv.Close()
	p, _ := retrytest.NoWait(retry.Policy{})
	client := (&httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o}).Client()
	defer client.CloseIdleConnections()
	methods := []string{"GET", "POST", "get", "HOSTILE-%d", "PUT"}
	for i := range 300 {
		method := methods[i%len(methods)]
		if strings.Contains(method, "%") {
			method = fmt.Sprintf(method, i)
		}
		req, err := http.NewRequest(method, fmt.Sprintf("%s/hostile/%d?q=hostile-%d", srv.URL, i, i), strings.NewReader(fmt.Sprintf("hostile body %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = fmt.Sprintf("hostile-%d.example", i)
		key := fmt.Sprintf("hostile-key-%d", i)
		if i%7 == 0 {
			key = "hostile key with spaces " + key // malformed: 400
		}
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, req.URL, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s := collect()
	series := 0
	for name, points := range s {
		for k := range points {
			series++
			if strings.Contains(strings.ToLower(k), "hostile") {
				t.Errorf("%s carries what a client made up: %s", name, k)
			}
		}
	}
	if series == 0 || series > 40 {
		t.Errorf("%d series after 300 requests that each made up their path, key, Host and body, want a handful (≤ 40):\n%v", series, s)
	}
}
