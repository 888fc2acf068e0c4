package idempotency_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackDeclaredLengthNotWritten: a handler that declares a
// Content-Length and writes fewer bytes (its database row was cut short,
// it returned early on an error after the header) or more. Its client
// gets a broken answer: net/http closes the connection of a short body and
// drops what goes past the length. The replay made the record whole
// instead: the retry got the short body with a Content-Length to match, a
// truncated document taken for a complete one. Now the retry gets a 410
// response_cut problem, and the handler does not run again.
func TestLoopbackDeclaredLengthNotWritten(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared string
		body     string
		cut      bool
	}{
		{"short", "100", `{"id": 7, "items": [`, true},
		{"long", "4", "12345678", true},
		{"exact", "8", "12345678", false},
		{"none", "", "12345678", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := newMiddleware(t, idempotency.Config{})
			srv, _ := loopback(t, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				if tc.declared != "" {
					w.Header().Set("Content-Length", tc.declared)
				}
				w.WriteHeader(201)
				io.WriteString(w, tc.body)
			})))
			client := srv.Client()
			first, err := client.Do(request(t, srv, "POST", "/orders", "k1", "{}"))
			if err == nil {
				_, err = io.ReadAll(first.Body)
				first.Body.Close()
			}
			if broken := err != nil; broken != tc.cut {
				t.Fatalf("first answer: read error %v, want one: %v", err, tc.cut)
			}
			again, err := client.Do(request(t, srv, "POST", "/orders", "k1", "{}"))
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			body, err := io.ReadAll(again.Body)
			again.Body.Close()
			if err != nil {
				t.Fatalf("retry: read the body: %v", err)
			}
			if runs.Load() != 1 {
				t.Errorf("the handler ran %d times, want once", runs.Load())
			}
			if !tc.cut {
				if again.StatusCode != 201 || string(body) != tc.body || !replayed(again) {
					t.Errorf("retry got %d %q, want the replayed 201 %q", again.StatusCode, body, tc.body)
				}
				return
			}
			var p idempotency.Problem
			if err := json.Unmarshal(body, &p); err != nil || again.StatusCode != http.StatusGone || p.Reason != idempotency.ReasonResponseCut || p.OriginalStatus != 201 {
				t.Fatalf("retry got %d %s, want a 410 response_cut problem with original_status 201", again.StatusCode, body)
			}
			if !strings.Contains(p.Detail, `"k1"`) || !strings.Contains(p.Detail, "Content-Length") {
				t.Errorf("the problem's detail %q names neither the key nor the Content-Length", p.Detail)
			}
		})
	}
}

// TestResponseCutEncoded: the stores that keep a response as bytes
// (Redis, PostgreSQL) keep its Cut flag.
func TestResponseCutEncoded(t *testing.T) {
	in := idempotency.Response{Status: 201, Size: 20, Cut: true}
	b, _ := in.MarshalBinary()
	var out idempotency.Response
	if err := out.UnmarshalBinary(b); err != nil || !out.Cut || out.Omitted || out.Size != 20 || out.Status != 201 {
		t.Fatalf("decoded %+v, %v; want %+v", out, err, in)
	}
}
