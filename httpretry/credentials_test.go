package httpretry_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// What the transport reports about a request (the *Error a call ends
// with, a retried status's error, which the observer and OnRetry see and
// the log observer writes at Warn) holds no credential of its URL: its
// password, nor the value of a credential query parameter (an API key, a
// presigned URL's signature).
func TestReportsHideURLCredentials(t *testing.T) {
	const secrets = "s3cr3tkey|p4ssw0rd|sig0123456"
	leaks := func(s string) bool {
		for sec := range strings.SplitSeq(secrets, "|") {
			if strings.Contains(s, sec) {
				return true
			}
		}
		return false
	}
	var seen []string
	rt := retrytest.NewRoundTripper(t, "503,refused*3")
	tr := &httpretry.Transport{Base: rt, Policy: fast(retry.Policy{OnRetry: func(w retry.Wait) { seen = append(seen, w.Err.Error()) }})}
	req, _ := http.NewRequest("GET", "http://bob:p4ssw0rd@api.test/x?page=2&api_key=s3cr3tkey&X-Amz-Signature=sig0123456", nil)
	resp, err := tr.RoundTrip(req)
	var he *httpretry.Error
	if resp != nil || !errors.As(err, &he) {
		t.Fatalf("got %v, %v; want an *httpretry.Error", resp, err)
	}
	seen = append(seen, err.Error(), he.URL)
	for _, s := range seen {
		if leaks(s) {
			t.Errorf("reported %q, which holds a credential", s)
		}
	}
	if want := "http://bob:xxxxx@api.test/x?page=2&api_key=xxxxx&X-Amz-Signature=xxxxx"; he.URL != want {
		t.Errorf("Error.URL %q, want %q", he.URL, want)
	}
	if len(seen) < 3 || !strings.Contains(seen[0], "503") {
		t.Errorf("reports %q, want the 503's among them", seen)
	}
}

// The events of one destination name it one way (its host in lower case),
// however the URL spells it: one series in the metrics, as one set of
// guards in the transport.
func TestEventHostLowerCase(t *testing.T) {
	rec := &retrytest.Recorder{}
	rt := retrytest.NewRoundTripper(t, "200")
	tr := &httpretry.Transport{Base: rt, Observer: rec}
	req, _ := http.NewRequest("GET", "http://API.Example.TEST:8080/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	evs := rec.Events()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for _, e := range evs {
		if e.Host != "api.example.test:8080" {
			t.Errorf("event %v has Host %q, want api.example.test:8080", e.Kind, e.Host)
		}
	}
}
