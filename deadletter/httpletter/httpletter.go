// Package httpletter keeps HTTP requests as dead letters and redrives them:
// Encode turns a request that ran out of retries into a letter's payload (a
// JSON document an operator can read), and Handler sends it again, once per
// redrive, with the same Idempotency-Key, so that a server behind the
// idempotency middleware executes it once however often it is redriven.
//
// Credentials are not kept: Encode drops Authorization, Proxy-Authorization
// and Cookie, so that a dead-letter table never holds a token that outlives
// its use; the redrive's client (or Handler's prepare function) adds fresh
// ones.
package httpletter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// KeyHeader is the header that carries a letter's Key on every redrive.
const KeyHeader = "Idempotency-Key"

// kept reports whether Encode keeps the header name (canonical): not
// credentials, nor what the transport sets on every request itself.
func kept(name string) bool {
	switch name {
	case "Authorization", "Proxy-Authorization", "Cookie",
		"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Proxy-Connection", "Content-Length", "Attempt-Count":
		return false
	}
	return true
}

// Request is a request as a letter keeps it.
type Request struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"` // base64 in the JSON
}

// Encode returns req as a letter's payload. It reads the body through
// req.GetBody, so that req itself stays unread; a request with a body but no
// GetBody (its body may have been sent already) is refused, as is a body
// that would make the payload larger than deadletter.MaxPayloadBytes.
func Encode(req *http.Request) ([]byte, error) {
	if req.URL == nil || !req.URL.IsAbs() {
		return nil, fmt.Errorf("httpletter: encode: the request's URL %q is not absolute: want scheme and host", urlString(req.URL))
	}
	r := Request{Method: req.Method, URL: req.URL.String()}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	for name, vs := range req.Header {
		if kept(http.CanonicalHeaderKey(name)) {
			if r.Header == nil {
				r.Header = http.Header{}
			}
			r.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
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

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// Letter returns a letter for req in queue: its payload is Encode's, its
// Key the request's Idempotency-Key (empty if it has none). The caller
// passes it to deadletter.Capture with the error that ended the retries.
func Letter(queue string, req *http.Request) (deadletter.Letter, error) {
	p, err := Encode(req)
	if err != nil {
		return deadletter.Letter{}, err
	}
	return deadletter.Letter{Queue: queue, Key: req.Header.Get(KeyHeader), Payload: p}, nil
}

// Capture keeps req as a letter of queue in s when the call that sent it
// failed in a way a later redrive may fix: err is not nil (a transport
// error, or an *httpretry.Error or *retry.Error that ended the retries), or
// resp has a status that asks to try again (408, 409, 429, 500, 502, 503,
// 504: an httpretry client hands over the last response of retries that
// ended on one). It returns false, keeping nothing, for a response that
// completed the call or refused it for good (any other status), and when
// the caller's own context ended (the caller stopped, the work did not
// fail). The letter's Reason and Attempts come from the error, or from the
// status ("status 503"); its Key is the request's Idempotency-Key. resp's
// body is left to the caller.
func Capture(ctx context.Context, s deadletter.Store, queue string, req *http.Request, resp *http.Response, err error, now time.Time) (deadletter.Letter, bool, error) {
	if err == nil && (resp == nil || !again(resp.StatusCode)) {
		return deadletter.Letter{}, false, nil
	}
	if err != nil && req.Context().Err() != nil {
		return deadletter.Letter{}, false, nil
	}
	l, lerr := Letter(queue, req)
	if lerr != nil {
		return l, false, lerr
	}
	var he *httpretry.Error
	switch {
	case err == nil:
		// The attempts an httpretry client made are in the last attempt's
		// Attempt-Count header.
		se := &StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: resp.StatusCode, Status: resp.Status}
		l.Reason, err = "status "+strconv.Itoa(resp.StatusCode), se
		if resp.Request != nil {
			if n, cerr := strconv.Atoi(resp.Request.Header.Get(httpretry.DefaultAttemptHeader)); cerr == nil && n > 0 {
				l.Attempts = n
			}
		}
	case errors.As(err, &he):
		l.Reason, l.Attempts = he.Reason.String(), he.Attempts
	}
	l, err = deadletter.Capture(ctx, s, l, err, now)
	return l, err == nil, err
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

// Decode parses a payload that Encode made. It refuses, saying what is
// wrong, a payload that is not such a document, a method that is not an
// HTTP token, a URL that is not absolute http or https, and a header name
// or value that net/http would not send.
func Decode(payload []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("httpletter: decode: not a request document: %w", err)
	}
	if dec.More() {
		return Request{}, errors.New("httpletter: decode: data after the request document")
	}
	if !token(r.Method) {
		return Request{}, fmt.Errorf("httpletter: decode: method %q is not an HTTP token", clip(r.Method))
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Request{}, fmt.Errorf("httpletter: decode: URL %q: want an absolute http or https URL", clip(r.URL))
	}
	for name, vs := range r.Header {
		if !token(name) {
			return Request{}, fmt.Errorf("httpletter: decode: header name %q is not an HTTP token", clip(name))
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return Request{}, fmt.Errorf("httpletter: decode: header %s has a value with CR, LF or NUL", name)
			}
		}
	}
	return r, nil
}

// token reports whether s is an RFC 9110 token.
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// New returns r as a request to send with ctx, with GetBody set.
func (r Request) New(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, fmt.Errorf("httpletter: %w", err)
	}
	for name, vs := range r.Header {
		req.Header[name] = append([]string(nil), vs...)
	}
	return req, nil
}

// Handler returns a deadletter.Handler that sends a letter's request with
// client (http.DefaultClient if nil), after prepare (if set) has had its say
// (to add credentials, say); the letter's Key, if any, goes in the
// Idempotency-Key header. The outcome, by the response:
//
//   - 2xx and 3xx: done, the letter is deleted;
//   - 408, 409 (the same key still running on the server), 429, 500, 502,
//     503, 504, and transport errors: failed, redriven later, not before
//     the server's Retry-After (or rate-limit reset);
//   - any other status (400, 404, 422, 501...): permanent, the letter is
//     parked for an operator.
//
// A payload that Decode refuses is permanent too. Every response body is
// drained (up to 64 KiB) and closed.
func Handler(client *http.Client, prepare func(*http.Request) error) deadletter.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, l deadletter.Letter) error {
		r, err := Decode(l.Payload)
		if err != nil {
			return retry.Permanent(fmt.Errorf("letter %s: %w", l.ID, err))
		}
		req, err := r.New(ctx)
		if err != nil {
			return retry.Permanent(err)
		}
		if l.Key != "" {
			req.Header.Set(KeyHeader, l.Key)
		}
		if prepare != nil {
			if err := prepare(req); err != nil {
				return fmt.Errorf("httpletter: prepare %s %s: %w", req.Method, req.URL.Redacted(), err)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return outcome(req, resp, time.Now())
	}
}

// StatusError is a redrive's response that did not complete the work
// (status 400 or above). Handler returns it marked with retry.Permanent, or
// with the server's hint (retry.After), as the status asks.
type StatusError struct {
	Method, URL string // the request, its URL without a password
	Code        int    // the status code
	Status      string // the status line, e.g. "503 Service Unavailable"
}

// Error says which request got which status, e.g. "httpletter: POST
// https://partner.example/charges: 503 Service Unavailable".
func (e *StatusError) Error() string {
	return fmt.Sprintf("httpletter: %s %s: %s", e.Method, e.URL, e.Status)
}

// outcome classifies a redrive's response at now.
func outcome(req *http.Request, resp *http.Response, now time.Time) error {
	if resp.StatusCode < 400 {
		return nil
	}
	se := &StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: resp.StatusCode, Status: resp.Status}
	if again(resp.StatusCode) {
		if d, ok := httpretry.ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return retry.After(se, d)
		}
		if d, ok := httpretry.RateLimitReset(resp.Header, now); ok && (resp.StatusCode == 429 || resp.StatusCode == 503) {
			return retry.After(se, d)
		}
		return se
	}
	return retry.Permanent(se)
}
