package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/event"
)

// Reasons of the event.GaveUp a route's observer hears when an answer is
// cut after its header was relayed (relayedBody).
const (
	// reasonReadTimeout: the upstream sent no byte of the body for the
	// route's upstream read timeout.
	reasonReadTimeout = "upstream_read_timeout"
	// reasonCut: the upstream's connection failed in the middle of the
	// body (a reset, a close short of the Content-Length or of the last
	// chunk).
	reasonCut = "upstream_cut"
)

// relayedBody is the body of an answer that the proxy relays, on a route
// with an observer, or one that may end with a trailer: once closed, the
// hop-by-hop fields of its trailer are removed (removeTrailerHopByHop)
// before httputil.ReverseProxy relays it. On a route with an observer, a
// read of it that fails, other than at the body's end
// or because the client went away, cuts the client's answer:
// httputil.ReverseProxy only logs it (on stderr) and aborts the handler,
// and the attempt, whose header had come, counted as a success in the
// events. relayedBody reports the cut to the route's observer as an
// event.GaveUp of component "proxy", with the reason (reasonReadTimeout,
// reasonCut), the method, the upstream's host, the status relayed and the
// error: yaoki_give_ups_total{yaoki_component="proxy"} in the metrics, a
// WARN record in the logs. No event kind of its own: the call did stop
// without success, which is what GaveUp says.
//
// Pooled (relayedBodies): httputil.ReverseProxy reads the body on the
// handler's goroutine and closes it once, after which it is not used; a
// request costs no allocation for it.
type relayedBody struct {
	rc       io.ReadCloser
	pr       *proxyRoute
	req      *http.Request  // the attempt's
	resp     *http.Response // whose Trailer the body's end fills
	status   int
	reported bool
}

var relayedBodies = sync.Pool{New: func() any { return new(relayedBody) }}

// watchBody puts resp's body, relayed by pr, under a relayedBody, when pr
// has an observer, or when the body may end with a trailer (chunked: its
// length is unknown), whose hop-by-hop fields it removes. An answer
// without a body, and a 101 (whose body is the upgraded connection, which
// httputil.ReverseProxy takes as it is), are left as they are.
func (pr *proxyRoute) watchBody(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols || resp.Request == nil {
		return
	}
	if len(resp.Trailer) > 0 {
		// Announced: httputil.ReverseProxy announces to the client what
		// is left.
		removeTrailerHopByHop(resp.Trailer)
	}
	if pr.obs == nil && resp.ContentLength >= 0 {
		return
	}
	b := relayedBodies.Get().(*relayedBody)
	*b = relayedBody{rc: resp.Body, pr: pr, req: resp.Request, resp: resp, status: resp.StatusCode}
	resp.Body = b
}

// removeTrailerHopByHop removes from a trailer the fields a proxy does not
// relay in a header (removeHopByHop), and those that frame or route a
// message, which a trailer must not carry (RFC 9110 §6.5.1).
func removeTrailerHopByHop(t http.Header) {
	removeHopByHop(t)
	delete(t, "Content-Length")
	delete(t, "Host")
}

func (b *relayedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && !b.reported && b.pr.obs != nil {
		b.reported = true
		b.report(err)
	}
	return n, err
}

// report tells the route's observer that the answer was cut by err,
// unless the client went away (the attempt's context, a child of the
// client's, ended) or the body was closed first.
func (b *relayedBody) report(err error) {
	ctx := b.req.Context()
	if ctx.Err() != nil || errors.Is(err, http.ErrBodyReadAfterClose) {
		return
	}
	reason := reasonCut
	var idle *upstreamIdleError
	if errors.As(err, &idle) {
		reason = reasonReadTimeout
	}
	b.pr.obs.Observe(ctx, event.Event{Kind: event.GaveUp, Time: time.Now(), Component: "proxy", Method: b.req.Method,
		Host: b.req.URL.Host, Status: b.status, Err: err, Reason: reason})
}

func (b *relayedBody) Close() error {
	if b.rc == nil {
		return nil
	}
	err := b.rc.Close()
	if len(b.resp.Trailer) > 0 {
		// Filled at the body's end, with what the upstream sent, announced
		// or not; httputil.ReverseProxy relays it once the body is closed.
		removeTrailerHopByHop(b.resp.Trailer)
	}
	*b = relayedBody{}
	relayedBodies.Put(b)
	return err
}
