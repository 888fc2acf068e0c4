package idempotency_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

// TestLoopbackStreamCutShort: a handler streams its answer (flushing each
// part, as a server-sent event stream of a generated answer does) and the
// client goes away after the first part. A handler that returns when its
// context ends has answered with what it wrote: that is the record, and the
// retry gets it replayed, cut short, with a Content-Length that makes it
// look whole. A handler that panics with http.ErrAbortHandler instead
// releases its key, and the retry runs it again and gets the whole answer.
func TestLoopbackStreamCutShort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		abort    bool
		runs     int64
		body     string
		replayed bool
	}{
		{"returns", false, 1, "data: part1\n\n", true},
		{"aborts", true, 2, "data: part1\n\ndata: part2\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			done := make(chan struct{}, 2)
			m := newMiddleware(t, idempotency.Config{})
			served := make(chan struct{}, 2) // the middleware is done: key released or response stored
			mh := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { done <- struct{}{} }()
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: part1\n\n")
				w.(http.Flusher).Flush()
				if runs.Add(1) > 1 {
					io.WriteString(w, "data: part2\n\n")
					return
				}
				<-r.Context().Done() // the client has gone: stop generating
				if tc.abort {
					panic(http.ErrAbortHandler)
				}
			}))
			srv, send := loopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { served <- struct{}{} }()
				mh.ServeHTTP(w, r)
			}))
			ctx, cancel := context.WithCancel(context.Background())
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(request(t, srv, "POST", "/chat", "k", "{}").WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: part1\n" {
				t.Fatalf("first part %q, %v", line, err)
			}
			cancel() // the client goes away mid-stream
			resp.Body.Close()
			<-done
			<-served

			again, body := send(request(t, srv, "POST", "/chat", "k", "{}"))
			if tc.runs == 2 {
				<-done
			}
			if runs.Load() != tc.runs || string(body) != tc.body || replayed(again) != tc.replayed {
				t.Errorf("retry: %d %q replayed %v, handler runs %d; want %q replayed %v, %d runs",
					again.StatusCode, body, replayed(again), runs.Load(), tc.body, tc.replayed, tc.runs)
			}
		})
	}
}
