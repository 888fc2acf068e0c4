package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/proxy"
)

// A route to an upstream that is busy once: the proxy retries, and the
// client gets the 200. The server runs as yaoki proxy runs it: the front
// end of Listener first, net/http's server for what it hands over.
func ExampleServer() {
	var n atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok after %s attempts\n", r.Header.Get("Attempt-Count"))
	}))
	defer upstream.Close()

	cfg, err := proxy.ParseConfig("proxy.yaml", []byte(`
routes:
  - path: /
    upstream: `+upstream.URL+`
    policy:
      Retry:
        - ErrorEquals: [HTTP.503]
          IntervalSeconds: 0.001
          MaxAttempts: 2
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := proxy.NewServer(io.Discard)
	if err := s.Load(cfg); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	// The proxy's own front end serves plain GETs and HEADs on the
	// listener's connections, and hands the others to the http.Server.
	front := httptest.NewUnstartedServer(s)
	front.Listener = s.Listener(front.Listener)
	front.Start()
	defer front.Close()

	resp, err := http.Get(front.URL + "/orders/7")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output: 200 ok after 2 attempts
}
