package curl_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/curl"
)

// A server busy once: yaoki http retries the GET and writes the answer, as
// curl -fsS would write it.
func ExampleNewCommand() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok after %s attempts\n", r.Header.Get("Attempt-Count"))
	}))
	defer srv.Close()

	var out bytes.Buffer
	cmd := curl.NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"-fsS", "--base", "1ms", "--throttle-base", "1ms", srv.URL})
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	// Output: ok after 2 attempts
}
