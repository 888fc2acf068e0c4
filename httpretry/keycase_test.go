package httpretry_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestCallerKeyInAnyCase: a caller that writes its Idempotency-Key into
// the header map under a name not in canonical form (lowercase, as code
// that copies HTTP/2 or configuration headers does) has sent a key: field
// names are case-insensitive (RFC 9110 §5.1), and the server reads it. The
// transport reads it too: the POST is retried with that key, and KeyAuto
// does not add a second, created key beside it (a server with the
// idempotency middleware answered such a request 400, "sent in 2
// fields"); without KeyAuto the POST was sent once, as if it had no key.
// The *Error's Key is the caller's.
func TestCallerKeyInAnyCase(t *testing.T) {
	for _, c := range []struct {
		name string
		mode httpretry.KeyMode
	}{{"KeyOff", httpretry.KeyOff}, {"KeyAuto", httpretry.KeyAuto}} {
		for _, field := range []string{"idempotency-key", "IDEMPOTENCY-KEY", "x-idempotency-key"} {
			srv := retrytest.NewServer(t, "503,200")
			tr := serverTransport(t, srv, &httpretry.Transport{IdempotencyKey: c.mode})
			req, err := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header[field] = []string{"order-7"}
			resp, _, err := send(t, tr, req)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s, %q: got %v, %v; want 200 after a retry", c.name, field, resp, err)
				continue
			}
			as := srv.Attempts()
			if len(as) != 2 {
				t.Errorf("%s, %q: the server got %d attempts, want 2 (the POST has a key)", c.name, field, len(as))
			}
			canonical := http.CanonicalHeaderKey(field)
			for _, a := range as {
				if got := a.Header.Values(canonical); len(got) != 1 || got[0] != "order-7" || canonical != "Idempotency-Key" && a.Header.Get("Idempotency-Key") != "" {
					t.Errorf("%s, %q: attempt %d carried %s %q and Idempotency-Key %q; want the caller's key alone",
						c.name, field, a.N, canonical, got, a.Header.Values("Idempotency-Key"))
				}
			}
		}
	}
}
