package httpletter_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
)

// TestRedriveErrorHoldsNoPreparedCredentials: a redrive's prepare adds
// fresh credentials in the URL (userinfo, as an API key for a user name,
// an api_key query parameter and a signature parameter of the caller's
// own), and the redrive fails: a 503 from a loopback server, a refused
// connection (a closed listener), a 404 that parks the letter. The error
// that the redriver stores in the letter holds none of them: the store,
// which never holds a credential, would otherwise keep them after every
// failed redrive.
func TestRedriveErrorHoldsNoPreparedCredentials(t *testing.T) {
	const (
		user = "sk_live_prepareduser"
		key  = "preparedapikey123"
		sig  = "preparedsignature456"
	)
	prepare := func(req *http.Request) error {
		req.URL.User = url.User(user)
		q := req.URL.Query()
		q.Set("api_key", key)
		q.Set("sig", sig)
		req.URL.RawQuery = q.Encode()
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	for name, target := range map[string]string{"503": unavailable.URL, "refused": refused, "404": missing.URL} {
		t.Run(name, func(t *testing.T) {
			store, _ := deadletter.NewMemory(0)
			l, err := httpletter.Letter("q", newPost(t, target+"/charges?order=7", `{"amount":1}`))
			if err != nil {
				t.Fatal(err)
			}
			l.ID, l.Created, l.Due = "l1", time.Now(), time.Now()
			if err := store.Put(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "q",
				Handler: httpletter.Handler(&http.Client{}, prepare)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.RedriveAt(context.Background(), time.Now())
			if err != nil || rep.Failed+rep.Parked != 1 {
				t.Fatalf("pass: %+v, %v: want the redrive failed", rep, err)
			}
			got, err := store.Get(context.Background(), "l1")
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{user, key, sig} {
				if strings.Contains(got.Error, secret) || strings.Contains(got.Reason, secret) {
					t.Errorf("the letter's error holds the credential %q that prepare added: %q", secret, got.Error)
				}
			}
			if got.Parked != (name == "404") {
				t.Errorf("parked %v after a %s: want parked only on the 404 (the retry marks seen through)", got.Parked, name)
			}
			t.Logf("stored error: %s", got.Error)
			if !strings.Contains(got.Error, "/charges?order=7") {
				t.Errorf("the letter's error %q: want the request's URL, less the credentials", got.Error)
			}
		})
	}
}

// TestRedriveParksKeyWithControlByte: a letter whose Key holds a byte that
// a header value cannot (CR LF, as a key built from other text might)
// cannot be sent: net/http refuses the Idempotency-Key before any byte
// leaves. Handler parks it at once, counting no attempt, instead of
// failing it as a transport error MaxRedrives times, each counted as an
// attempt that never reached the server.
func TestRedriveParksKeyWithControlByte(t *testing.T) {
	var received int
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { received++ }))
	defer srv.Close()
	store, _ := deadletter.NewMemory(0)
	l, err := httpletter.Letter("q", newPost(t, srv.URL+"/charges", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	l.ID, l.Key, l.Attempts, l.Created, l.Due = "l1", "order-7\r\nX-Injected: 1", 3, time.Now(), time.Now()
	if err := store.Put(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "q", Handler: httpletter.Handler(srv.Client(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RedriveAt(context.Background(), time.Now())
	if err != nil || rep.Parked != 1 {
		t.Fatalf("pass: %+v, %v: want the letter parked", rep, err)
	}
	got, err := store.Get(context.Background(), "l1")
	if err != nil || !got.Parked || got.Attempts != 3 || received != 0 || !strings.Contains(got.Error, "Key") {
		t.Fatalf("letter %+v, %v, server received %d: want parked, 3 attempts (none counted), nothing sent, an error naming the Key", got, err, received)
	}
	t.Logf("stored error: %s", got.Error)
}
