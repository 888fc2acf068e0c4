package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

func TestRecordHeader(t *testing.T) {
	before := http.Header{"X-Request-Id": {"r1"}, "Vary": {"Origin"}}
	after := http.Header{
		"X-Request-Id":   {"r1"},               // the outer handler's, unchanged: not kept
		"Vary":           {"Origin", "Accept"}, // changed by the handler: kept
		"Content-Type":   {"application/json"},
		"Set-Cookie":     {"session=secret"}, // never kept
		"Date":           {"Mon, 01 Jan 2030 00:00:00 GMT"},
		"Content-Length": {"12"},
		"Connection":     {"close"},
		"Trailer:X-Sum":  {"1"},
	}
	want := http.Header{"Vary": {"Origin", "Accept"}, "Content-Type": {"application/json"}}
	if got := idempotency.RecordHeader(before, after); !reflect.DeepEqual(got, want) {
		t.Fatalf("RecordHeader: %v, want %v", got, want)
	}
	if got := idempotency.RecordHeader(before, before); got != nil {
		t.Fatalf("RecordHeader of an unchanged header: %v, want nil", got)
	}
}

func TestAdmit(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{
		MaxRequestBytes: 10,
		Scope:           func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	for _, tc := range []struct {
		name, method, key, body string
		client                  string // "": acme
		require                 bool
		want                    idempotency.Verdict
		status                  int // of the refusal
	}{
		{name: "GET passes", method: "GET", key: "k", want: idempotency.Pass},
		{name: "no key", method: "POST", want: idempotency.Unkeyed},
		{name: "no key, required", method: "POST", require: true, want: idempotency.Refused, status: 400},
		{name: "malformed key", method: "POST", key: "\x01", want: idempotency.Refused, status: 400},
		{name: "body too large", method: "POST", key: "k", body: "12345678901", want: idempotency.Refused, status: 413},
		{name: "scope not UTF-8", method: "POST", key: "k", client: "\xff", want: idempotency.Refused, status: 400},
		{name: "keyed", method: "POST", key: "k", body: "1234567890", want: idempotency.Keyed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/charges", strings.NewReader(tc.body))
			r.Header.Set("X-Client", "acme")
			if tc.client != "" {
				r.Header.Set("X-Client", tc.client)
			}
			if tc.key != "" {
				r.Header.Set("Idempotency-Key", tc.key)
			}
			w := httptest.NewRecorder()
			a := m.Admit(w, r, tc.require)
			if a.Verdict != tc.want || tc.status != 0 && w.Code != tc.status {
				t.Fatalf("verdict %d, status %d; want %d, %d", a.Verdict, w.Code, tc.want, tc.status)
			}
			if a.Verdict != idempotency.Keyed {
				return
			}
			b := make([]byte, 20)
			n, _ := a.Request.Body.Read(b)
			if a.ID != (idempotency.ID{Scope: "acme", Key: "k"}) || string(b[:n]) != tc.body || a.Fingerprint == (idempotency.Fingerprint{}) {
				t.Fatalf("admission %+v with body %q, want scope acme, key k, the body and a fingerprint", a, b[:n])
			}
		})
	}
}
