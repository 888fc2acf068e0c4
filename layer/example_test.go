package layer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/layer"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A service between a retrying client and a failing dependency: under
// layer.Middleware its own transport makes one attempt per request, so the
// dependency sees the client's 3 attempts, not 3 × 3.
func ExampleMiddleware() {
	var hits atomic.Int64
	dependency := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer dependency.Close()

	p, _ := retrytest.NoWait(retry.Policy{}) // no waiting, for the example
	out := &httpretry.Transport{Policy: p}
	defer out.CloseIdleConnections()
	service := httptest.NewServer(layer.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), "GET", dependency.URL, nil)
		resp, err := out.Client().Do(req)
		if err != nil {
			layer.Fail(w, r, err) // 503 for a retrying caller, Do-Not-Retry when our own retries gave up
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode) // relay: our single attempt's answer
		io.Copy(w, resp.Body)
	})))
	defer service.Close()

	client := &httpretry.Transport{Policy: p} // sends Attempt-Count
	defer client.CloseIdleConnections()
	resp, err := client.Client().Get(service.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", hits.Load(), "requests to the dependency")
	// Output:
	// 503 after 3 requests to the dependency
}

// Fail turns an outgoing call's error into the answer: here the handler's
// own retries gave up, so the answer says not to retry it.
func ExampleFail() {
	p, _ := retrytest.NoWait(retry.Policy{})
	h := layer.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := retry.Do(r.Context(), p, retrytest.Script(io.ErrUnexpectedEOF, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF).Func())
		layer.Fail(w, r, err)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Do-Not-Retry"))

	// The same failure for a caller that retries: 503, retry it.
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Attempt-Count", "1")
	h.ServeHTTP(rec, req)
	fmt.Printf("%d %q\n", rec.Code, rec.Header().Get("Do-Not-Retry"))
	// Output:
	// 503 true
	// 503 ""
}
