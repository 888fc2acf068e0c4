package faultproxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// A test puts the proxy between its client and a real server, then
// injects faults: a reply lost after the server handled the request, then
// a cut link, then the link back.
func Example() {
	var handled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "charge %d", handled.Add(1))
	}))
	defer srv.Close()
	// (A test calls faultproxy.New(t, addr), closed when the test ends.)
	p, err := faultproxy.Start(srv.Listener.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// A new connection for each request: the transport sends none again.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(what string) {
		resp, err := client.Post("http://"+p.Addr+"/charges", "application/json", nil)
		if err != nil {
			fmt.Printf("%s: no answer (the server handled %d)\n", what, handled.Load())
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s: %d %s\n", what, resp.StatusCode, b)
	}
	post("passing")
	p.DropNextReply()
	post("reply lost")
	post("after it")
	p.Down()
	post("down")
	p.Up()
	post("up")
	// Output:
	// passing: 200 charge 1
	// reply lost: no answer (the server handled 2)
	// after it: 200 charge 3
	// down: no answer (the server handled 3)
	// up: 200 charge 4
}
