package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/yaoki-go/yaoki/event"
)

// panicObserver panics at the end of each attempt.
type panicObserver struct{}

func (panicObserver) Observe(_ context.Context, e event.Event) {
	if e.Kind == event.AttemptEnd {
		panic("observer: a bug")
	}
}

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestFrontPanicServingOneConnection(t *testing.T) {
	// The fault: a bug panics while the front end serves a request (here
	// an Observer's, called by the retry loop). As net/http's server does
	// for a handler, the front end ends that connection alone, without an
	// answer, says so on stderr with the stack, and closes the upstream
	// connection of the exchange; the process, and every other
	// connection, go on.
	upClosed := make(chan struct{}, 4)
	url, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(t, br); !ok {
				upClosed <- struct{}{}
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	var stderr syncBuffer
	fp := newFrontProxyOf(t, &Server{Observer: panicObserver{}}, url, Route{})
	fp.s.stderr = &stderr
	conn, br := fp.dial(t)
	io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: front\r\n\r\n")
	if resp, body, _, err := readFinal(br, "GET"); err == nil {
		t.Errorf("the client got %v %q, want its connection closed without an answer", resp.Status, body)
	}
	select {
	case <-upClosed:
	case <-afterBound():
		t.Error("the upstream connection of the exchange that panicked stayed open")
	}
	if got := stderr.String(); !strings.Contains(got, "observer: a bug") || !strings.Contains(got, "goroutine") {
		t.Errorf("stderr %q, want the panic and its stack", got)
	}
}
