package idempotency_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackFingerprintRewrittenPath: one middleware (one store) mounted
// under two prefixes that http.StripPrefix takes off, /v1/ and /v2/, as an
// API's two versions are. The fingerprint covers the target the client
// sent: the key of a request to /v1/pay, sent again to /v2/pay with the
// same body, is refused with 422 key_reused, not answered with v1's
// response replayed (both are /pay once the prefix is stripped).
func TestLoopbackFingerprintRewrittenPath(t *testing.T) {
	m := newMiddleware(t, idempotency.Config{})
	version := func(v string) http.Handler {
		return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, v+" paid at "+r.URL.Path)
		}))
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.StripPrefix("/v1", version("v1")))
	mux.Handle("/v2/", http.StripPrefix("/v2", version("v2")))
	srv, send := loopback(t, mux)

	first, fb := send(request(t, srv, "POST", "/v1/pay?x=1", "k", `{"amount":1}`))
	if first.StatusCode != http.StatusCreated || string(fb) != "v1 paid at /pay" {
		t.Fatalf("first: %d %q", first.StatusCode, fb)
	}
	if again, ab := send(request(t, srv, "POST", "/v1/pay?x=1", "k", `{"amount":1}`)); !replayed(again) || string(ab) != string(fb) {
		t.Errorf("the same request again: %d %q replayed %v; want the replay", again.StatusCode, ab, replayed(again))
	}
	if other, ob := send(request(t, srv, "POST", "/v2/pay?x=1", "k", `{"amount":1}`)); other.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("the key sent to /v2/pay: %d %q replayed %v; want 422 key_reused (another target)", other.StatusCode, ob, replayed(other))
	}
}
