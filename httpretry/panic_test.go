package httpretry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// closeTracker counts the response bodies its Base handed out and those
// closed.
type closeTracker struct {
	base           http.RoundTripper
	opened, closed atomic.Int32
}

type trackedBody struct {
	io.ReadCloser
	t *closeTracker
}

func (b *trackedBody) Close() error {
	b.t.closed.Add(1)
	return b.ReadCloser.Close()
}

func (t *closeTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		t.opened.Add(1)
		resp.Body = &trackedBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

// TestObserverPanicClosesResponses: the Transport's observer panics as an
// attempt's end is reported, after a 503 that is to be retried or after
// the 200 that ends the call. RoundTrip panics with its value, but the
// response it held is closed first, so that its connection goes back: each
// such panic kept a connection checked out.
func TestObserverPanicClosesResponses(t *testing.T) {
	for _, script := range []string{"503,200", "200"} {
		t.Run(script, func(t *testing.T) {
			srv := retrytest.NewServer(t, script)
			tr := &closeTracker{base: srv.Client().Transport}
			defer srv.Client().CloseIdleConnections()
			ht := &httpretry.Transport{Base: tr, Observer: event.Func(func(_ context.Context, e event.Event) {
				if e.Kind == event.AttemptEnd {
					panic("observer: attempt end")
				}
			})}
			req, err := http.NewRequest("PUT", srv.URL, strings.NewReader("payload"))
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if v := recover(); v != "observer: attempt end" {
						t.Fatalf("RoundTrip recovered %v, want the observer's panic", v)
					}
				}()
				resp, err := ht.RoundTrip(req)
				t.Fatalf("RoundTrip returned %v, %v; want a panic", resp, err)
			}()
			if o, c := tr.opened.Load(), tr.closed.Load(); o != 1 || c != 1 {
				t.Errorf("%d responses received, %d closed; want 1, 1", o, c)
			}
		})
	}
}
