package idempotency_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// csrfCheck stands for a layer outside the middleware that reads a form
// field before it, as CSRF protections do (gorilla/csrf and nosurf read
// the token with r.PostFormValue when no header carries it): the form is
// parsed, and the request's body has been read by the time the middleware
// sees it.
func csrfCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.PostFormValue("csrf") != "token" {
			http.Error(w, "bad csrf token", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// formCharge answers with the amount of the form it was sent, and the
// size of its "receipt" file when there is one.
func formCharge(runs *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		receipt := ""
		if f, fh, err := r.FormFile("receipt"); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			receipt = fmt.Sprintf(" receipt %s %q", fh.Filename, b)
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charge %d: %s%s", n, r.FormValue("amount"), receipt)
	})
}

// multipartBody encodes fields (in order) and one file "receipt" named
// name holding content (none when name is empty).
func multipartBody(t *testing.T, fields [][2]string, name, content string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.SetBoundary("yaoki-test-boundary")
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	if name != "" {
		fw, err := mw.CreateFormFile("receipt", name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(fw, content)
	}
	mw.Close()
	return b.String(), mw.FormDataContentType()
}

// TestLoopbackFormParsedOutside: a form whose body a layer outside the
// middleware parsed before it (a CSRF check reading its token field) is
// still the request's content: the same key with other form values or
// another file is refused with 422 key_reused, not answered with the
// first request's response replayed; the same form again is replayed.
func TestLoopbackFormParsedOutside(t *testing.T) {
	form := func(amount string) (string, string) {
		return url.Values{"csrf": {"token"}, "amount": {amount}}.Encode(), "application/x-www-form-urlencoded"
	}
	multi := func(amount, file string) func() (string, string) {
		return func() (string, string) {
			return multipartBody(t, [][2]string{{"csrf", "token"}, {"amount", amount}}, "r.txt", file)
		}
	}
	for _, tc := range []struct {
		name                string
		first, same, other  func() (string, string)
		firstBody, sameBody string
	}{
		{"urlencoded", func() (string, string) { return form("10") }, func() (string, string) { return form("10") }, func() (string, string) { return form("20") },
			"charge 1: 10", "charge 1: 10"},
		{"multipart values", multi("10", "a"), multi("10", "a"), multi("20", "a"),
			`charge 1: 10 receipt r.txt "a"`, `charge 1: 10 receipt r.txt "a"`},
		{"multipart file", multi("10", "a"), multi("10", "a"), multi("10", "b"),
			`charge 1: 10 receipt r.txt "a"`, `charge 1: 10 receipt r.txt "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := newMiddleware(t, idempotency.Config{})
			srv, send := loopback(t, csrfCheck(m.Handler(formCharge(&runs))))
			do := func(body func() (string, string)) (*http.Response, string) {
				b, ct := body()
				r := request(t, srv, "POST", "/charges", "k", b)
				r.Header.Set("Content-Type", ct)
				resp, got := send(r)
				return resp, string(got)
			}
			if resp, got := do(tc.first); resp.StatusCode != http.StatusCreated || got != tc.firstBody {
				t.Fatalf("first: %d %q, want 201 %q", resp.StatusCode, got, tc.firstBody)
			}
			if resp, got := do(tc.same); !replayed(resp) || got != tc.sameBody {
				t.Errorf("the same form again: %d %q, replayed %v; want the replay of %q", resp.StatusCode, got, replayed(resp), tc.sameBody)
			}
			if resp, got := do(tc.other); resp.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("another form with the key: %d %q, replayed %v; want 422 key_reused (the client would take the first charge for this one)", resp.StatusCode, got, replayed(resp))
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("handler runs %d, want 1", n)
			}
		})
	}
}

// TestLoopbackScopeReadsForm: a Scope that reads the principal from a form
// field of the body (client=...) gets the body, and so does the handler:
// both see the form as sent. Another principal's form with the same key
// runs as its own request.
func TestLoopbackScopeReadsForm(t *testing.T) {
	var runs atomic.Int64
	m := newMiddleware(t, idempotency.Config{Scope: func(r *http.Request) string { return r.PostFormValue("client") }})
	srv, send := loopback(t, m.Handler(formCharge(&runs)))
	do := func(client string) (*http.Response, string) {
		r := request(t, srv, "POST", "/charges", "k", url.Values{"client": {client}, "amount": {"10"}}.Encode())
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, got := send(r)
		return resp, string(got)
	}
	if resp, got := do("alice"); resp.StatusCode != http.StatusCreated || got != "charge 1: 10" {
		t.Fatalf("alice: %d %q, want 201 %q (the handler sees the form the Scope read)", resp.StatusCode, got, "charge 1: 10")
	}
	if resp, got := do("alice"); !replayed(resp) || got != "charge 1: 10" {
		t.Errorf("alice again: %d %q, replayed %v; want the replay", resp.StatusCode, got, replayed(resp))
	}
	if resp, got := do("bob"); resp.StatusCode != http.StatusCreated || replayed(resp) || got != "charge 2: 10" {
		t.Errorf("bob with alice's key: %d %q, replayed %v; want his own 201 %q", resp.StatusCode, got, replayed(resp), "charge 2: 10")
	}
}
