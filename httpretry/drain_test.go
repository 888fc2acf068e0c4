package httpretry_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// pipeListener is a net.Listener whose connections are in-memory pipes,
// so that a real http.Server and http.Transport talk inside a synctest
// bubble (a goroutine blocked on a loopback socket would stop its clock).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	n     atomic.Int64 // connections dialled
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
		l.n.Add(1)
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pipeServer serves h over in-memory connections and returns an
// http.Transport that dials it, and the listener (which counts the
// connections). Both are closed when the test ends; it must run in a
// synctest bubble, whose goroutines must all end with it.
func pipeServer(t *testing.T, h http.Handler) (*http.Transport, *pipeListener) {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l) }()
	base := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		base.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return base, l
}

// A retryable answer whose body stalls after its headers (a 503 that
// announces 1000 bytes, sends 10 and hangs) is thrown away within a bounded
// time: the retry goes on, on a new connection, instead of waiting for
// the rest of a body nobody reads until the caller's deadline.
func TestStalledBodyOfThrownAwayAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		base, l := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("0123456789"))
				http.NewResponseController(w).Flush()
				<-r.Context().Done() // the rest never comes
				return
			}
			_, _ = w.Write([]byte("ok"))
		}))
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		start := time.Now()
		resp, body, err := send(t, tr, req)
		el := time.Since(start)
		wantAnswer(t, resp, body, err, 200, "ok")
		if el > time.Second {
			t.Errorf("took %v, want at most 1 s: the stalled body held the retry", el)
		}
		if n.Load() != 2 || l.n.Load() != 2 {
			t.Errorf("server saw %d requests on %d connections, want 2 on 2 (the stalled one closed)", n.Load(), l.n.Load())
		}
	})
}
