package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/yaoki-go/yaoki/idempotency"
)

// A payment endpoint behind the middleware: the retry of a charge replays
// the first response instead of charging again.
func Example() {
	charged := 0
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charged++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d"}`, charged)
	})
	idem, err := idempotency.New(idempotency.Config{
		// Keys belong to the authenticated client.
		Scope: func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idem.Require(pay))

	send := func(key, body string) {
		r := httptest.NewRequest("POST", "/payments", strings.NewReader(body))
		r.Header.Set("X-Client", "acme")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d replayed=%q %s\n", w.Code, w.Header().Get("Idempotent-Replayed"), strings.TrimSpace(w.Body.String()))
	}
	send("8e03978e", `{"amount":1000}`) // executed
	send("8e03978e", `{"amount":1000}`) // a retry: replayed
	send("8e03978e", `{"amount":5}`)    // the key reused for another request
	send("", `{"amount":1000}`)         // no key on a route that requires one
	fmt.Println("charged", charged, "time")
	// Output:
	// 201 replayed="" {"charge":"ch_1"}
	// 201 replayed="true" {"charge":"ch_1"}
	// 422 replayed="" {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"idempotency: key \"8e03978e\" was already used for a different request (its method, target or body differ); use a new key for a new request","reason":"key_reused"}
	// 400 replayed="" {"type":"about:blank","title":"Bad Request","status":400,"detail":"idempotency: POST /payments requires an Idempotency-Key header: send a unique key (such as a UUID) and the same key on every retry of the request","reason":"key_missing"}
	// charged 1 time
}

func ExampleParseKey() {
	for _, v := range []string{`"8e03978e-40d5"`, `8e03978e-40d5`, `""`, "clé"} {
		key, err := idempotency.ParseKey(v)
		fmt.Printf("%q %v\n", key, err)
	}
	// Output:
	// "8e03978e-40d5" <nil>
	// "8e03978e-40d5" <nil>
	// "" idempotency: malformed Idempotency-Key "\"\"": empty; want 1 to 255 printable ASCII characters, bare (abc) or as a quoted string ("abc")
	// "" idempotency: malformed Idempotency-Key "clé": byte 0xc3 at offset 2 is not printable ASCII; want 1 to 255 printable ASCII characters, bare (abc) or as a quoted string ("abc")
}

func ExampleMiddleware_Handler() {
	idem, _ := idempotency.New(idempotency.Config{})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // the handler still reads the whole body
		fmt.Fprintf(w, "got %s", b)
	})
	h = idem.Handler(h) // a func(http.Handler) http.Handler, for middleware chains
	for range 2 {
		r := httptest.NewRequest("PATCH", "/orders/1", strings.NewReader("qty=2"))
		r.Header.Set("Idempotency-Key", "order-1-qty")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("Idempotent-Replayed"), w.Body)
	}
	// Output:
	// 200  got qty=2
	// 200 true got qty=2
}
