package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/internal/credential"
	"github.com/yaoki-go/yaoki/retry"
)

// frontRoute is what the front end needs of a route whose requests it
// may serve (newFrontRoute).
type frontRoute struct {
	u         *upstreamTransport
	up        *url.URL
	addr      string // to dial
	hostField []byte // the Host sent: the upstream's
	basePath  []byte // the upstream's escaped path, which the request's is joined to
	baseQuery []byte // the upstream's query, which the request's is added to
	hostKey   string // the events' Host, as httpretry names the upstream
	idle      time.Duration
	retrier   *retry.Retrier // the route's policy with the guards its transport keeps for the upstream
	policy    retry.Policy   // the same, for the retriers of calls with an observer (observedRetrier)
	obs       event.Observer // the loop's observer; nil: none
}

// newFrontRoute returns the front end's view of the route pr, whose
// transport's policy is p, or nil when the front end does not serve the
// route: an upstream that is not plain http or that an environment proxy
// takes, a pool that is not the proxy's own, or hedging (whose attempts
// run concurrently: httpretry drives them).
func newFrontRoute(pr *proxyRoute, p retry.Policy, base any, s *Server) (*frontRoute, error) {
	u, ok := base.(*upstreamTransport)
	up := pr.cfg.Upstream
	if !ok || up.Scheme != "http" || up.Host == "" || up.User != nil || pr.cfg.Hedge != nil || (p.Env != nil && p.Env.Hedger != nil) {
		return nil, nil
	}
	if u.fallback.Proxy != nil {
		if px, err := u.fallback.Proxy(&http.Request{Method: http.MethodGet, URL: up, Header: http.Header{}}); err != nil || px != nil {
			return nil, nil
		}
	}
	fr := &frontRoute{u: u, up: up, addr: hostPort(up), hostField: []byte(up.Host), basePath: []byte(up.EscapedPath()),
		baseQuery: []byte(up.RawQuery), hostKey: lowerASCII(up.Host), idle: pr.cfg.readTimeout()}
	env := &retry.Env{}
	if p.Env != nil {
		env = p.Env.Clone()
	}
	env.Budget, env.Breaker, env.Throttle = pr.rt.GuardsFor(up.Host)
	fr.obs = event.Multi(s.Observer, env.Observer)
	env.Observer = nil
	p.Env = env
	userClassify := p.Classify
	p.Classify = func(err error) retry.Class {
		class := httpretry.Classify(err)
		if class == retry.ClassPermanent || userClassify == nil {
			return class
		}
		return userClassify(err)
	}
	r, err := retry.New(p)
	if err != nil {
		return nil, err
	}
	fr.retrier, fr.policy = r, r.Policy()
	return fr, nil
}

func lowerASCII(s string) string {
	return string(bytes.ToLower([]byte(s)))
}

// matchFront returns the route that takes the front end's request r, as
// match does for net/http's, or nil when it is not one the front end
// serves (no route takes it, or the front end does not serve its route).
func (rs *proxyRoutes) matchFront(r *frontRequest) *proxyRoute {
	host, hostDone := "", false
	for _, pr := range rs.list {
		if pr.cfg.Host != "" {
			if !hostDone {
				host, hostDone = frontHost(r.host), true
			}
			if pr.cfg.Host != host {
				continue
			}
		}
		if pathMatchesBytes(pr.cfg.Path, r.path) {
			if pr.front == nil {
				return nil
			}
			return pr
		}
	}
	return nil
}

// frontHost is requestHost for a Host field's value.
func frontHost(h []byte) string {
	r := http.Request{Host: string(h)}
	return requestHost(&r)
}

// pathMatchesBytes is pathMatches for a path in bytes.
func pathMatchesBytes(prefix string, p []byte) bool {
	if prefix == "" || prefix == "/" {
		return true
	}
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return false
	}
	return len(p) == len(prefix) || prefix[len(prefix)-1] == '/' || p[len(prefix)] == '/'
}

// frontExchange is the state of the request a frontConn serves: what its
// attempts share and have seen.
type frontExchange struct {
	pr                 *proxyRoute
	fr                 *frontRoute
	out                []byte // the request sent upstream, to the Attempt-Count value
	base               int    // len(out) before the Attempt-Count value
	tgt                [2]int // the request target's span in out
	n                  int    // attempts sent
	unsent             bool   // an attempt was not sent: the client had gone
	status, lastStatus int
	final              string // why a retryable status was final: an event reason
	n1xx, bytes1xx     int    // the 1xx answers relayed to the client, and the size of their headers
	resp               frontResponse
	up                 *upstreamConn // the connection whose answer resp is, its body unread; nil: none
	obs                frontObserver
}

func (x *frontExchange) method(head bool) string {
	if head {
		return http.MethodHead
	}
	return http.MethodGet
}

// url is the URL of the request sent upstream, for errors.
func (x *frontExchange) url() *url.URL {
	target := string(x.out[x.tgt[0]:x.tgt[1]])
	u := &url.URL{Scheme: "http", Host: x.fr.up.Host}
	path, query, _ := bytesCutString(target, '?')
	u.RawQuery = query
	u.RawPath = path
	if p, err := url.PathUnescape(path); err == nil {
		u.Path = p
	} else {
		u.Path, u.RawPath = path, ""
	}
	return u
}

func bytesCutString(s string, c byte) (before, after string, found bool) {
	if i := bytes.IndexByte([]byte(s), c); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// exchangeAndRelay sends fc.req through the route's retry loop and
// relays the answer, or answers with a problem; false when the client's
// connection is to be closed.
func (fc *frontConn) exchangeAndRelay(pr *proxyRoute) bool {
	x := &fc.x
	fr := pr.front
	if cap(x.resp.buf) > maxKeptBuffer {
		// An answer with a long head came before: its buffer is not
		// kept for every later request of the connection.
		x.resp.buf, x.resp.spans = nil, nil
	}
	*x = frontExchange{pr: pr, fr: fr, out: x.out[:0], resp: frontResponse{buf: x.resp.buf[:0], spans: x.resp.spans[:0]}}
	fc.buildRequest()
	var (
		code int
		err  error
	)
	if fr.obs == nil {
		code, err = retry.DoValueWith(&fc.ctx, fr.retrier, fc.attemptFn)
	} else {
		x.obs = frontObserver{next: fr.obs, x: x, method: x.method(fc.req.head), host: fr.hostKey}
		code, err = retry.DoValueWith(&fc.ctx, fc.observedRetrier(fr), fc.attemptFn)
	}
	_ = code
	if fc.ctx.Err() != nil {
		// The client went away, or ended its side of the connection (a
		// half-close, which may still read): the attempt was cancelled.
		// It gets what net/http's path gives it (pr.fail), a bare 499,
		// nginx's code for it, and the connection closes.
		x.release(fc, false)
		fc.writeOwn(&frontWriter{code: 499, h: http.Header{"Content-Length": {"0"}}})
		return false
	}
	if err != nil {
		var re *retry.Error
		if x.up == nil || !errors.As(err, &re) || re.Reason == retry.ReasonCancelled {
			x.release(fc, false)
			return fc.problem(err)
		}
		// Retries ended on a status: its answer is relayed.
	}
	return fc.relay()
}

// observedRetrier returns the retrier of fr whose events go through the
// connection's observer (x.obs, filled in per request): made once per
// connection and route, so that a request does not validate a policy.
func (fc *frontConn) observedRetrier(fr *frontRoute) *retry.Retrier {
	if fc.obsRoute == fr {
		return fc.obsRetrier
	}
	p := fr.policy
	env := *p.Env
	env.Observer = &fc.x.obs
	p.Env = &env
	r, err := retry.New(p)
	if err != nil {
		// Not reached: fr.policy is a valid policy's, and an Env's
		// observer is not checked.
		panic(err)
	}
	fc.obsRoute, fc.obsRetrier = fr, r
	return r
}

// buildRequest writes the head of the request sent upstream into x.out,
// to the Attempt-Count value, with what httputil.ReverseProxy and the
// route's Rewrite make of the client's (route.go): the upstream's path
// and query joined to the request's, the upstream's Host, the client's
// fields less the hop-by-hop ones and those the proxy writes itself,
// X-Forwarded-For (the client added to the chain), X-Forwarded-Host,
// X-Forwarded-Proto, Via.
func (fc *frontConn) buildRequest() {
	x, r, fr := &fc.x, &fc.req, fc.x.fr
	out := x.out[:0]
	if r.head {
		out = append(out, "HEAD "...)
	} else {
		out = append(out, "GET "...)
	}
	x.tgt[0] = len(out)
	// httputil's joinURLPath: one slash between the two.
	a, b := fr.basePath, r.path
	switch aslash, bslash := bytes.HasSuffix(a, []byte("/")), bytes.HasPrefix(b, []byte("/")); {
	case aslash && bslash:
		out = append(append(out, a...), b[1:]...)
	case !aslash && !bslash:
		out = append(append(append(out, a...), '/'), b...)
	default:
		out = append(append(out, a...), b...)
	}
	switch {
	case len(fr.baseQuery) > 0 && r.query != nil:
		out = append(append(append(append(out, '?'), fr.baseQuery...), '&'), r.query...)
	case len(fr.baseQuery) > 0:
		out = append(append(out, '?'), fr.baseQuery...)
	case r.query != nil:
		out = append(append(out, '?'), r.query...)
	}
	x.tgt[1] = len(out)
	out = append(out, " HTTP/1.1\r\nHost: "...)
	out = append(out, fr.hostField...)
	out = append(out, "\r\n"...)
	for _, f := range r.fields {
		if f.send {
			out = append(append(append(append(out, f.name...), ": "...), f.value...), "\r\n"...)
		}
	}
	if fc.client != nil {
		out = append(out, "X-Forwarded-For: "...)
		for _, i := range r.xff {
			out = append(append(out, r.fields[i].value...), ", "...)
		}
		out = append(append(out, fc.client...), "\r\n"...)
	}
	out = append(append(append(out, "X-Forwarded-Host: "...), r.host...), "\r\nX-Forwarded-Proto: http\r\nVia: 1.1 yaoki\r\n"...)
	out = append(out, header.AttemptCount+": "...)
	x.out, x.base = out, len(out)
}

// attempt sends one attempt of fc.req and reads its answer's head. ctx is
// the loop's context for it: the connection's, or a child bounded by the
// policy's AttemptTimeout and MaxElapsed.
func (fc *frontConn) attempt(ctx context.Context) (int, error) {
	x := &fc.x
	if fc.ctx.Err() != nil {
		x.unsent = true
		return 0, context.Canceled
	}
	x.n++
	x.status = 0
	x.release(fc, true) // an answer thrown away
	x.obs.sent(&fc.ctx)
	x.out = strconv.AppendInt(x.out[:x.base], int64(x.n), 10)
	x.out = append(x.out, "\r\n\r\n"...)
	fr := x.fr
	for fresh := false; ; fresh = true {
		var c *upstreamConn
		if !fresh {
			c = fr.u.get(fr.addr)
			for c != nil && !c.quiet() {
				c.nc.Close()
				c = fr.u.get(fr.addr)
			}
		}
		if c == nil {
			nc, err := fr.u.dial(ctx, "tcp", fr.addr)
			if err != nil {
				if ctx.Err() != nil {
					return 0, context.Cause(ctx)
				}
				return 0, err
			}
			c = newUpstreamConn(fr.u, fr.addr, nc)
		}
		code, err, stale := fc.exchange(ctx, c)
		if !stale {
			if err != nil {
				// A retry may follow, after a wait: a client that goes
				// away during it is to be heard now, not watchAfter into
				// the request.
				fc.watchNow()
			}
			return code, err
		}
	}
}

// exchange sends the attempt's request on c and reads its answer's head;
// stale says that c turned out to have been closed by the upstream while
// idle, before any answer: the attempt is sent again on a new
// connection, as http.Transport does.
func (fc *frontConn) exchange(ctx context.Context, c *upstreamConn) (code int, err error, stale bool) {
	x := &fc.x
	fr := x.fr
	fc.setUp(c)
	if fc.ctx.Err() != nil {
		c.cut() // the client went before c could be cut
	}
	stop := alwaysStopped
	if ctx != context.Context(&fc.ctx) && ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.cut)
	}
	if !c.r.moved.IsZero() && fr.idle != c.r.idle {
		// The previous answer's reads moved the read deadline for
		// another read timeout (or the drain of a thrown-away answer
		// did): this answer's first read sets its own, or with none,
		// clears it. With the same timeout, a deadline moved less than
		// an eighth of it ago stands, as between two reads of a body.
		if fr.idle == 0 {
			c.nc.SetReadDeadline(time.Time{})
		}
		c.r.moved = time.Time{}
	}
	c.r.idle = fr.idle
	before := c.r.n
	if _, err := c.bw.Write(x.out); err != nil {
		return fc.failed(ctx, c, stop, before, err)
	}
	if err := c.bw.Flush(); err != nil {
		return fc.failed(ctx, c, stop, before, err)
	}
	if err := fc.readAnswer(c); err != nil {
		return fc.failed(ctx, c, stop, before, err)
	}
	if !stop() {
		// The attempt's time ended as its answer came: it was cut.
		return fc.failed(ctx, c, alwaysStopped, before, context.Cause(ctx))
	}
	code = x.resp.code
	x.status, x.lastStatus, x.up = code, code, c
	if code >= len(x.pr.statuses) || !x.pr.statuses[code] {
		return code, nil, false
	}
	se := &httpretry.StatusError{Code: code, Status: x.resp.status(), Hint: -1}
	if x.resp.doNotRetry {
		x.final = "do_not_retry"
		return code, retry.Permanent(se), false
	}
	if x.resp.hasHint {
		if d, ok := httpretry.Hint(&http.Response{StatusCode: code, Header: x.resp.header()}, time.Now()); ok {
			se.Hint = d
		}
	}
	return code, se, false
}

// failed ends an exchange on c that failed with err: c is closed, and the
// error is the attempt's.
func (fc *frontConn) failed(ctx context.Context, c *upstreamConn, stop func() bool, before int64, err error) (int, error, bool) {
	x := &fc.x
	if c.w.err != nil {
		err = c.w.err // what the connection refused
	}
	stop()
	fc.setUp(nil)
	c.nc.Close()
	switch {
	case ctx.Err() != nil:
		return 0, context.Cause(ctx), false
	case x.fr.idle > 0 && isDeadline(err):
		return 0, &upstreamHeaderTimeoutError{method: x.method(fc.req.head), url: x.url(), idle: x.fr.idle}, false
	case c.reused && c.r.n == before && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)):
		return 0, nil, true
	}
	return 0, err, false
}

// readAnswer reads the answer's head from c into x.resp, relaying 1xx
// answers to the client (at most max1xx), all of them within
// maxResponseHeaderBytes.
func (fc *frontConn) readAnswer(c *upstreamConn) error {
	x := &fc.x
	c.r.left = maxResponseHeaderBytes
	defer func() { c.r.left = -1 }()
	for n1xx := 1; ; n1xx++ {
		if err := x.resp.read(c.br, fc.req.head); err != nil {
			return err
		}
		switch code := x.resp.code; {
		case code == http.StatusSwitchingProtocols:
			return errors.New("proxy: upstream switched protocols without being asked to")
		case code >= 200:
			return nil
		case n1xx > max1xx:
			return &tooMany1xxError{method: x.method(fc.req.head), url: x.url()}
		}
		fc.relay1xx()
	}
}

// relay1xx relays the 1xx answer in x.resp, its hop-by-hop fields left
// out (RFC 9110 §15.2), as relayWriter does: at most max1xx to a request,
// whatever its attempts bring, with headers of at most
// maxResponseHeaderBytes together. A write that fails is heard at the
// final answer.
func (fc *frontConn) relay1xx() {
	x, r, bw := &fc.x, &fc.x.resp, fc.bw
	size := len("HTTP/1.1 100 \r\n\r\n")
	for _, sp := range r.spans {
		size += sp.ne - sp.ns + len(": \r\n") + sp.ve - sp.vs
	}
	if x.n1xx >= max1xx || x.bytes1xx+size > maxResponseHeaderBytes {
		return
	}
	x.n1xx++
	x.bytes1xx += size
	bw.Write(statusLines[r.code])
	for _, sp := range r.spans {
		switch sp.kind {
		case rfHop, rfConnection, rfTransferEncoding, rfTrailer, rfContentLength:
			// net/http's server writes no Content-Length on a 1xx.
			continue
		}
		name := r.name(sp)
		if r.listedInConnection(name) {
			continue
		}
		writeField(bw, name, r.value(sp))
	}
	bw.WriteString("\r\n")
	bw.Flush()
}

func writeField(w io.Writer, name, value []byte) {
	type bw interface {
		Write([]byte) (int, error)
		WriteString(string) (int, error)
	}
	b := w.(bw)
	b.Write(name)
	b.WriteString(": ")
	b.Write(value)
	b.WriteString("\r\n")
}

// release ends the exchange of x.up, the connection of an answer that is
// not relayed (thrown away, drained: the next attempt's, or not relayed at
// all: closed).
func (x *frontExchange) release(fc *frontConn, drain bool) {
	c := x.up
	if c == nil {
		return
	}
	x.up = nil
	fc.setUp(nil)
	r := &x.resp
	keep := drain && !r.close && !c.r.cut.Load()
	switch {
	case !keep:
	case r.body == bodyNone:
	case r.body == bodyLength && r.length <= maxDrainBody:
		// As httpretry drains a retried answer: a short body, read
		// within maxDrainTime, keeps its connection.
		now := time.Now()
		c.nc.SetReadDeadline(now.Add(maxDrainTime))
		// The next exchange sets its own read deadline.
		c.r.moved, c.r.idle = now, -1
		_, err := c.br.Discard(int(r.length))
		keep = err == nil
	default:
		keep = false
	}
	if keep && c.br.Buffered() == 0 {
		c.u.put(c)
		return
	}
	c.nc.Close()
}

// maxKeptBuffer is the largest answer-head buffer a client connection
// keeps between its requests.
const maxKeptBuffer = 64 << 10

// The bounds of draining an answer thrown away, httpretry's.
const (
	maxDrainBody = 64 << 10
	maxDrainTime = 250 * time.Millisecond
)

// relay writes the answer in x.resp to the client, its body streamed from
// x.up; false when the client's connection is to be closed.
func (fc *frontConn) relay() bool {
	x, r, bw := &fc.x, &fc.x.resp, fc.bw
	c := x.up
	code := r.code
	dnr := code < len(x.pr.statuses) && x.pr.statuses[code] && !fc.hintTooLong()
	chunkOut := r.body == bodyChunked || r.body == bodyToClose
	bw.Write(statusLines[code])
	var sole [2]int // Location, Content-Location: how many
	if r.rewrite {
		for _, sp := range r.spans {
			switch sp.kind {
			case rfLocation:
				sole[0]++
			case rfContentLocation:
				sole[1]++
			}
		}
	}
	lengthDone := false // a Content-Length was written: one is
	for _, sp := range r.spans {
		name, v := r.name(sp), r.value(sp)
		switch sp.kind {
		case rfHop, rfConnection, rfTransferEncoding:
			continue
		case rfTrailer:
			if r.chunked {
				// Announced as net/http announces it: for a chunked
				// answer, which alone has a trailer.
				fc.writeTrailerNames(v)
			}
			continue
		case rfContentLength:
			// net/http's reader keeps one of equal ones and none beside
			// chunked (but for a HEAD's answer), and its server writes
			// none for a 204 or a 304.
			if lengthDone || r.body == bodyChunked || code == http.StatusNoContent || code == http.StatusNotModified {
				continue
			}
			lengthDone = true
		case rfContentType:
			if code == http.StatusNotModified {
				continue // nor a Content-Type (its suppressedHeaders)
			}
		case rfDoNotRetry:
			if dnr {
				continue
			}
		case rfLocation, rfContentLocation:
			if sole[sp.kind-rfLocation] == 1 {
				v = []byte(clientLocation(x.fr.up, string(v)))
			}
		case rfLink:
			v = []byte(clientLinks(x.fr.up, string(v)))
		}
		if r.listedInConnection(name) {
			continue
		}
		writeField(bw, name, v)
	}
	if r.proto10 {
		bw.WriteString("Via: 1.0 yaoki\r\n")
	} else {
		bw.WriteString("Via: 1.1 yaoki\r\n")
	}
	if !r.hasDate {
		bw.WriteString("Date: ")
		bw.Write(fc.f.s.date.get(time.Now()))
		bw.WriteString("\r\n")
	}
	if chunkOut {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if dnr {
		bw.WriteString(header.DoNotRetry + ": true\r\n")
	}
	if fc.req.close || fc.f.closing.Load() {
		// The client asked, or the front end is closing (Close): the
		// connection ends after this answer, as net/http's server says
		// while it shuts down.
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	var upErr, clientErr error
	switch r.body {
	case bodyLength:
		upErr, clientErr = fc.copyBody(c, r.length, false)
	case bodyChunked:
		upErr, clientErr = fc.copyChunked(c)
	case bodyToClose:
		upErr, clientErr = fc.copyBody(c, -1, true)
	}
	// The upstream's connection goes back before the last write to the
	// client: once the client has its answer, the connection is in the
	// pool (or closed).
	x.up = nil
	fc.setUp(nil)
	if upErr == nil && clientErr == nil && !r.close && c.br.Buffered() == 0 && !c.r.cut.Load() {
		c.u.put(c)
	} else {
		c.nc.Close()
	}
	if upErr == nil && clientErr == nil {
		clientErr = bw.Flush()
	}
	if upErr != nil {
		if l := x.pr.proxy.ErrorLog; l != nil && fc.ctx.Err() == nil {
			// As httputil.ReverseProxy logs it on the other path.
			l.Printf("read error during body copy: %v", upErr)
		}
		fc.reportCut(upErr)
	}
	return upErr == nil && clientErr == nil
}

// hintTooLong reports whether the answer in x.resp asks to wait longer
// than the route's policy waits (proxyRoute.hintTooLong).
func (fc *frontConn) hintTooLong() bool {
	r := &fc.x.resp
	if !r.hasHint {
		return false
	}
	d, ok := httpretry.Hint(&http.Response{StatusCode: r.code, Header: r.header()}, time.Now())
	return ok && d > fc.x.pr.maxHint
}

// writeTrailerNames writes the Trailer field of an answer with the names
// it announces less those a proxy does not relay in a trailer
// (removeTrailerHopByHop).
func (fc *frontConn) writeTrailerNames(v []byte) {
	var names [][]byte
	for rest := v; len(rest) > 0; {
		var n []byte
		n, rest = nextToken(rest)
		if len(n) > 0 && !fc.trailerDropped(n) {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		writeField(fc.bw, []byte("Trailer"), bytes.Join(names, []byte(", ")))
	}
}

// trailerDropped reports whether a trailer field named n stays with the
// upstream.
func (fc *frontConn) trailerDropped(n []byte) bool {
	return hopByHopName(n) || fc.x.resp.listedInConnection(n) ||
		bytes.EqualFold(n, []byte("Content-Length")) || bytes.EqualFold(n, []byte("Host"))
}

// copyBody copies n bytes of the answer's body from c to the client (to
// the end of the connection, chunked, when toClose), flushing what it
// wrote whenever it is to wait for the upstream, so that a stream reaches
// the client as it comes. upErr is the upstream's failure, clientErr the
// client's.
func (fc *frontConn) copyBody(c *upstreamConn, n int64, toClose bool) (upErr, clientErr error) {
	bw := fc.bw
	var big []byte
	defer func() {
		if big != nil {
			fc.f.s.buffers.Put(big)
		}
	}()
	for toClose || n > 0 {
		if c.br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return nil, err
			}
			if !toClose && n >= frontBufferSize {
				// A long body: read past the reader's buffer.
				if big == nil {
					big = fc.f.s.buffers.Get()
				}
				m, err := c.br.Read(big[:min(n, int64(len(big)))])
				if m > 0 {
					n -= int64(m)
					if _, err := bw.Write(big[:m]); err != nil {
						return nil, err
					}
				}
				if err != nil {
					return fc.bodyErr(c, err), nil
				}
				continue
			}
			if _, err := c.br.Peek(1); err != nil {
				if toClose && err == io.EOF {
					_, err := bw.WriteString("0\r\n\r\n")
					return nil, err
				}
				return fc.bodyErr(c, err), nil
			}
		}
		m := c.br.Buffered()
		if !toClose {
			m = int(min(int64(m), n))
		}
		b, _ := c.br.Peek(m)
		if toClose {
			bw.WriteString(strconv.FormatInt(int64(m), 16))
			bw.WriteString("\r\n")
		}
		if _, err := bw.Write(b); err != nil {
			return nil, err
		}
		if toClose {
			bw.WriteString("\r\n")
		}
		c.br.Discard(m)
		n -= int64(m)
	}
	return nil, nil
}

// copyChunked relays a chunked body, chunk by chunk, and its trailer
// less the fields a proxy does not relay in one.
func (fc *frontConn) copyChunked(c *upstreamConn) (upErr, clientErr error) {
	bw := fc.bw
	r := &fc.x.resp
	for {
		if c.br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return nil, err
			}
		}
		mark := len(r.buf)
		s, e, err := r.readLineMax(c.br, maxChunkLine)
		if err != nil {
			return fc.bodyErr(c, err), nil
		}
		line := r.buf[s:e]
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions are the connection's
		}
		line = trimOWS(line)
		size, perr := strconv.ParseUint(string(line), 16, 62)
		r.buf = r.buf[:mark]
		if perr != nil || len(line) == 0 || len(line) > 16 {
			return fc.bodyErr(c, malformed("chunk size line")), nil
		}
		if size == 0 {
			break
		}
		bw.WriteString(strconv.FormatUint(size, 16))
		bw.WriteString("\r\n")
		if upErr, clientErr := fc.copyBody(c, int64(size), false); upErr != nil || clientErr != nil {
			return upErr, clientErr
		}
		s, e, err = r.readLineMax(c.br, maxChunkLine)
		r.buf = r.buf[:mark]
		if err != nil {
			return fc.bodyErr(c, err), nil
		}
		if s != e {
			return fc.bodyErr(c, malformed("no CRLF after a chunk")), nil
		}
		bw.WriteString("\r\n")
	}
	bw.WriteString("0\r\n")
	// The trailer, read whole first: a Connection field in it names
	// fields of it that stay here too.
	mark := len(r.buf)
	var lines [][2]int
	for {
		// The trailer, its empty line included, within maxChunkLine.
		s, e, err := r.readLineMax(c.br, maxChunkLine-(len(r.buf)-mark))
		if err != nil {
			return fc.bodyErr(c, err), nil
		}
		if s == e {
			break
		}
		lines = append(lines, [2]int{s, e})
	}
	listed := func(name []byte) bool {
		for _, l := range lines {
			line := r.buf[l[0]:l[1]]
			n, v, ok := bytes.Cut(line, []byte(":"))
			if !ok || !bytes.EqualFold(n, []byte("Connection")) {
				continue
			}
			for rest := v; len(rest) > 0; {
				var tok []byte
				tok, rest = nextToken(rest)
				if bytes.EqualFold(tok, name) {
					return true
				}
			}
		}
		return false
	}
	for _, l := range lines {
		line := r.buf[l[0]:l[1]]
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && isToken(line[:colon]) && !fc.trailerDropped(line[:colon]) && !listed(line[:colon]) {
			writeField(bw, line[:colon], trimOWS(line[colon+1:]))
		}
	}
	r.buf = r.buf[:mark]
	_, err := bw.WriteString("\r\n")
	return nil, err
}

// bodyErr is the error of a read of the answer's body from c that
// failed: an *upstreamIdleError after the route's read timeout.
func (fc *frontConn) bodyErr(c *upstreamConn, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if idle := fc.x.fr.idle; idle > 0 && isDeadline(err) && !c.r.cut.Load() {
		return &upstreamIdleError{method: fc.x.method(fc.req.head), url: fc.x.url(), idle: idle, err: err}
	}
	return err
}

// reportCut tells the route's observer that the answer relayed was cut by
// err (relayedBody.report), unless the client went away.
func (fc *frontConn) reportCut(err error) {
	obs := fc.x.pr.obs
	if obs == nil || fc.ctx.Err() != nil {
		return
	}
	reason := reasonCut
	var idle *upstreamIdleError
	if errors.As(err, &idle) {
		reason = reasonReadTimeout
	}
	obs.Observe(&fc.ctx, event.Event{Kind: event.GaveUp, Time: time.Now(), Component: "proxy", Method: fc.x.method(fc.req.head),
		Host: fc.x.fr.up.Host, Status: fc.x.resp.code, Err: err, Reason: reason})
}

// problem answers the request with the proxy's own problem for err, the
// loop's error (pr.fail); false when the connection is to be closed.
func (fc *frontConn) problem(err error) bool {
	x := &fc.x
	e := &httpretry.Error{Method: x.method(fc.req.head), URL: credential.RedactedURL(x.url()), Attempts: x.n, LastStatus: x.lastStatus, Err: err}
	var re *retry.Error
	if errors.As(err, &re) {
		if x.unsent {
			re.Attempts = e.Attempts
		}
		e.Reason = re.Reason
	}
	w := &frontWriter{h: http.Header{}}
	p, wait, dnr := problemFor(e, false)
	if dnr {
		w.h.Set(header.DoNotRetry, "true")
	}
	writeProxyProblem(w, p, wait)
	return fc.writeOwn(w)
}

// writeOwn writes an answer the proxy made itself, held in w.
func (fc *frontConn) writeOwn(w *frontWriter) bool {
	bw := fc.bw
	bw.Write(statusLines[w.code])
	keys := make([]string, 0, len(w.h))
	for k := range w.h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range w.h[k] {
			writeField(bw, []byte(k), []byte(v))
		}
	}
	bw.WriteString("Date: ")
	bw.Write(fc.f.s.date.get(time.Now()))
	bw.WriteString("\r\n")
	if fc.req.close || fc.f.closing.Load() {
		// The client asked, or the front end is closing (Close): the
		// connection ends after this answer, as net/http's server says
		// while it shuts down.
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if !fc.req.head {
		bw.Write(w.body.Bytes())
	}
	return bw.Flush() == nil
}

// frontWriter is the http.ResponseWriter an answer of the proxy's own is
// written to on the front end (writeProxyProblem), held until writeOwn.
type frontWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *frontWriter) Header() http.Header { return w.h }
func (w *frontWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *frontWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}

// frontObserver passes the retry loop's events of a front-end request on
// to the route's observer with what httpretry's observer adds to them
// (httpretry's observe.go): the component, the method, the host, the
// status; an attempt's start once it is sent, the attempts sent in the
// give-up, and why a retryable status was final.
type frontObserver struct {
	next         event.Observer
	x            *frontExchange
	method, host string
	held         event.Event
	holding      bool
}

func (o *frontObserver) Observe(ctx context.Context, e event.Event) {
	e.Component = "httpretry"
	e.Method = o.method
	e.Host = o.host
	switch e.Kind {
	case event.AttemptStart:
		o.held, o.holding = e, true // reported by sent, if it is
		return
	case event.AttemptEnd:
		if o.holding { // it was not sent
			o.holding = false
			return
		}
	case event.GaveUp:
		e.Attempt = o.x.n
	}
	if e.Status == 0 && e.Kind != event.AttemptStart {
		e.Status = o.x.status
	}
	if e.Kind == event.GaveUp && e.Reason == retry.ReasonPermanent.Key() && o.x.final != "" {
		e.Reason = o.x.final
	}
	o.next.Observe(ctx, e)
}

// sent reports the start of the attempt about to be sent.
func (o *frontObserver) sent(ctx context.Context) {
	if o.holding {
		o.holding = false
		o.next.Observe(ctx, o.held)
	}
}
