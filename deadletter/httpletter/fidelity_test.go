package httpletter_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/retry"
)

// seen is a request as a server received it.
type seen struct {
	Method, RequestURI, Host string
	Header                   http.Header
	Body                     string
}

// recorder is a loopback server that records every request it receives.
func recorder(t *testing.T) (*httptest.Server, func() []seen) {
	var (
		mu  sync.Mutex
		got []seen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		mu.Lock()
		got = append(got, seen{r.Method, r.RequestURI, r.Host, h, string(b)})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// TestRedriveIsTheCapturedRequest sends requests to a loopback server, keeps
// each as a letter, redrives the letter with Handler, and compares what the
// server received both times: method, request target, Host, headers and
// body are the same, but for the credentials the letter leaves out.
func TestRedriveIsTheCapturedRequest(t *testing.T) {
	srv, received := recorder(t)
	cases := []struct {
		name, method, path, body, host string
		header                         http.Header
	}{
		{name: "lowercase method, binary body with NUL", method: "post", path: "/charges", body: "\x00\xff\x00\x01bin\x00",
			header: http.Header{"Idempotency-Key": {"k-1"}, "Content-Type": {"application/octet-stream"}}},
		{name: "empty body", method: "POST", path: "/empty", header: http.Header{"Idempotency-Key": {"k-2"}}},
		{name: "encoded slash, non-ASCII path, repeated query", method: "PUT", path: "/a%2Fb/b%C3%BCcher?q=1&q=2&x=%2F",
			body: "{}", header: http.Header{"X-Trace": {"a", "b"}}},
		{name: "Host other than the URL's", method: "POST", path: "/vhost", body: "v", host: "api.partner.example",
			header: http.Header{"Idempotency-Key": {"k-3"}}},
		{name: "credentials left out", method: "DELETE", path: "/c?access_token=s3cret-token&keep=1",
			header: http.Header{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"s3cret"}, "Idempotency-Key": {"k-4"}}},
		// A header map set by hand may name a field in several cases;
		// net/http sends each name as it is, in byte order, and the
		// server reads them as one field: the redrive must carry every
		// value, in the same order. Empty values and repeated lines too.
		{name: "names differing in case, empty and repeated values", method: "POST", path: "/case", body: "c",
			header: http.Header{"x-trace": {"a", "b"}, "X-Trace": {"c"}, "X-TRACE": {"d", ""}, "X-Empty": {""},
				"accept": {"text/plain"}, "Accept": {"application/json", "application/json"}, "authorization": {"Bearer s3cret"},
				"Idempotency-Key": {"k-5"}}},
		// An empty User-Agent, or the name without a value, keeps
		// net/http from sending its own.
		{name: "User-Agent suppressed", method: "GET", path: "/ua", header: http.Header{"User-Agent": {""}}},
		{name: "User-Agent named without a value", method: "GET", path: "/ua", header: http.Header{"User-Agent": nil}},
	}
	client := srv.Client()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(received())
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = c.header.Clone()
			if c.host != "" {
				req.Host = c.host
			}
			l, err := httpletter.Letter("q", req)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			l.ID, l.Created = "l", time.Now()
			if err := httpletter.Handler(client, nil)(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			got := received()[before:]
			if len(got) != 2 {
				t.Fatalf("the server received %d requests, want 2", len(got))
			}
			want := got[0]
			want.Header = want.Header.Clone()
			for _, h := range []string{"Authorization", "X-Api-Key"} {
				want.Header.Del(h)
			}
			want.RequestURI = strings.Replace(want.RequestURI, "access_token=s3cret-token&", "", 1)
			if !reflect.DeepEqual(got[1], want) {
				t.Errorf("redriven request differs from the captured one:\n got %+v\nwant %+v", got[1], want)
			}
			if _, ua := got[1].Header["User-Agent"]; ua && strings.HasPrefix(c.name, "User-Agent") {
				t.Errorf("the redrive carried User-Agent %q; want none, as the original", got[1].Header["User-Agent"])
			}
		})
	}
}

// TestEncodeFragment: a URL's fragment is never sent, and OAuth's implicit
// flow puts an access token there: the letter leaves it out.
func TestEncodeFragment(t *testing.T) {
	req, err := http.NewRequest("GET", "https://partner.example/cb?x=1#access_token=fragsecret&state=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := httpletter.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(p), "fragsecret") || strings.Contains(string(p), "#") {
		t.Fatalf("the letter keeps the URL's fragment: %s", p)
	}
	r, err := httpletter.Decode(p)
	if err != nil || r.URL != "https://partner.example/cb?x=1" {
		t.Fatalf("Decode: %+v %v", r, err)
	}
	// Capture's message about the request loses it too.
	s, _ := deadletter.NewMemory(0)
	l, ok, err := httpletter.Capture(context.Background(), s, "q", req, nil, &urlErr{req.URL.String()}, time.Now())
	if err != nil || !ok || strings.Contains(l.Error, "fragsecret") {
		t.Fatalf("Capture: %q %v %v", l.Error, ok, err)
	}
}

type urlErr struct{ u string }

func (e *urlErr) Error() string { return `Get "` + e.u + `": connection refused` }

// TestEncodeHeaderNotUTF8: a header value may hold bytes 0x80-0xFF
// (obs-text) that are not UTF-8, which a JSON string cannot keep: Encode
// refuses the request, naming the header, instead of keeping another value.
func TestEncodeHeaderNotUTF8(t *testing.T) {
	req, err := http.NewRequest("POST", "https://partner.example/x", strings.NewReader("b"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Disposition", "attachment; filename=caf\xe9.txt")
	p, err := httpletter.Encode(req)
	if err == nil {
		t.Fatalf("Encode kept a value it cannot keep: %s", p)
	}
	if !strings.Contains(err.Error(), "Content-Disposition") || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("the refusal does not say which header and why: %v", err)
	}
}

// TestRedriveWithoutCredentials: a letter holds no credentials, so a
// Handler without prepare sends none; the server's 401 parks the letter
// with an error that says why and what to do, and a Handler whose prepare
// adds a fresh token redrives it.
func TestRedriveWithoutCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	req, err := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer old")
	l, err := httpletter.Letter("q", req)
	if err != nil {
		t.Fatal(err)
	}
	l.ID, l.Created = "l", time.Now()
	err = httpletter.Handler(srv.Client(), nil)(context.Background(), l)
	var se *httpletter.StatusError
	if !retry.IsPermanent(err) || !errors.As(err, &se) || se.Code != 401 || !strings.Contains(err.Error(), "no credentials") || !strings.Contains(err.Error(), "prepare") {
		t.Fatalf("redrive without credentials: %v: want a permanent 401 that says the letter holds no credentials and to add them with prepare", err)
	}
	prepare := func(r *http.Request) error { r.Header.Set("Authorization", "Bearer fresh"); return nil }
	if err := httpletter.Handler(srv.Client(), prepare)(context.Background(), l); err != nil {
		t.Fatalf("redrive with prepare adding a token: %v", err)
	}
}

// TestRedriveKeepsTrailers: a request sent chunked with a trailer (a
// checksum computed while the body streams, say) reaches a loopback server
// with its trailer fields; the redrive of its letter carries them too,
// every value, but for a credential, which the letter leaves out there
// as in the header.
func TestRedriveKeepsTrailers(t *testing.T) {
	type got struct {
		te      []string
		trailer http.Header
		body    string
	}
	var (
		mu   sync.Mutex
		seen []got
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // the trailer is read with the body's end
		mu.Lock()
		seen = append(seen, got{r.TransferEncoding, r.Trailer.Clone(), string(b)})
		mu.Unlock()
	}))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	for _, body := range []string{"streamed body", ""} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/objects/1", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1 // sent chunked, as a body of unknown length is
		if body == "" {
			req.Body = io.NopCloser(strings.NewReader(""))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("")), nil }
		}
		req.Trailer = http.Header{"X-Checksum": {"sha256=abc"}, "x-checksum": {"crc32=def"}, "X-Note": {"a", ""},
			"Authorization": {"Bearer s3cret"}}
		l, err := httpletter.Letter("q", req)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		l.ID, l.Created = "l", time.Now()
		if err := httpletter.Handler(client, nil)(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		s := append([]got(nil), seen...)
		mu.Unlock()
		if len(s) != 2 {
			t.Fatalf("the server received %d requests, want 2", len(s))
		}
		want := s[0]
		want.trailer.Del("Authorization")
		if len(want.trailer["X-Checksum"]) != 2 || len(want.trailer["X-Note"]) != 2 {
			t.Fatalf("the original request's trailer, as the server read it: %v; want two checksums and two notes", want.trailer)
		}
		if !reflect.DeepEqual(s[1], want) {
			t.Errorf("body %q: the redrive reached the server as\n %+v\nwant (the original, less the credential)\n %+v", body, s[1], want)
		}
	}
}
