package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
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
// (idle > 0) on the answers' bodies, nginx's proxy_read_timeout: a read of
// the body that waits longer than idle for the upstream's next bytes fails,
// and the connection is closed. The time counted is the wait of one read,
// not the answer's whole time, nor the time the proxy spends writing to
// its client between two reads (that is --client-timeout's), so a stream
// whose bytes come at least every idle (server-sent events with
// heartbeats) is relayed however long it lasts. The wait for the answer's
// header is not bounded by it: that is the policy's (AttemptTimeout,
// MaxElapsed), whose timed-out attempts are retried.
//
// On the pool's own connections the bound is the connection's read
// deadline, moved as the body is read (countingReader): no allocation. An
// answer of the pool's fallback http.Transport gets a timer (watchIdle).
// Upgrades do not go through it.
type readTimeout struct {
	u    *upstreamTransport
	idle time.Duration
}

func (t *readTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.u.roundTrip(req, t.idle)
}

// watchIdle replaces resp's body with one whose reads fail with an
// *upstreamIdleError, and which is closed, once a read has waited idle
// for the upstream's next bytes. An answer without a body, and a 101
// (whose body is the connection), are left as they are.
func watchIdle(resp *http.Response, idle time.Duration) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		return
	}
	b := &idleBody{rc: resp.Body, req: resp.Request, idle: idle, start: time.Now()}
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
	return b.rc.Close()
}
