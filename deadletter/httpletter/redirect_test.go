package httpletter_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
)

// TestRedirectCredentialsNotKept: the server answers with a redirect to a
// presigned URL (an object store's X-Amz-Signature and X-Amz-Credential in
// its query, and a password in its userinfo) whose host refuses the
// connection. The error of the call, and that of its redrive, quote that
// URL; the letter keeps neither credential, though the request captured
// never held them.
func TestRedirectCredentialsNotKept(t *testing.T) {
	const (
		sig  = "a1b2c3d4e5f6signature"
		cred = "AKIAEXAMPLECREDENTIAL"
		pass = "redirectpassword"
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	presigned := "http://uploader:" + pass + "@" + gone + "/bucket/obj?X-Amz-Credential=" + cred + "%2F20301231&X-Amz-Signature=" + sig + "&part=1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, presigned, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	store, _ := deadletter.NewMemory(0)
	ctx := context.Background()

	req := newPost(t, srv.URL+"/upload", `{"file":1}`)
	resp, err := srv.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the call through the redirect succeeded: want a refused connection")
	}
	l, kept, err := httpletter.Capture(ctx, store, "uploads", req, nil, err, time.Now())
	if err != nil || !kept {
		t.Fatalf("Capture: %v, %v", kept, err)
	}
	got, _ := store.Get(ctx, l.ID)
	check := func(when, msg string) {
		t.Helper()
		for _, secret := range []string{sig, cred, pass, "uploader"} {
			if strings.Contains(msg, secret) {
				t.Errorf("%s: the letter's error holds %q: %q", when, secret, msg)
			}
		}
		if !strings.Contains(msg, "part=1") {
			t.Errorf("%s: the letter's error %q: want the redirect's URL less its credentials", when, msg)
		}
	}
	check("captured", got.Error)

	r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "uploads", Handler: httpletter.Handler(srv.Client(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := r.RedriveAt(ctx, time.Now()); err != nil || rep.Failed != 1 {
		t.Fatalf("redrive: %+v, %v: want it failed", rep, err)
	}
	got, _ = store.Get(ctx, l.ID)
	check("redriven", got.Error)
}

// TestRedriveRedirectNotFollowed: the redrive's client does not follow
// redirects (as yaoki deadletter redrive's), and the server answers with a
// redirect. A 307 or 308 (the partner's API moved, a balancer sending the
// request to another region), a 301, 302 or 300 say the request was not
// executed where it went: the letter is parked, its error naming the
// status and where it points, not deleted as if done (the work would be
// lost). A 303 (See Other: executed, the result is elsewhere) and a 304
// (a conditional request satisfied) are done.
func TestRedriveRedirectNotFollowed(t *testing.T) {
	for _, tc := range []struct {
		code int
		done bool
	}{
		{http.StatusTemporaryRedirect, false},
		{http.StatusPermanentRedirect, false},
		{http.StatusMovedPermanently, false},
		{http.StatusFound, false},
		{http.StatusMultipleChoices, false},
		{http.StatusSeeOther, true},
		{http.StatusNotModified, true},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://eu.partner.example/v2/charges")
				w.WriteHeader(tc.code)
			}))
			defer srv.Close()
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			defer client.CloseIdleConnections()
			store, _ := deadletter.NewMemory(0)
			ctx := context.Background()
			l, err := httpletter.Letter("charges", newPost(t, srv.URL+"/v1/charges", `{"amount":1000}`))
			if err != nil {
				t.Fatal(err)
			}
			l, err = deadletter.Capture(ctx, store, l, errors.New("partner: 503"), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "charges", Handler: httpletter.Handler(client, nil)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.RedriveAt(ctx, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := store.Get(ctx, l.ID)
			if tc.done {
				if rep.Done != 1 || !errors.Is(gerr, deadletter.ErrNotFound) {
					t.Fatalf("%+v, letter %+v (%v): want it done and deleted", rep, got, gerr)
				}
				return
			}
			if rep.Parked != 1 || gerr != nil || !got.Parked || !strings.Contains(got.Error, "eu.partner.example/v2/charges") || !strings.Contains(got.Error, "not followed") {
				t.Fatalf("%+v, letter %+v (%v): want it parked, its error naming the redirect not followed", rep, got, gerr)
			}
		})
	}
}

// TestRedriveRedirectTurnedIntoGet: the redrive's client follows redirects
// (http.DefaultClient's way), and the server answers the POST with a 301
// or 302 to the API's new address, where a GET gets 200. net/http follows
// such a redirect with a GET without the body: the charge was executed
// nowhere, and the letter must not be deleted as done: it is parked, its
// error saying so. A 303 (See Other: the POST was executed, its result is
// there) is done.
func TestRedriveRedirectTurnedIntoGet(t *testing.T) {
	for _, tc := range []struct {
		code int
		done bool
	}{
		{http.StatusMovedPermanently, false},
		{http.StatusFound, false},
		{http.StatusSeeOther, true},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			var posts, gets int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/v1/charges":
					http.Redirect(w, r, "/v2/charges", tc.code)
				case r.Method == http.MethodPost:
					posts++
					w.WriteHeader(http.StatusCreated)
				default:
					gets++
					w.WriteHeader(http.StatusOK)
				}
			}))
			defer srv.Close()
			client := srv.Client()
			defer client.CloseIdleConnections()
			store, _ := deadletter.NewMemory(0)
			ctx := context.Background()
			l, err := httpletter.Letter("charges", newPost(t, srv.URL+"/v1/charges", `{"amount":1000}`))
			if err != nil {
				t.Fatal(err)
			}
			l, err = deadletter.Capture(ctx, store, l, errors.New("partner: 503"), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := deadletter.NewRedriver(deadletter.Config{Store: store, Queue: "charges", Handler: httpletter.Handler(client, nil)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.RedriveAt(ctx, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := store.Get(ctx, l.ID)
			if tc.done {
				if rep.Done != 1 || !errors.Is(gerr, deadletter.ErrNotFound) {
					t.Fatalf("%+v, letter %+v (%v): want it done and deleted", rep, got, gerr)
				}
				return
			}
			if rep.Parked != 1 || gerr != nil || !got.Parked || !strings.Contains(got.Error, "/v2/charges") || !strings.Contains(got.Error, "GET") {
				t.Fatalf("%+v after %d POSTs and %d GETs at the new address, letter %+v (%v): want it parked, its error saying the redirect became a GET", rep, posts, gets, got, gerr)
			}
		})
	}
}
