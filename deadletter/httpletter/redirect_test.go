package httpletter_test

import (
	"context"
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
