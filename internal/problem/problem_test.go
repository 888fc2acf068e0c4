package problem

import (
	"net/http/httptest"
	"testing"
)

// The headers of a problem answer, with and without Retry-After; a
// Content-Encoding set before is dropped, since the body is not encoded.
func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Content-Encoding", "gzip")
	Write(w, 409, struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}{"about:blank", 409}, 2)
	h := w.Header()
	if w.Code != 409 || w.Body.String() != `{"type":"about:blank","status":409}` || h.Get("Content-Type") != ContentType ||
		h.Get("Content-Length") != "35" || h.Get("Cache-Control") != "no-store" || h.Get("Retry-After") != "2" || h.Get("Content-Encoding") != "" {
		t.Fatalf("got %d %v %s", w.Code, h, w.Body)
	}
	w = httptest.NewRecorder()
	Write(w, 502, func() {}, -1) // a func does not marshal
	if _, ok := w.Header()["Retry-After"]; ok || w.Code != 502 || w.Body.String() != `{"type":"about:blank"}` {
		t.Fatalf("without a wait, an unmarshalable body: %d %v %s", w.Code, w.Header(), w.Body)
	}
}
