package httpretry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A link cut as the answer comes (the body ends after 5 of its 11 bytes):
// with ReadBody the attempt fails and is retried, and the caller reads the
// whole body of the second; without it, the answer is returned at its
// headers and the cut is the caller's to see.
func TestReadBodyRetriesCutAnswer(t *testing.T) {
	for _, readBody := range []int64{1 << 20, 0} {
		srv := retrytest.NewServer(t, "200:body=hello world:cut=5,200:body=hello world")
		tr := serverTransport(t, srv, &httpretry.Transport{ReadBody: readBody})
		resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL))
		if err != nil {
			t.Fatalf("ReadBody %d: %v", readBody, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if readBody > 0 {
			if string(b) != "hello world" || err != nil {
				t.Errorf("ReadBody %d: read %q, %v; want the whole body of the second attempt", readBody, b, err)
			}
			wantAttempts(t, srv, 2)
			continue
		}
		if string(b) != "hello" || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ReadBody 0: read %q, %v; want the cut answer", b, err)
		}
		wantAttempts(t, srv, 1)
	}
}

// A chunked answer (no Content-Length) whose connection closes before its
// last chunk is a cut too.
func TestReadBodyChunkedCut(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part one, ")
		if n.Add(1) == 1 {
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "part two")
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	tr := &httpretry.Transport{Base: srv.Client().Transport, Policy: fast(retry.Policy{}), ReadBody: 1 << 20}
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "part one, part two")
	if n.Load() != 2 {
		t.Errorf("%d attempts, want 2", n.Load())
	}
}

// A POST without Idempotency-Key whose answer is cut was executed: it is
// not sent again, and the error says the body was cut and how much came.
// With a key it is retried, with the same key.
func TestReadBodyCutPostSentAgainOnlyWithKey(t *testing.T) {
	srv := retrytest.NewServer(t, "201:body=created:cut=2,201:body=created")
	tr := serverTransport(t, srv, &httpretry.Transport{ReadBody: 1 << 20})
	_, _, err := do(t, tr, "POST", srv.URL, strings.NewReader("order"))
	var cut *httpretry.BodyCutError
	if !errors.As(err, &cut) || cut.Read != 2 || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "the answer's body was cut after 2 bytes") {
		t.Fatalf("got %v, want a *BodyCutError after 2 bytes", err)
	}
	wantAttempts(t, srv, 1)

	srv = retrytest.NewServer(t, "201:body=created:cut=2,201:body=created")
	tr = serverTransport(t, srv, &httpretry.Transport{ReadBody: 1 << 20})
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("order"))
	req.Header.Set("Idempotency-Key", "k-1")
	resp, body, err := send(t, tr, req)
	wantAnswer(t, resp, body, err, 201, "created")
	if keys := header(wantAttempts(t, srv, 2), "Idempotency-Key"); keys[0] != "k-1" || keys[1] != "k-1" {
		t.Errorf("keys %q, want k-1 on both attempts", keys)
	}
}

// A body longer than ReadBody is returned with what was read first, then
// the rest as it comes: a cut in the rest is not retried.
func TestReadBodyLongerThanLimit(t *testing.T) {
	srv := retrytest.NewServer(t, "200:body=0123456789:cut=7,200:body=0123456789")
	tr := serverTransport(t, srv, &httpretry.Transport{ReadBody: 5})
	resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "0123456" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read %q, %v; want the 7 bytes that came, then the cut", b, err)
	}
	wantAttempts(t, srv, 1)
}

// A body that fits is read whole within the attempt and its connection
// freed at once: a second request reuses it though the first answer's
// body is not closed yet.
func TestReadBodyFreesConnection(t *testing.T) {
	srv := retrytest.NewServer(t, "200:body=one,200:body=two")
	tr := serverTransport(t, srv, &httpretry.Transport{ReadBody: 1 << 10})
	first, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "two")
	if srv.Conns() != 1 {
		t.Errorf("%d connections, want 1: the first answer's was not freed", srv.Conns())
	}
	if b, _ := io.ReadAll(first.Body); string(b) != "one" {
		t.Errorf("first body %q, want %q", b, "one")
	}
}

// AttemptTimeout bounds the reading of the bytes ReadBody reads: a body
// that stalls after 10 of its 1000 bytes times its attempt out, and the
// retry answers.
func TestReadBodyStalledTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		base, _ := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Content-Length", "1000")
				_, _ = w.Write([]byte("0123456789"))
				http.NewResponseController(w).Flush()
				<-r.Context().Done() // the rest never comes
				return
			}
			_, _ = w.Write([]byte("ok"))
		}))
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{AttemptTimeout: 2 * time.Second}), ReadBody: 1 << 20}
		start := time.Now()
		resp, body, err := do(t, tr, "GET", "http://api.test/", nil)
		wantAnswer(t, resp, body, err, 200, "ok")
		if el := time.Since(start); el < 2*time.Second || el > 3*time.Second {
			t.Errorf("took %v, want the 2 s attempt timeout and the retry", el)
		}
		if n.Load() != 2 {
			t.Errorf("%d attempts, want 2", n.Load())
		}
	})
}

// A hedged call reads the body within each attempt too: a cut answer
// loses, and the call goes on.
func TestReadBodyHedgedCut(t *testing.T) {
	srv := retrytest.NewServer(t, "200:body=hello:cut=2,200:body=hello")
	tr := serverTransport(t, srv, &httpretry.Transport{ReadBody: 1 << 20, Hedge: &hedge.Config{Delay: time.Hour, Budget: hedge.Off}})
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "hello")
	wantAttempts(t, srv, 2)
}

// The caller's cancellation while the body is read ends the call; it is
// not retried.
func TestReadBodyCancelledNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		base, _ := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte("0123456789"))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}))
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{}), ReadBody: 1 << 20}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel) // virtual
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, %v; want the cancellation", resp, err)
		}
		if n.Load() != 1 {
			t.Errorf("%d attempts, want 1", n.Load())
		}
	})
}
