package curl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// curlErrors is the transport under the retries that makes them retry
// the errors curl --retry retries although httpretry finds them final: a
// name that did not resolve (curl retries it as a timeout: a name may be
// missing for a while, such as a service not yet registered), and with
// all (--retry-all-errors) every error (an untrusted certificate, a TLS
// alert too). The caller's own cancellation stays final, and so does what
// httpretry decides about the request rather than the error: a POST or
// PATCH without Idempotency-Key is still sent once, unless its connection
// could not be made (the error stays a dial error, which proves the
// request never left).
//
// With all, it also reads each answer's body whole (up to
// maxRetriedBody) before handing the answer up, so that a body cut short
// fails its attempt and is retried, as curl --retry-all-errors retries a
// transfer that ended early (exit 18). A longer body is handed up as it
// comes, and a cut in it is not retried, except with -C (resume), where
// what came is written within the attempt and the retry asks for the
// bytes after it (resumeState.take).
type curlErrors struct {
	base   http.RoundTripper
	all    bool
	resume *resumeState // -C's, or nil: each attempt asks for the bytes not written yet
}

// maxRetriedBody is the longest body that --retry-all-errors reads whole
// within its attempt, so that a cut in it is retried: 16 MiB.
const maxRetriedBody = 16 << 20

// errBodyCut is an attempt's error when its answer's body ended before
// its Content-Length (or its last chunk): curl's exit 18.
type errBodyCut struct {
	err       error
	remaining int64          // bytes missing, -1 when unknown (no Content-Length)
	resp      *http.Response // the answer, its body what came of it
}

func (e *errBodyCut) Error() string {
	if e.remaining >= 0 {
		return fmt.Sprintf("transfer closed with %d bytes remaining to read", e.remaining)
	}
	return "transfer closed with outstanding read data remaining"
}

func (e *errBodyCut) Unwrap() error { return e.err }

// readWhole reads resp's body, up to maxRetriedBody, so that it can be
// handed up whole; a read that fails closes it.
func readWhole(resp *http.Response) error {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	body := resp.Body
	data, err := io.ReadAll(io.LimitReader(body, maxRetriedBody+1))
	if err != nil {
		_ = body.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			cut := &errBodyCut{err: err, remaining: -1, resp: resp}
			if resp.ContentLength > int64(len(data)) {
				cut.remaining = resp.ContentLength - int64(len(data))
			}
			resp.Body = io.NopCloser(bytes.NewReader(data))
			return cut
		}
		return err
	}
	if len(data) > maxRetriedBody {
		resp.Body = &longBody{Reader: io.MultiReader(bytes.NewReader(data), body), rest: body}
		return nil
	}
	_ = body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

// longBody is the body readWhole hands up when it is longer than
// maxRetriedBody: what it read, then the rest as it comes.
type longBody struct {
	io.Reader
	rest io.ReadCloser
}

func (b *longBody) Close() error { return b.rest.Close() }

// retryAnyway hides a final error from httpretry's classification;
// curlExit looks through it (revealed) for the exit code.
type retryAnyway struct {
	err error  // the error hidden
	msg string // its message, without what a dial error wrapping it adds
}

func (e *retryAnyway) Error() string { return e.msg }

func (a curlErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	var asked int64
	if a.resume != nil {
		req, asked = a.resume.prepare(req)
	}
	resp, err := a.base.RoundTrip(req)
	if err == nil && a.all {
		if a.resume != nil {
			err = a.resume.take(asked, resp)
		} else {
			err = readWhole(resp)
		}
		if err != nil {
			resp = nil
		}
		if we := (*errWriteOut)(nil); errors.As(err, &we) {
			return nil, retry.Permanent(err) // the output failed: final, as curl's exit 23
		}
	}
	if err == nil || req.Context().Err() != nil || errors.Is(err, context.Canceled) || httpretry.Classify(err) != retry.ClassPermanent {
		return resp, err
	}
	if dns := (*net.DNSError)(nil); !a.all && !errors.As(err, &dns) {
		return resp, err
	}
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		hidden := &retryAnyway{err: err, msg: op.Err.Error()}
		return resp, &net.OpError{Op: op.Op, Net: op.Net, Source: op.Source, Addr: op.Addr, Err: hidden}
	}
	return resp, &retryAnyway{err: err, msg: err.Error()}
}

func (a curlErrors) CloseIdleConnections() {
	if ci, ok := a.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// revealed is the error that curlErrors hid in err, or err.
func revealed(err error) error {
	var ra *retryAnyway
	if errors.As(err, &ra) {
		return ra.err
	}
	return err
}

// failStatuses are the statuses that --retry-all-errors retries with -f
// or --fail-with-body, under which curl takes every status from 400 as an
// error: the defaults and 400 to 599.
func failStatuses() []int {
	s := httpretry.DefaultStatuses()
	for c := 400; c < 600; c++ {
		switch c {
		case 408, 429, 500, 502, 503, 504:
			continue
		}
		s = append(s, c)
	}
	return s
}
