package httpretry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// TestTrailerSentOnEveryAttempt: a request sent chunked with a trailer (a
// checksum that the body's reader sets at its end, as net/http documents)
// reaches a loopback server with it on every attempt, whether its body has
// a GetBody or is buffered by the transport to be sent again, and whether
// it is empty or not.
func TestTrailerSentOnEveryAttempt(t *testing.T) {
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
		b, _ := io.ReadAll(r.Body) // the trailer comes with the body's end
		mu.Lock()
		seen = append(seen, got{r.TransferEncoding, r.Trailer.Clone(), string(b)})
		n := len(seen)
		mu.Unlock()
		if n%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{MaxAttempts: 2})}
	for _, c := range []struct {
		name    string
		body    string
		getBody bool
	}{
		{"GetBody", "payload", true},
		{"buffered", "payload", false},
		{"buffered, empty", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/objects/1", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "k")
			req.ContentLength = -1 // a body of unknown length: sent chunked
			req.Trailer = http.Header{"X-Checksum": nil}
			open := func() io.ReadCloser {
				return io.NopCloser(&atEnd{r: strings.NewReader(c.body), end: func() { req.Trailer.Set("X-Checksum", "sum-"+c.body) }})
			}
			req.Body = open()
			if c.getBody {
				req.GetBody = func() (io.ReadCloser, error) { return open(), nil }
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			s := append([]got(nil), seen...)
			mu.Unlock()
			want := got{[]string{"chunked"}, http.Header{"X-Checksum": {"sum-" + c.body}}, c.body}
			if resp.StatusCode != 200 || len(s) != 2 {
				t.Fatalf("got %d after %d attempts; want 200 after 2", resp.StatusCode, len(s))
			}
			for i, g := range s {
				if !reflect.DeepEqual(g, want) {
					t.Errorf("attempt %d reached the server as %+v; want %+v", i+1, g, want)
				}
			}
		})
	}
}

// atEnd is a reader that calls end when it reaches EOF.
type atEnd struct {
	r   io.Reader
	end func()
}

func (a *atEnd) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err == io.EOF && a.end != nil {
		a.end()
		a.end = nil
	}
	return n, err
}
