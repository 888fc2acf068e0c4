package idemproc_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// A store's fault test runs its children with Start, from a test binary
// whose TestMain calls Main first (see the package comment); Start needs
// the *testing.T of a test, which an example has not. What runs here is
// the test's side of a child: Post sends a keyed request and returns what
// the client got, the middleware's replay header included. The child is
// stood in for by the same routes served in this process.
func Example() {
	charges := 0
	m, _ := idempotency.New(idempotency.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /charges", m.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, charges)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	child := &idemproc.Child{URL: srv.URL}
	for range 2 {
		status, body, replayed, err := child.Post(context.Background(), client, "/charges", "order-42", `{"amount":1000}`)
		fmt.Printf("%d %s replayed=%q %v\n", status, body, replayed, err)
	}
	// Output:
	// 201 {"charge":"ch_1"} replayed="" <nil>
	// 201 {"charge":"ch_1"} replayed="true" <nil>
}
