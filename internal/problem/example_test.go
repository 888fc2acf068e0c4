package problem_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/yaoki-go/yaoki/internal/problem"
)

func ExampleWrite() {
	w := httptest.NewRecorder()
	problem.Write(w, http.StatusServiceUnavailable, map[string]any{
		"type": "about:blank", "title": http.StatusText(503), "status": 503, "detail": "the store is down",
	}, 5)
	fmt.Println(w.Code, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"))
	fmt.Println(w.Body)
	// Output:
	// 503 application/problem+json 5
	// {"detail":"the store is down","status":503,"title":"Service Unavailable","type":"about:blank"}
}
