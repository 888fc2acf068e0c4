package retrytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RoundTripper is an http.RoundTripper that answers in memory as a script
// says: the n-th request gets the n-th step (see ParseScript), and every
// request is recorded with its headers, body and arrival time. It makes no
// network I/O, so that tests of code that waits (Retry-After, backoff) can
// run under testing/synctest on virtual time, where real sockets are not
// "durably blocking". Once the script is over, requests are answered 200
// with an empty body.
//
// Failures are the errors net/http returns for them: Reset a
// *net.OpError "read" wrapping ECONNRESET, EOF io.EOF, Refused a
// *net.OpError "dial" wrapping ECONNREFUSED, Hang the request context's
// error when it ends. Delays wait on a timer, or until the request's
// context ends.
//
// It keeps the RoundTripper contract (reads and closes request bodies,
// returns a response or an error), and counts the response bodies it hands
// out, closes and sees read to the end, so that tests can check that none
// is leaked. It is safe for concurrent use.
type RoundTripper struct {
	played
	opened  int // response bodies handed out, closed, read to their end
	closed  int
	drained int
}

// NewRoundTripper returns a RoundTripper for script (see ParseScript). A
// bad script fails tb's test at once.
func NewRoundTripper(tb testing.TB, script string) *RoundTripper {
	tb.Helper()
	steps, err := ParseScript(script)
	if err != nil {
		tb.Fatal(err)
	}
	return NewRoundTripperSteps(steps...)
}

// NewRoundTripperSteps returns a RoundTripper that answers with steps.
func NewRoundTripperSteps(steps ...Step) *RoundTripper {
	return &RoundTripper{played: played{steps: steps}}
}

// RoundTrip answers req with the next step of the script.
func (rt *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	step := rt.take(req.Method, req.URL.String(), req.Header, reqBody, time.Now())

	ctx := req.Context()
	if step.Delay > 0 {
		if err := wait(ctx, step.Delay); err != nil {
			return nil, err
		}
	}
	switch step.Fail {
	case Reset:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case EOF:
		return nil, io.EOF
	case Refused:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case Hang:
		<-ctx.Done()
		return nil, ctx.Err()
	}
	h := step.header(time.Now())
	h.Set("Content-Length", strconv.Itoa(len(step.Body)))
	rt.mu.Lock()
	rt.opened++
	rt.mu.Unlock()
	return &http.Response{
		Status:        strconv.Itoa(step.Status) + " " + http.StatusText(step.Status),
		StatusCode:    step.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          &scriptedBody{rt: rt, r: strings.NewReader(step.Body), cut: step.Cut, left: step.CutAfter},
		ContentLength: int64(len(step.Body)),
		Request:       req,
	}, nil
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Attempts returns the requests received so far, in order of arrival.
func (rt *RoundTripper) Attempts() []Attempt { return rt.list() }

// OpenBodies returns how many response bodies were handed out and not
// closed yet.
func (rt *RoundTripper) OpenBodies() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.opened - rt.closed
}

// DrainedBodies returns how many response bodies were read to their end
// before they were closed (what lets a real connection be reused).
func (rt *RoundTripper) DrainedBodies() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.drained
}

// scriptedBody is a response body that reports its closing.
type scriptedBody struct {
	rt     *RoundTripper
	r      *strings.Reader
	closed bool
	cut    bool // the read fails with io.ErrUnexpectedEOF after left more bytes
	left   int
}

func (b *scriptedBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.cut {
		if b.left == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		p = p[:min(len(p), b.left)]
	}
	n, err := b.r.Read(p)
	b.left -= n
	return n, err
}

func (b *scriptedBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.rt.mu.Lock()
	b.rt.closed++
	if b.r.Len() == 0 {
		b.rt.drained++
	}
	b.rt.mu.Unlock()
	return nil
}
