package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A 503 and then two reset connections: the error keeps the 503, the last
// status the call received, though the last attempts got none. (The 503
// closes its connection: net/http would resend an idempotent request reset
// on a reused connection itself.)
func TestErrorLastStatusAcrossAttempts(t *testing.T) {
	srv := retrytest.NewServer(t, "503:header=Connection=close,reset,reset")
	tr := serverTransport(t, srv, &httpretry.Transport{})
	_, _, err := do(t, tr, "GET", srv.URL, nil)
	var he *httpretry.Error
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want an *httpretry.Error", err)
	}
	if n := len(srv.Attempts()); n != 3 {
		t.Fatalf("the server got %d attempts, want 3", n)
	}
	if he.LastStatus != 503 || he.Attempts != 3 || he.Reason != retry.ReasonExhausted {
		t.Errorf("got LastStatus %d, Attempts %d, Reason %v; want 503, 3, exhausted", he.LastStatus, he.Attempts, he.Reason)
	}
}

// The second attempt's GetBody fails: that attempt is not sent, so the call
// made one attempt, and says so in its fields and its message; its events
// say the same to the Transport's observer: no start or end of a second
// attempt, and a give-up after 1 attempt, with the 503 it got.
func TestErrorCountsAttemptsSent(t *testing.T) {
	for _, observed := range []bool{false, true} {
		srv := retrytest.NewServer(t, "503,200")
		var evs []string
		tr := &httpretry.Transport{}
		if observed {
			tr.Observer = event.Func(func(_ context.Context, e event.Event) {
				evs = append(evs, fmt.Sprintf("%v#%d:%d", e.Kind, e.Attempt, e.Status))
			})
		}
		tr = serverTransport(t, srv, tr)
		req, err := http.NewRequest("PUT", srv.URL, strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		broken := errors.New("the body's source is gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, broken }
		_, _, err = send(t, tr, req)
		var he *httpretry.Error
		if !errors.As(err, &he) {
			t.Fatalf("got %v, want an *httpretry.Error", err)
		}
		if n := len(srv.Attempts()); n != 1 {
			t.Fatalf("the server got %d attempts, want 1", n)
		}
		if he.Attempts != 1 || he.LastStatus != 503 || !errors.Is(err, broken) {
			t.Errorf("got Attempts %d, LastStatus %d, errors.Is(broken) %v; want 1, 503, true", he.Attempts, he.LastStatus, errors.Is(err, broken))
		}
		if msg := err.Error(); !strings.Contains(msg, "gave up after 1 attempt ") {
			t.Errorf("message %q does not say 1 attempt", msg)
		}
		if want := "attempt_start#1:0 attempt_end#1:503 retry_scheduled#1:503 gave_up#1:503"; observed && strings.Join(evs, " ") != want {
			t.Errorf("events %q, want %q", strings.Join(evs, " "), want)
		}
	}
}

// The key the attempts carried is on the error: the one the Transport
// created, or the caller's.
func TestErrorCarriesKey(t *testing.T) {
	cases := []struct {
		name, header, value string
		mode                httpretry.KeyMode
	}{
		{"auto", "", "", httpretry.KeyAuto},
		{"caller", "Idempotency-Key", "k-1", httpretry.KeyOff},
		{"caller x-", "X-Idempotency-Key", "k-2", httpretry.KeyOff},
		{"none", "", "", httpretry.KeyOff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := retrytest.NewServer(t, "reset,reset,reset")
			tr := serverTransport(t, srv, &httpretry.Transport{IdempotencyKey: c.mode})
			req, err := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			if c.header != "" {
				req.Header.Set(c.header, c.value)
			}
			_, _, err = send(t, tr, req)
			var he *httpretry.Error
			if !errors.As(err, &he) {
				t.Fatalf("got %v, want an *httpretry.Error", err)
			}
			want := c.value
			if c.mode == httpretry.KeyAuto {
				want = srv.Attempts()[0].Header.Get("Idempotency-Key")
			}
			if c.mode == httpretry.KeyAuto && len(want) != 36 {
				t.Fatalf("the server got key %q, want a created key", want)
			}
			if he.Key != want {
				t.Errorf("got Key %q, want %q", he.Key, want)
			}
		})
	}
}
