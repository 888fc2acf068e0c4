package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"sync"
	"time"
)

// max1xx is how many informational (1xx) answers an attempt relays before
// its final answer; the next one ends the attempt with a *tooMany1xxError.
// A server sends one or two (100 Continue, 103 Early Hints); net/http's
// Transport stops at 5 when nobody reads them, and reads any number when
// a Got1xxResponse hook does, as httputil.ReverseProxy's does, which
// let an upstream hold a client with an endless stream of them, each
// within the read timeout. 10 leaves room for a few 102 Processing besides.
// The 1xx answers' headers count towards the answer's 10 MiB
// (maxResponseHeaderBytes) besides: splitting a header into 1xx answers
// does not make it longer.
const max1xx = 10

// tooMany1xxError is an attempt whose upstream sent more than max1xx 1xx
// answers, or 1xx answers whose headers passed maxResponseHeaderBytes,
// before its final answer. It is retried as a faulty answer is, where the
// request may be sent again: another attempt may reach another server.
type tooMany1xxError struct {
	method string
	url    *url.URL
	bytes  bool // their headers passed maxResponseHeaderBytes, not their count max1xx
}

func (e *tooMany1xxError) Error() string {
	what := fmt.Sprintf("more than %d informational (1xx) answers", max1xx)
	if e.bytes {
		what = "informational (1xx) answers whose headers passed 10 MiB"
	}
	return fmt.Sprintf("proxy: %s %s: the upstream sent %s before its answer: the attempt is ended and its connection closed",
		e.method, e.url.Redacted(), what)
}

// viaFallback sends req through u's fallback http.Transport, under an
// exchangeWatch: with idle > 0, the wait for the answer's header is
// bounded by idle from the end of the request's sending (the trace's
// WroteRequest; an answer that comes while a streamed body is still being
// sent comes in time) and after each 1xx answer, and each read of the
// body by watchIdle; the 1xx answers are bounded by max1xx and
// maxResponseHeaderBytes. The exchange runs on a context of its own,
// cancelled with the error when a bound is passed (http.Transport then
// returns it), and released when the answer's body is closed. A 101 (an
// upgrade: its body is the connection, which httputil.ReverseProxy takes
// as it is) keeps the context until req's ends.
func (u *upstreamTransport) viaFallback(req *http.Request, idle time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &exchangeWatch{idle: idle, cancel: cancel, req: req}
	trace := &httptrace.ClientTrace{WroteRequest: w.wrote, Got1xxResponse: w.got1xx}
	resp, err := u.fallback.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	late := w.stop()
	if err != nil {
		cancel(nil)
		return nil, err // the cause, when a bound was passed
	}
	if late || ctx.Err() != nil {
		// A bound was passed as the header came: the body is cut with
		// the context.
		resp.Body.Close()
		err := context.Cause(ctx)
		if late {
			err = w.timeout()
		}
		cancel(nil)
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
	case idle > 0:
		watchIdle(resp, idle, w.release)
	case resp.Body == nil || resp.Body == http.NoBody:
		cancel(nil)
	default:
		resp.Body = &releaseBody{ReadCloser: resp.Body, release: w.release}
	}
	return resp, nil
}

// exchangeWatch holds the bounds of an exchange of viaFallback: the
// header's timer, started when the request has been sent and again at
// each 1xx answer, stopped when the answer's header came or the exchange
// failed; and the count of 1xx answers. Its methods are called from
// http.Transport's goroutines and the caller's: it is safe for concurrent
// use (the 1xx answers are counted by the one goroutine that reads them).
type exchangeWatch struct {
	idle   time.Duration // 0: no timer
	cancel context.CancelCauseFunc
	req    *http.Request
	n1xx   int
	bytes  int // of the 1xx answers' headers

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (w *exchangeWatch) wrote(httptrace.WroteRequestInfo) { w.restart() }

func (w *exchangeWatch) got1xx(code int, h textproto.MIMEHeader) error {
	w.n1xx++
	w.bytes += len("HTTP/1.1 100 \r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			w.bytes += len(k) + len(": \r\n") + len(v)
		}
	}
	if w.n1xx > max1xx || w.bytes > maxResponseHeaderBytes {
		// The error returned here is dropped by httptrace (its hooks
		// composed with httputil.ReverseProxy's, whose error counts):
		// the context's cause ends the exchange.
		err := &tooMany1xxError{method: w.req.Method, url: w.req.URL, bytes: w.n1xx <= max1xx}
		w.cancel(err)
		return err
	}
	w.restart()
	return nil
}

func (w *exchangeWatch) restart() {
	if w.idle <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.stopped:
	case w.t == nil:
		w.t = time.AfterFunc(w.idle, func() { w.cancel(w.timeout()) })
	default:
		w.t.Reset(w.idle)
	}
}

// stop stops the timer for good, and reports whether it had fired.
func (w *exchangeWatch) stop() (fired bool) {
	if w.idle <= 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	return w.t != nil && !w.t.Stop()
}

func (w *exchangeWatch) timeout() error {
	return &upstreamHeaderTimeoutError{method: w.req.Method, url: w.req.URL, idle: w.idle}
}

func (w *exchangeWatch) release() { w.cancel(nil) }

// releaseBody is an answer's body that releases its exchange's context
// when closed.
type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
