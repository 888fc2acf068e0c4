package idempotency_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackFingerprintHost: one middleware (one store) in front of
// several hosts (a mux with host patterns, tenants by subdomain). The
// host is not part of the default fingerprint, so the same key, path and
// body sent to two hosts is one request, and the second host's client got
// the first host's answer; FingerprintHeaders naming Host was meant to
// tell them apart, but net/http moves the Host field out of r.Header into
// r.Host, so it took no part and the replay went on. Now Host in
// FingerprintHeaders stands for r.Host: the second host's request gets
// 422, each host's retry its own replay.
func TestLoopbackFingerprintHost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
		want    int // the status of the second host's request
	}{
		{"default: host not fingerprinted", nil, http.StatusCreated},
		{"Host in FingerprintHeaders", []string{"host"}, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &charges{}
			m := newMiddleware(t, idempotency.Config{FingerprintHeaders: tc.headers})
			srv, send := loopback(t, m.Handler(h))
			to := func(host string) *http.Request {
				r := request(t, srv, "POST", "/pay", "k", `{"amount":1}`)
				r.Host = host
				return r
			}
			if resp, _ := send(to("a.example")); resp.StatusCode != http.StatusCreated {
				t.Fatalf("a.example: %d, want 201", resp.StatusCode)
			}
			resp, _ := send(to("b.example"))
			if resp.StatusCode != tc.want {
				t.Errorf("b.example with a.example's key: %d (replayed %v), want %d", resp.StatusCode, replayed(resp), tc.want)
			}
			if resp, _ := send(to("a.example")); !replayed(resp) {
				t.Errorf("a.example's retry: %d, want its replay", resp.StatusCode)
			}
		})
	}
}

// TestLoopbackKeyCaseAndSpace: keys are compared as sent: two keys that
// differ in case are two requests (each runs); whitespace around the
// field's value is no part of the key, and the quoted form is the bare
// one (both replay).
func TestLoopbackKeyCaseAndSpace(t *testing.T) {
	h := &charges{}
	m := newMiddleware(t, idempotency.Config{})
	srv, send := loopback(t, m.Handler(h))
	for _, tc := range []struct {
		key    string
		replay bool
	}{
		{"Key-1", false},
		{"key-1", false},
		{"KEY-1", false},
		{" key-1 ", true},
		{"\tKey-1", true},
		{`"KEY-1"`, true},
		{`" key-1"`, false}, // the space is inside the quotes: another key
	} {
		r := request(t, srv, "POST", "/k", "", "{}")
		r.Header["Idempotency-Key"] = []string{tc.key}
		resp, _ := send(r)
		if resp.StatusCode != http.StatusCreated || replayed(resp) != tc.replay {
			t.Errorf("key %q: %d, replayed %v; want 201, replayed %v", tc.key, resp.StatusCode, replayed(resp), tc.replay)
		}
	}
	if h.runs.Load() != 4 {
		t.Errorf("runs %d, want 4", h.runs.Load())
	}
}

// TestFingerprintHeadersFraming: net/http takes Transfer-Encoding and
// Trailer out of a request's header (into r.TransferEncoding and
// r.Trailer): named in FingerprintHeaders they took no part, silently,
// and New accepted them; Content-Length named there made a retry sent
// chunked (no Content-Length) another request, 422. The fingerprint
// covers the body's bytes, not how they were framed; New now refuses the
// three and says so.
func TestFingerprintHeadersFraming(t *testing.T) {
	for _, name := range []string{"Transfer-Encoding", "trailer", "content-length"} {
		_, err := idempotency.New(idempotency.Config{FingerprintHeaders: []string{"Content-Type", name}})
		if !errors.Is(err, idempotency.ErrInvalidConfig) || !strings.Contains(err.Error(), "FingerprintHeaders[1]") || !strings.Contains(err.Error(), "framing") {
			t.Errorf("FingerprintHeaders naming %s: %v; want an error naming FingerprintHeaders[1] and saying the body's framing takes no part", name, err)
		}
	}
}
