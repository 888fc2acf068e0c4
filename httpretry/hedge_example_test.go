package httpretry_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
)

// A server whose first answer hangs: the transport sends a copy of the GET
// after 20 ms and hands over the copy's answer; the first request is
// cancelled.
func ExampleTransport_hedge() {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hangs until the client gives up on it
			return
		}
		fmt.Fprintf(w, "answered attempt %s", r.Header.Get("Attempt-Count"))
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := (&httpretry.Transport{Base: base, Hedge: &hedge.Config{Delay: 20 * time.Millisecond}}).Client()

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 answered attempt 2
}
