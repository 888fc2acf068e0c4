package httpretry_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// Per-host guards: each destination host gets its own budget (on by
// default) and, here, its own circuit breaker, which trips on the host that
// keeps failing and stops the calls to it.
func ExampleGuards() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()

	p, _ := retrytest.NoWait(retry.Policy{}) // no waiting, for the example
	tr := &httpretry.Transport{Policy: p, Guards: httpretry.Guards{
		Breaker: func(host string) retry.Breaker {
			b, _ := breaker.New(breaker.Config{Name: host, ConsecutiveFailures: 3, OpenTimeout: time.Minute})
			return b
		},
	}}
	defer tr.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		resp, err := tr.Client().Get(down.URL)
		var he *httpretry.Error
		if errors.As(err, &he) {
			fmt.Println("refused:", he.Reason)
			continue
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	u, _ := url.Parse(down.URL)
	_, br, _ := tr.GuardsFor(u.Host)
	fmt.Println(br.(*breaker.Breaker).State())
	// Output:
	// 503
	// refused: breaker open
	// refused: breaker open
	// open
}
