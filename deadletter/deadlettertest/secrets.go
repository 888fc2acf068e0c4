package deadlettertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// Planted is the mark of every credential TestHTTPSecrets plants: no letter
// may hold it.
const Planted = "PLANTED-SECRET"

// TestHTTPSecrets sends requests that carry credentials of every kind
// httpletter leaves out (URL userinfo, the listed headers and query
// parameters, an Encoder's own, in plain and percent-encoded forms) through
// an httpretry client whose calls fail in each way a letter is captured
// after: the last response a 503 from a real server on loopback, a reset
// connection, a refused one; and an error whose message quotes the
// credentials, as some clients' errors do. Each call is captured with httpletter into s;
// then no letter of the queue, read back with List and Get, may hold a
// planted credential in any field, while what is not a credential (the
// path, the other parameters and headers) is kept. raw, if set, returns
// everything the store holds for the queue as text (a table's rows, say),
// which is searched too.
func TestHTTPSecrets(t *testing.T, s deadletter.Store, raw func(t *testing.T, queue string) string) {
	ctx := context.Background()
	queue := "secrets " + t.Name() + " " + time.Now().Format(time.RFC3339Nano)
	enc := httpletter.Encoder{DropHeaders: []string{"X-Partner-Signature"}, DropQuery: []string{"sig"}}

	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	reset := retrytest.NewServer(t, "reset*20")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	_ = l.Close() // nothing listens there now

	p, _ := retrytest.NoWait(retry.Policy{})
	client := (&httpretry.Transport{Policy: p, Base: &http.Transport{}}).Client()
	defer client.CloseIdleConnections()

	for _, base := range []string{unavailable.URL, reset.URL, refused, "quoted"} {
		quoted := base == "quoted"
		if quoted {
			base = unavailable.URL
		}
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(Planted+"-user", Planted+"-password")
		u.Path = "/v1/charges"
		u.RawQuery = "order=42&api_key=" + Planted + "-query&Access_Token=" + Planted + "%2Fencoded&sig=" + Planted + "-sig&X-Amz-Signature=" + Planted + "-amz"
		req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(`{"amount":1000}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(header.IdempotencyKey, "order-42")
		req.Header.Set("X-Request-Id", "req-7")
		for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Api-Key", "X-Api-Key",
			"X-Auth-Token", "X-Access-Token", "X-Amz-Security-Token", "X-Partner-Signature"} {
			req.Header.Set(h, "Bearer "+Planted+"-"+h)
		}
		var resp *http.Response
		if quoted {
			err = fmt.Errorf("partner: %s %s refused the credentials %q and %q", req.Method, req.URL, req.Header.Get("X-Api-Key"), req.Header.Get("Cookie"))
		} else {
			resp, err = client.Do(req)
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		if _, ok, cerr := enc.Capture(ctx, s, queue, req, resp, err, time.Now()); !ok || cerr != nil {
			t.Fatalf("%s: Capture of %v, %v: kept %v, %v; want a letter", base, resp, err, ok, cerr)
		}
	}

	letters, err := s.List(ctx, queue, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 4 {
		t.Fatalf("%d letters in the queue, want 4", len(letters))
	}
	for _, l := range letters {
		got, err := s.Get(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"Key": got.Key, "Payload": string(got.Payload), "Reason": got.Reason, "Error": got.Error} {
			if strings.Contains(v, Planted) {
				t.Errorf("letter %s holds a credential in its %s: %s", got.ID, name, v)
			}
		}
		r, err := httpletter.Decode(got.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(r.URL, "/v1/charges?order=42") || r.Header.Get("X-Request-Id") != "req-7" || got.Key != "order-42" {
			t.Errorf("letter %s kept %s %v, key %q: want the path, the order parameter, X-Request-Id and the key", got.ID, r.URL, r.Header, got.Key)
		}
	}
	if raw != nil {
		if text := raw(t, queue); strings.Contains(text, Planted) {
			t.Errorf("the store holds a credential: %s", text)
		}
	}
}
