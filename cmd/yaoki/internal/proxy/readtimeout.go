package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/retry"
)

// DefaultUpstreamReadTimeout is a route's upstream read timeout when its
// config does not set one, and yaoki proxy's --upstream-read-timeout:
// nginx's proxy_read_timeout, 60 s.
const DefaultUpstreamReadTimeout = 60 * time.Second

// upstreamIdleError is a read of an answer's body that waited longer than
// the route's upstream read timeout for the upstream's next bytes. It
// matches os.ErrDeadlineExceeded (errors.Is), and is a net.Error whose
// Timeout is true, through the error it wraps.
type upstreamIdleError struct {
	method string
	url    *url.URL
	idle   time.Duration
	err    error
}

func (e *upstreamIdleError) Error() string {
	return fmt.Sprintf("proxy: %s %s: the upstream sent no byte of the answer's body for %v (the route's upstream read timeout): the answer is cut and the connection closed",
		e.method, e.url.Redacted(), e.idle)
}

func (e *upstreamIdleError) Unwrap() error { return e.err }

// readTimeout is the transport a route's retrying transport sends its
// attempts with: the proxy's pool, with the route's upstream read timeout
// (idle > 0) on the answers, nginx's proxy_read_timeout: a read of the
// answer that waits longer than idle for the upstream's next bytes fails,
// and the connection is closed. The time counted is the wait of one read,
// not the answer's whole time, nor the time the proxy spends writing to
// its client between two reads (that is --client-timeout's), so a stream
// whose bytes come at least every idle (server-sent events with
// heartbeats) is relayed however long it lasts.
//
// It bounds the wait for the answer's header too, from the end of the
// request's sending (nginx's proxy_read_timeout does the same): an
// upstream that takes the request and sends no byte of an answer for idle
// (1xx answers count as bytes) fails the attempt with an
// *upstreamHeaderTimeoutError, which the retry loop treats as it treats
// its own attempt timeouts: retried when the request may be sent again.
// The policy's AttemptTimeout and MaxElapsed bound the wait too; the
// shortest wins.
//
// On the pool's own connections the bound is the connection's read
// deadline, moved as the answer is read (countingReader): no allocation.
// An exchange of the pool's fallback http.Transport gets a timer for its
// header (exchangeWatch) and one for its body (watchIdle). Upgrades do not
// go through it.
type readTimeout struct {
	u    *upstreamTransport
	idle time.Duration
}

// upstreamHeaderTimeoutError is an attempt whose upstream sent no byte of
// the answer's header for the route's upstream read timeout, after the
// request was sent or after its last 1xx answer. It matches
// retry.ErrAttemptTimeout (the retry loop retries it where the request may
// be sent again, as its own attempt timeouts, and budgets charge it as a
// timeout) and os.ErrDeadlineExceeded, and its Timeout is true.
type upstreamHeaderTimeoutError struct {
	method string
	url    *url.URL
	idle   time.Duration
}

func (e *upstreamHeaderTimeoutError) Error() string {
	return fmt.Sprintf("proxy: %s %s: the upstream sent no byte of the answer's header for %v (the route's upstream read timeout): the attempt timed out, its connection is closed",
		e.method, e.url.Redacted(), e.idle)
}

func (e *upstreamHeaderTimeoutError) Is(target error) bool {
	return target == retry.ErrAttemptTimeout || target == os.ErrDeadlineExceeded
}

func (e *upstreamHeaderTimeoutError) Timeout() bool { return true }

func (t *readTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.u.roundTrip(req, t.idle)
}

// watchIdle replaces resp's body with one whose reads fail with an
// *upstreamIdleError, and which is closed, once a read has waited idle
// for the upstream's next bytes, and calls release when the body is
// closed. An answer without a body is left as it is, and release is called
// at once.
func watchIdle(resp *http.Response, idle time.Duration, release func()) {
	if resp.Body == nil || resp.Body == http.NoBody {
		release()
		return
	}
	b := &idleBody{rc: resp.Body, req: resp.Request, idle: idle, start: time.Now(), release: release}
	b.t = time.AfterFunc(idle, b.fire)
	resp.Body = b
}

// idleBody is an answer's body whose reads are timed: when its timer
// fires while a read has waited idle, the body is closed, which ends the
// read (http.Transport's bodies may be closed while a read waits), and
// the read fails with an *upstreamIdleError.
type idleBody struct {
	rc    io.ReadCloser
	req   *http.Request // for the error's message; nil if the transport gave none
	idle  time.Duration
	start time.Time
	// reading is 1 + the time after start at which the read in progress
	// began; 0: no read in progress.
	reading atomic.Int64
	t       *time.Timer // calls fire
	cut     atomic.Bool // fire closed rc
	closed  atomic.Bool
	release func() // called once rc is closed
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.reading.Store(int64(time.Since(b.start)) + 1)
	n, err := b.rc.Read(p)
	b.reading.Store(0)
	if err != nil && err != io.EOF && b.cut.Load() {
		e := &upstreamIdleError{idle: b.idle, err: err, url: &url.URL{}}
		if b.req != nil {
			e.method, e.url = b.req.Method, b.req.URL
		}
		err = e
	}
	return n, err
}

// fire runs on the timer's goroutine: a read that has waited idle is cut;
// otherwise the timer is set for when the read in progress (or, with none,
// the next) would have waited idle.
func (b *idleBody) fire() {
	if b.closed.Load() {
		return
	}
	next := b.idle
	if r := b.reading.Load(); r != 0 {
		waited := time.Since(b.start) - time.Duration(r-1)
		if waited >= b.idle {
			b.cut.Store(true)
			b.rc.Close()
			return
		}
		next = b.idle - waited
	}
	b.t.Reset(next)
}

func (b *idleBody) Close() error {
	b.closed.Store(true)
	b.t.Stop()
	err := b.rc.Close()
	b.release()
	return err
}
