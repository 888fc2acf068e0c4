package httpletter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
)

// A POST that ran out of retries is kept as a letter, without its
// credentials, and sent again by a redriver with the same Idempotency-Key.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("server:", r.Method, r.URL.Path, "key", r.Header.Get("Idempotency-Key"), "auth", r.Header.Get("Authorization") != "")
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	ctx := context.Background()
	store, _ := deadletter.NewMemory(0)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(`{"amount":1000}`))
	req.Header.Set("Idempotency-Key", "order-42")
	req.Header.Set("Authorization", "Bearer short-lived")
	l, _ := httpletter.Letter("payments", req)
	fmt.Println("kept credentials:", strings.Contains(string(l.Payload), "short-lived"))
	l, _ = deadletter.Capture(ctx, store, l, errors.New("partner: 503"), time.Now())

	r, _ := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "payments",
		Handler: httpletter.Handler(srv.Client(), func(req *http.Request) error {
			req.Header.Set("Authorization", "Bearer fresh")
			return nil
		})})
	rep, _ := r.RedriveAt(ctx, time.Now())
	fmt.Println("redriven:", rep.Done)
	srv.Client().CloseIdleConnections()
	// Output:
	// kept credentials: false
	// server: POST /charges key order-42 auth true
	// redriven: 1
}

// An Encoder leaves out a partner's own credentials besides the listed
// ones: here a signature header and a query parameter.
func ExampleEncoder() {
	req, _ := http.NewRequest(http.MethodPost, "https://alice:pw@partner.example/v1/charges?order=42&sig=abc123&api_key=k1", strings.NewReader(`{"amount":1000}`))
	req.Header.Set("X-Partner-Signature", "t=1,v1=5257a869")
	req.Header.Set("X-Api-Key", "k1")
	req.Header.Set("Content-Type", "application/json")
	enc := httpletter.Encoder{DropHeaders: []string{"X-Partner-Signature"}, DropQuery: []string{"sig"}}
	p, _ := enc.Encode(req)
	r, _ := httpletter.Decode(p)
	fmt.Println(r.URL)
	fmt.Println(r.Header)
	// Output:
	// https://partner.example/v1/charges?order=42
	// map[Content-Type:[application/json]]
}
