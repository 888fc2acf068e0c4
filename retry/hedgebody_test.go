package retry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// pipeListener is a net.Listener whose connections are in-memory pipes,
// so that a real http.Server and http.Transport talk inside a synctest
// bubble (a goroutine blocked on a loopback socket would stop its clock).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pipeServer serves h with a real http.Server over in-memory connections
// and returns an http.Transport that dials it; both are closed when the
// test ends, which must run in a synctest bubble (whose goroutines must
// all have ended with it: none is left).
func pipeServer(t *testing.T, h http.Handler) *http.Transport {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l) }()
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return tr
}

// bodies wraps a RoundTripper and counts the response bodies it hands out
// and how many of them were closed.
type bodies struct {
	rt             http.RoundTripper
	opened, closed atomic.Int32
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if resp != nil {
		b.opened.Add(1)
		resp.Body = &countedBody{ReadCloser: resp.Body, closed: &b.closed}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	once   sync.Once
	closed *atomic.Int32
}

func (c *countedBody) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.ReadCloser.Close()
}

// A hedge wins while the first attempt is still reading its body (the
// server sent its headers and 10 bytes of 1000, and stalls). The first
// attempt is cancelled mid-read; its response goes to discard, which
// drains and closes it, the server's handler sees its request end, and no
// goroutine of the client, the server or the call is left when the bubble
// ends (synctest fails the test otherwise).
func TestHedgeWinsWhileLoserReadsBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		firstGone := make(chan struct{})
		tr := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			if n.Add(1) == 1 {
				_, _ = io.WriteString(w, strings.Repeat("a", 10))
				w.(http.Flusher).Flush()
				<-r.Context().Done() // the client went away
				close(firstGone)
				return
			}
			_, _ = io.WriteString(w, strings.Repeat("b", 1000))
		}))
		rt := &bodies{rt: tr}
		client := &http.Client{Transport: rt}
		type answer struct {
			resp *http.Response
			body []byte
		}
		fn := func(ctx context.Context) (answer, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://pipe/", nil)
			if err != nil {
				return answer{}, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return answer{}, err
			}
			b, err := io.ReadAll(resp.Body)
			return answer{resp, b}, err
		}
		var discarded atomic.Int32
		discard := func(a answer) {
			if a.resp != nil {
				discarded.Add(1)
				_, _ = io.Copy(io.Discard, io.LimitReader(a.resp.Body, 64<<10))
				_ = a.resp.Body.Close()
			}
		}
		p := retry.Policy{Env: &retry.Env{Hedger: fixedHedger(t, 50*time.Millisecond, 1)}}
		a, err := retry.HedgeValue(context.Background(), p, fn, discard)
		if err != nil || string(a.body) != strings.Repeat("b", 1000) {
			t.Fatalf("HedgeValue = %d bytes %.10q, %v; want the hedge's 1000 bytes", len(a.body), a.body, err)
		}
		_ = a.resp.Body.Close()
		<-firstGone
		synctest.Wait()
		if o, c, d := rt.opened.Load(), rt.closed.Load(), discarded.Load(); o != 2 || c != 2 || d != 1 {
			t.Errorf("%d response bodies opened, %d closed, %d discarded; want 2, 2, 1", o, c, d)
		}
	})
}
