package retrytest_test

import (
	"fmt"
	"net/http"

	"github.com/yaoki-go/yaoki/retrytest"
)

func ExampleStartServer() {
	srv, err := retrytest.StartServer("503,429:retry-after=1,200:body=ok")
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client := srv.Client()
	for range 3 {
		resp, err := client.Get(srv.URL + "/orders")
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("%d Retry-After=%q\n", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, a := range srv.Attempts() {
		fmt.Println(a.N, a.Method, a.URL)
	}
	// Output:
	// 503 Retry-After=""
	// 429 Retry-After="1"
	// 200 Retry-After=""
	// 1 GET /orders
	// 2 GET /orders
	// 3 GET /orders
}

func ExampleNewRoundTripperSteps() {
	rt := retrytest.NewRoundTripperSteps(retrytest.Step{Fail: retrytest.Refused}, retrytest.Step{Status: 200, Body: "ok"})
	client := &http.Client{Transport: rt}
	_, err := client.Get("http://api.test/")
	fmt.Println(err)
	resp, _ := client.Get("http://api.test/")
	resp.Body.Close()
	fmt.Println(resp.Status, len(rt.Attempts()))
	// Output:
	// Get "http://api.test/": dial tcp: connect: connection refused
	// 200 OK 2
}
