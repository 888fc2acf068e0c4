package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/retrytest"
)

func TestServerScript(t *testing.T) {
	srv := retrytest.NewServer(t, "503,429:retry-after=1:body=slow,reset,200:header=X-A=1")
	client := srv.Client()
	var got []string
	for i := range 5 {
		req, _ := http.NewRequest("POST", srv.URL+"/p?i="+fmt.Sprint(i), strings.NewReader(fmt.Sprint("body", i)))
		req.Header.Set("Attempt-Count", fmt.Sprint(i+1))
		resp, err := client.Transport.RoundTrip(req) // no client-side retries of the reset
		if err != nil {
			got = append(got, "error")
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, fmt.Sprintf("%d %s %s %s", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-A"), b))
	}
	want := []string{"503   ", "429 1  slow", "error", "200  1 ", "200   "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	as := srv.Attempts()
	if len(as) != 5 {
		t.Fatalf("recorded %d attempts, want 5", len(as))
	}
	for i, a := range as {
		if a.N != i+1 || a.Method != "POST" || a.URL != fmt.Sprintf("/p?i=%d", i) || string(a.Body) != fmt.Sprint("body", i) ||
			a.Header.Get("Attempt-Count") != fmt.Sprint(i+1) || a.At.IsZero() {
			t.Errorf("attempt %d recorded as %+v", i+1, a)
		}
	}
	if srv.Conns() < 2 {
		t.Errorf("got %d connections, want ≥ 2 (the reset closed one)", srv.Conns())
	}
}

// TestScriptCut: "cut=N" sends N bytes of a body announced whole, then
// the Server closes the connection (net/http's read fails with
// io.ErrUnexpectedEOF) and the RoundTripper's body fails as that read.
func TestScriptCut(t *testing.T) {
	srv := retrytest.NewServer(t, "200:body=hello world:cut=5")
	rt := retrytest.NewRoundTripper(t, "200:body=hello world:cut=5")
	for name, tr := range map[string]http.RoundTripper{"Server": srv.Client().Transport, "RoundTripper": rt} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello" || !errors.Is(err, io.ErrUnexpectedEOF) || resp.ContentLength != 11 {
			t.Errorf("%s: read %q, %v (Content-Length %d); want \"hello\", unexpected EOF, 11", name, b, err, resp.ContentLength)
		}
	}
}

func TestServerRefusesRefused(t *testing.T) {
	if _, err := retrytest.StartServer("refused"); err == nil {
		t.Fatal("got no error for a refused step in a Server")
	}
}

func TestServerHangEndsOnClose(t *testing.T) {
	srv, err := retrytest.StartServer("hang")
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client()
	done := make(chan error)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		_, err := client.Do(req)
		done <- err
	}()
	for len(srv.Attempts()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	srv.Close() // returns: the hanging handler ended
}

func TestRoundTripper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "reset,eof,refused,503:delay=2s:retry-after=date+3s,200:body=ok")
		var errs []error
		var resps []*http.Response
		start := time.Now()
		for range 6 {
			req, _ := http.NewRequest("PUT", "http://api.test/x", strings.NewReader("b"))
			resp, err := rt.RoundTrip(req)
			errs = append(errs, err)
			resps = append(resps, resp)
		}
		if !errors.Is(errs[0], syscall.ECONNRESET) || !errors.Is(errs[1], io.EOF) || !errors.Is(errs[2], syscall.ECONNREFUSED) {
			t.Errorf("failures: got %v", errs[:3])
		}
		var op *net.OpError
		if !errors.As(errs[2], &op) || op.Op != "dial" {
			t.Errorf("refused: got %v, want a dial *net.OpError", errs[2])
		}
		r := resps[3]
		if r.StatusCode != 503 || r.Status != "503 Service Unavailable" || r.Header.Get("Retry-After") != start.Add(5*time.Second).UTC().Format(http.TimeFormat) {
			t.Errorf("503: got %d %q Retry-After %q", r.StatusCode, r.Status, r.Header.Get("Retry-After"))
		}
		if b, _ := io.ReadAll(resps[4].Body); string(b) != "ok" || resps[5].StatusCode != 200 {
			t.Errorf("got %q, %d; want ok, then 200 after the script", b, resps[5].StatusCode)
		}
		if rt.OpenBodies() != 3 {
			t.Errorf("open bodies %d, want 3", rt.OpenBodies())
		}
		for _, r := range resps[3:] {
			r.Body.Close()
		}
		if rt.OpenBodies() != 0 || rt.DrainedBodies() != 3 {
			t.Errorf("open %d drained %d, want 0 and 3 (empty bodies are drained)", rt.OpenBodies(), rt.DrainedBodies())
		}
		as := rt.Attempts()
		if len(as) != 6 || as[4].At.Sub(as[3].At) != 2*time.Second || string(as[0].Body) != "b" {
			t.Errorf("attempts %+v", as)
		}
	})
}

func TestRoundTripperHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "hang")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		start := time.Now()
		if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Fatalf("got %v after %v, want the deadline after 1m", err, time.Since(start))
		}
	})
}

// The date forms of a scripted Retry-After are the three HTTP-date forms
// of RFC 9110 §5.6.7, each in GMT as the grammar requires (a recipient
// stricter than net/http rejects "UTC").
func TestRetryAfterDateForms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:retry-after=date+3s,503:retry-after=rfc850+3s,503:retry-after=asctime+3s,503:retry-after=date-2s")
		at := time.Now().Add(3 * time.Second).UTC()
		want := []string{
			at.Format("Mon, 02 Jan 2006 15:04:05 GMT"),
			at.Format("Monday, 02-Jan-06 15:04:05 GMT"),
			at.Format("Mon Jan _2 15:04:05 2006"),
			time.Now().Add(-2 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"),
		}
		for i, w := range want {
			req, _ := http.NewRequest("GET", "http://api.test/", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("Retry-After")
			if got != w {
				t.Errorf("step %d: Retry-After %q, want %q", i+1, got, w)
			}
			if _, err := http.ParseTime(got); err != nil {
				t.Errorf("step %d: Retry-After %q is not an HTTP-date: %v", i+1, got, err)
			}
			if i < 2 && !strings.HasSuffix(got, " GMT") {
				t.Errorf("step %d: Retry-After %q does not end in GMT", i+1, got)
			}
		}
	})
}
