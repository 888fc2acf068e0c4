package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestProxyRetryingClientsAttemptCountSentOn(t *testing.T) {
	// A client that retries itself says which attempt this is
	// (Attempt-Count); the proxy then makes one attempt, and the upstream
	// must see the client's number: it was shown "1" on every retry of
	// the client, so that its logs and its own layer counted each retry
	// as a first attempt. A client that does not retry gets the proxy's
	// numbering, 1 and 2 on a retry of its own.
	var (
		mu   sync.Mutex
		seen []string // this round's attempts: the first gets 503, the next 200
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Attempt-Count"))
		status := 503
		if len(seen) > 1 {
			status = 200
		}
		mu.Unlock()
		w.WriteHeader(status)
	}))
	defer up.Close()
	front := proxyFront(t, up.URL)
	for _, c := range []struct {
		client string // the client's Attempt-Count, "" for none
		want   string // what the upstream saw, attempt by attempt
		code   int
	}{
		{"3", "3", 503},  // one attempt, the client's third
		{"", "1,2", 200}, // the proxy retries
		{"1", "1", 503},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		req, _ := http.NewRequest("GET", front.URL+"/x", nil)
		if c.client != "" {
			req.Header.Set("Attempt-Count", c.client)
		}
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if resp.StatusCode != c.code || got != c.want {
			t.Errorf("client's Attempt-Count %q: got %d, the upstream saw Attempt-Count %q; want %d, %q", c.client, resp.StatusCode, got, c.code, c.want)
		}
	}
}
