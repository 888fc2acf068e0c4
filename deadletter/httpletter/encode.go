package httpletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// Encoder makes letters of requests without their credentials. Its zero
// value leaves out what the package doc lists (URL userinfo, the credential
// headers and query parameters); DropHeaders and DropQuery add the
// caller's own, such as a partner's signature header. Encode, Letter and
// Capture are the zero Encoder's methods. An Encoder is not modified by its
// methods: it is safe for concurrent use if its slices are not changed.
type Encoder struct {
	// DropHeaders are more request header names whose values are
	// credentials, compared case-insensitively. Nil: only the listed ones.
	DropHeaders []string
	// DropQuery are more URL query parameter names whose values are
	// credentials, compared case-insensitively. Nil: only the listed ones.
	DropQuery []string
}

// Encode returns req as a letter's payload, without its credentials. It
// reads the body through req.GetBody, so that req itself stays unread; a
// request with a body but no GetBody (its body may have been sent already)
// is refused, as is a body that would make the payload larger than
// deadletter.MaxPayloadBytes, a header name or value that is not UTF-8
// (bytes 0x80-0xFF of another charset: a JSON string cannot keep them),
// and a URL whose query holds a space (which Decode refuses). The
// URL's fragment is left out (it is never sent, and may hold a token); a
// Host other than the URL's is kept. Header names that differ only in
// case (a header map set by hand may hold "x-trace" beside "X-Trace") are
// one field, which net/http sends as one line per value, the names in
// byte order: the letter keeps all their values, in that order, under the
// canonical name, so that the redrive sends what the server read. Every
// value is kept, repeated and empty ones included. A trailer that net/http
// sends (req.Trailer, after a body sent chunked) is kept the same way,
// with its values as they are when Encode runs (after the call: those the
// body's reader set at its end), and the redrive sends it after a chunked
// body.
func Encode(req *http.Request) ([]byte, error) { return Encoder{}.Encode(req) }

// Encode returns req as a letter's payload, without its credentials (see
// the package-level Encode).
func (e Encoder) Encode(req *http.Request) ([]byte, error) {
	if req.URL == nil || !req.URL.IsAbs() {
		return nil, fmt.Errorf("httpletter: encode: the request's URL %q is not absolute: want scheme and host", urlString(req.URL))
	}
	u := e.cleanURL(req.URL)
	if err := spaceInQuery(&u); err != nil {
		return nil, fmt.Errorf("httpletter: encode: %w", err)
	}
	r := Request{Method: req.Method, URL: u.String()}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if req.Host != "" && req.Host != req.URL.Host {
		r.Host = req.Host
	}
	var err error
	if r.Header, err = e.fields(req.Header, "header"); err != nil {
		return nil, err
	}
	if sendsTrailer(req) {
		if r.Trailer, err = e.fields(req.Trailer, "trailer field"); err != nil {
			return nil, err
		}
	}
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, errors.New("httpletter: encode: the request has a body but no GetBody, so it cannot be read again (it may have been sent): build it with http.NewRequest and a bytes or strings reader")
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("httpletter: encode: GetBody: %w", err)
		}
		defer body.Close()
		// base64 grows the body by 4/3: refuse before reading it all.
		limit := int64(deadletter.MaxPayloadBytes) * 3 / 4
		b, err := io.ReadAll(io.LimitReader(body, limit+1))
		if err != nil {
			return nil, fmt.Errorf("httpletter: encode: read the body: %w", err)
		}
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("httpletter: encode: the body is over %d bytes, too large for a letter (at most %d bytes of payload): keep it elsewhere", limit, deadletter.MaxPayloadBytes)
		}
		r.Body = b
	}
	p, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("httpletter: encode: %w", err)
	}
	if len(p) > deadletter.MaxPayloadBytes {
		return nil, fmt.Errorf("httpletter: encode: the request takes %d bytes, more than a letter holds (%d)", len(p), deadletter.MaxPayloadBytes)
	}
	return p, nil
}

// fields returns the fields of h (a header or a trailer) that a letter
// keeps, nil if none. Names that differ only in case are one field (RFC
// 9110 §5.1), which net/http sends as several lines, the names in byte
// order: the letter keeps their values under the canonical name in that
// order, as the server read them.
func (e Encoder) fields(h http.Header, kind string) (http.Header, error) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var out http.Header
	for _, name := range names {
		vs := h[name]
		c := http.CanonicalHeaderKey(name)
		if kept(c) && !e.dropHeader(c) {
			if !utf8.ValidString(c) || slices.ContainsFunc(vs, notUTF8) {
				return nil, fmt.Errorf("httpletter: encode: %s %q has a name or value that is not UTF-8 (%q): a letter is JSON text and cannot keep its bytes", kind, clip(c), clip(strings.Join(vs, ", ")))
			}
			if out == nil {
				out = http.Header{}
			}
			out[c] = append(out[c], vs...)
		}
	}
	return out, nil
}

// sendsTrailer reports whether net/http sends req's trailer: it has one,
// and a body sent chunked (of unknown length, or so asked).
func sendsTrailer(req *http.Request) bool {
	return len(req.Trailer) > 0 && req.Body != nil && req.Body != http.NoBody &&
		(req.ContentLength <= 0 || slices.Contains(req.TransferEncoding, "chunked"))
}

// notUTF8 reports whether s is not valid UTF-8.
func notUTF8(s string) bool { return !utf8.ValidString(s) }

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// Letter returns a letter for req in queue: its payload is Encode's, its
// Key the request's Idempotency-Key (or X-Idempotency-Key; empty if it has
// neither). The caller passes it to deadletter.Capture with the error that
// ended the retries; Capture does both and takes the key that an httpretry
// client created.
func Letter(queue string, req *http.Request) (deadletter.Letter, error) {
	return Encoder{}.Letter(queue, req)
}

// Letter returns a letter for req in queue, without its credentials (see
// the package-level Letter).
func (e Encoder) Letter(queue string, req *http.Request) (deadletter.Letter, error) {
	p, err := e.Encode(req)
	if err != nil {
		return deadletter.Letter{}, err
	}
	return deadletter.Letter{Queue: queue, Key: keyOf(req.Header), Payload: p}, nil
}

// keyOf returns the idempotency key h carries.
func keyOf(h http.Header) string {
	if k := h.Get(header.IdempotencyKey); k != "" {
		return k
	}
	return h.Get(header.XIdempotencyKey)
}

// Capture keeps req as a letter of queue in s when the call that sent it
// failed in a way a later redrive may fix: err is not nil (a transport
// error, or an *httpretry.Error or *retry.Error that ended the retries), or
// resp has a status that asks to try again (408, 409, 429, 500, 502, 503,
// 504: an httpretry client hands over the last response of retries that
// ended on one). It returns false, keeping nothing, for a response that
// completed the call or refused it for good (any other status), and when
// the caller cancelled the request's context (the caller stopped, the work
// did not fail). A call whose context's deadline passed ran out of time
// and is kept, with Reason "deadline".
//
// The letter's Reason and Attempts come from the error, or from the status
// ("status 503") and the last attempt's Attempt-Count header. Its Key is
// the key the call's attempts carried: the request's own, or the one an
// httpretry client created (httpretry.KeyAuto), read from the error
// (*httpretry.Error's Key) or from the response's request; so the redrive
// sends the key the server may have executed the request under. Its Error
// is the error's message with every credential of req in it (the URL's
// userinfo, the values of the dropped headers and query parameters)
// replaced by "xxxxx", and any other URL it quotes (a redirect's) without
// its userinfo and the values of the dropped query parameters. resp's body
// is left to the caller.
//
// A request whose body has no GetBody (a plain io.Reader), read by the
// call, is kept with the body that the response's request can give again:
// an httpretry client buffers such a body to replay it. Without a
// response (the call ended on an error), such a request is refused, as
// Encode refuses it: build it with a bytes or strings reader.
func Capture(ctx context.Context, s deadletter.Store, queue string, req *http.Request, resp *http.Response, err error, now time.Time) (deadletter.Letter, bool, error) {
	return Encoder{}.Capture(ctx, s, queue, req, resp, err, now)
}

// Capture keeps req as a letter of queue in s when a redrive may fix the
// call's outcome, without its credentials (see the package-level Capture).
func (e Encoder) Capture(ctx context.Context, s deadletter.Store, queue string, req *http.Request, resp *http.Response, err error, now time.Time) (deadletter.Letter, bool, error) {
	if err == nil && (resp == nil || !again(resp.StatusCode)) {
		return deadletter.Letter{}, false, nil
	}
	// A call whose context was cancelled is the caller's stop, not a
	// failure of the work; one whose deadline passed ran out of time, as
	// other calls run out of retries, and is kept.
	deadline := false
	if err != nil {
		switch cerr := req.Context().Err(); {
		case errors.Is(cerr, context.DeadlineExceeded):
			deadline = true
		case cerr != nil:
			return deadletter.Letter{}, false, nil
		}
	}
	if err == nil && resp.Request != nil && resp.Request.GetBody != nil && req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
		// The caller's body cannot be read again, and was read by now; a
		// transport that buffered it to replay it (httpretry) gave the
		// attempts' request a GetBody: keep the body they sent.
		sent := req.WithContext(req.Context())
		sent.GetBody = resp.Request.GetBody
		req = sent
	}
	l, lerr := e.Letter(queue, req)
	if lerr != nil {
		return l, false, lerr
	}
	var he *httpretry.Error
	switch {
	case err == nil:
		// The attempts an httpretry client made are in the last attempt's
		// Attempt-Count header, and its key in its Idempotency-Key.
		se := &StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: resp.StatusCode, Status: resp.Status}
		l.Reason, err = "status "+strconv.Itoa(resp.StatusCode), se
		if resp.Request != nil {
			if n, cerr := strconv.Atoi(resp.Request.Header.Get(header.AttemptCount)); cerr == nil && n > 0 {
				l.Attempts = n
			}
			if l.Key == "" {
				l.Key = keyOf(resp.Request.Header)
			}
		}
	case errors.As(err, &he):
		l.Reason, l.Attempts = he.Reason.String(), he.Attempts
		if l.Key == "" {
			l.Key = he.Key
		}
	}
	if deadline {
		l.Reason = retry.ReasonDeadline.String()
	}
	l.Error = fit(e.redact(req, err.Error()))
	l, err = deadletter.Capture(ctx, s, l, err, now)
	return l, err == nil, err
}

// fit returns msg as a store keeps it, within deadletter.MaxErrorBytes.
func fit(msg string) string {
	msg = deadletter.Message(msg)
	if len(msg) > deadletter.MaxErrorBytes {
		msg = strings.ToValidUTF8(msg[:deadletter.MaxErrorBytes], "") // drops a rune cut in two
	}
	return msg
}

// again reports whether a status asks the client to try again later.
func again(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
