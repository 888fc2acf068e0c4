package httpretry_test

import (
	"bufio"
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

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// rawPipeBase hands each in-memory connection (from 1) to handle, inside
// a synctest bubble, and returns an http.Transport that dials them.
func rawPipeBase(t *testing.T, handle func(n int, c net.Conn)) *http.Transport {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); handle(n, c) }()
		}
	}()
	base := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		base.CloseIdleConnections()
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return base
}

// TestExpectContinueNeverAnswered: a server that reads a request's header
// with "Expect: 100-continue" and then neither asks for the body nor
// answers holds the attempt until Policy.AttemptTimeout; the PUT is then
// sent again, its body whole, through GetBody.
func TestExpectContinueNeverAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bodies := make(chan string, 4)
		base := rawPipeBase(t, func(n int, c net.Conn) {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if n == 1 {
				io.Copy(io.Discard, br) // silent until the client gives up
				return
			}
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
			b, _ := io.ReadAll(req.Body)
			bodies <- string(b)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		})
		base.ExpectContinueTimeout = time.Hour
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{AttemptTimeout: 5 * time.Second})}
		req, _ := http.NewRequest("PUT", "http://api.test/x", strings.NewReader("the body"))
		req.Header.Set("Expect", "100-continue")
		start := time.Now()
		resp, body, err := send(t, tr, req)
		wantAnswer(t, resp, body, err, 200, "ok")
		if got := <-bodies; got != "the body" {
			t.Errorf("second attempt's body: got %q, want %q", got, "the body")
		}
		if el := time.Since(start); el < 5*time.Second || el > 6*time.Second { // virtual time
			t.Errorf("took %v, want the attempt timeout (5 s) and a short backoff", el)
		}
	})
}

// TestTimedOutAttemptFreesTheOnlyConnection: with one connection allowed
// per host, an attempt that times out waiting for its answer gives its
// connection up, so that the retry can have one.
func TestTimedOutAttemptFreesTheOnlyConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := rawPipeBase(t, func(n int, c net.Conn) {
			br := bufio.NewReader(c)
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if n == 1 {
				io.Copy(io.Discard, br) // never answers
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		})
		base.MaxConnsPerHost = 1
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{AttemptTimeout: time.Second})}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/x", nil)
		resp, body, err := send(t, tr, req)
		wantAnswer(t, resp, body, err, 200, "ok")
	})
}

// TestHedgeWaitingForTheOnlyConnection: with one connection allowed per
// host, a hedge waits for the connection its first attempt holds; when the
// first answers, the call returns that answer at once, and the hedge,
// cancelled, is not sent: the connection the caller frees by reading the
// answer must not go to it.
func TestHedgeWaitingForTheOnlyConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var requests atomic.Int32
		base := rawPipeBase(t, func(n int, c net.Conn) {
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				requests.Add(1)
				time.Sleep(time.Second) // virtual: a slow answer
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
			}
		})
		base.MaxConnsPerHost = 1
		tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{}), Guards: httpretry.Guards{Budget: httpretry.NoBudget},
			Hedge: &hedge.Config{Delay: 100 * time.Millisecond, Budget: hedge.Off, Brownout: hedge.Off}}
		start := time.Now()
		resp, body, err := do(t, tr, "GET", "http://api.test/x", nil)
		wantAnswer(t, resp, body, err, 200, "first")
		if el := time.Since(start); el != time.Second { // virtual time
			t.Errorf("the answer took %v, want the first attempt's 1 s", el)
		}
		synctest.Wait()
		if n := requests.Load(); n != 1 {
			t.Errorf("server got %d requests, want 1: the cancelled hedge was sent after the call returned", n)
		}
	})
}
