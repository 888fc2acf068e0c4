package httpretry_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// TestConnectionReuse sends 100 logical GETs over keep-alive, each answered
// 503 (with a 4 kB body) and then 200, and counts the TCP connections the
// server accepts: responses thrown away are drained and closed, so their
// connections go back to the pool instead of piling up.
func TestConnectionReuse(t *testing.T) {
	var (
		mu    sync.Mutex
		seen  = map[string]bool{}
		conns int
	)
	busy := strings.Repeat("b", 4096)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(busy))
			return
		}
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	var attempts int
	// No budget: every request fails twice, more than the default budget
	// lets a host that keeps failing retry.
	tr := &httpretry.Transport{Base: base, Guards: httpretry.Guards{Budget: httpretry.NoBudget}, Policy: fast(retry.Policy{
		OnRetry: func(retry.Wait) { attempts++ },
	})}
	client := tr.Client()
	for i := range 100 {
		resp, err := client.Get(srv.URL + "/" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: got %d %q, want 200 ok", i, resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("100 logical GETs, %d retries, %d TCP connections", attempts, conns)
	if attempts != 100 {
		t.Errorf("got %d retries, want 100", attempts)
	}
	if conns > 2 {
		t.Errorf("server accepted %d connections, want at most 2", conns)
	}
}
