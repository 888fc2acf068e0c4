// Package httpletter keeps HTTP requests as dead letters and redrives them:
// Encode turns a request that ran out of retries into a letter's payload (a
// JSON document an operator can read), and Handler sends it again, once per
// redrive, with the same Idempotency-Key, so that a server behind the
// idempotency middleware executes it once however often it is redriven.
//
// Credentials are not kept, so that a dead-letter table never holds a
// token that outlives its use; the redrive's client (or Handler's prepare
// function) adds fresh ones. Encode leaves out the URL's userinfo
// (user:password@) and fragment, the fields Authorization,
// Proxy-Authorization, Cookie, Api-Key, X-Api-Key, X-Auth-Token,
// X-Access-Token and X-Amz-Security-Token (of the header and of the
// trailer), and the query parameters api_key, apikey, api-key, access_token,
// client_secret, password, X-Amz-Security-Token, X-Amz-Signature and
// X-Amz-Credential (names compared case-insensitively); an Encoder adds
// the caller's own. Capture also takes them out of the error message it
// keeps. Credentials elsewhere (in the URL's path, in the body) are kept: the
// encoder cannot tell them from data.
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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// Request is a request as a letter keeps it.
type Request struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Host   string      `json:"host,omitempty"` // the Host header when it is not the URL's host
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"` // base64 in the JSON
	// Trailer holds the trailer fields sent after the body; New sends
	// the body chunked when there are any, as a trailer needs.
	Trailer http.Header `json:"trailer,omitempty"`
}

// Decode parses a payload that Encode made. It refuses, saying what is
// wrong, a payload that is not such a document, a method that is not an
// HTTP token, a URL that is not absolute http or https (or whose port is
// not in 1..65535, or whose query holds a space, which would end the
// request target in the request line), a Host with a byte a host cannot
// hold, a header name or value that net/http would not send (a value with
// a control byte other than a tab), a header named twice, in the same
// spelling or in different cases (Encode merges such names into one list
// of values; in a letter written by hand, whose JSON object has no order,
// which values come first is not said, and a JSON decoder keeps only the
// last of two same names, so the writer is asked for one list), a member
// of the document named twice (the last would win), and a framing or hop-by-hop header (Host, Content-Length,
// Transfer-Encoding, Trailer, Connection, Keep-Alive, Proxy-Connection, Te,
// Upgrade), which Encode never keeps and which, sent beside net/http's
// own, would let a proxy in front read one request as two: Handler parks
// such a letter, since no redrive can send it as captured. The trailer is
// held to the same rules. The header and trailer names it returns are
// canonical.
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
	if err := duplicate(payload); err != nil {
		return Request{}, fmt.Errorf("httpletter: decode: %w", err)
	}
	if !token(r.Method) {
		return Request{}, fmt.Errorf("httpletter: decode: method %q is not an HTTP token", clip(r.Method))
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Request{}, fmt.Errorf("httpletter: decode: URL %q: want an absolute http or https URL with a host", clip(r.URL))
	}
	if r.Host != "" && !validHost(r.Host) {
		return Request{}, fmt.Errorf("httpletter: decode: host %q: want a host name or address, with an optional port", clip(r.Host))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Request{}, fmt.Errorf("httpletter: decode: URL %q: port %s out of range: want 1 to 65535", clip(r.URL), clip(p))
		}
	}
	if err := spaceInQuery(u); err != nil {
		return Request{}, fmt.Errorf("httpletter: decode: %w", err)
	}
	if r.Header, err = canonicalCopy(r.Header, "header"); err != nil {
		return Request{}, fmt.Errorf("httpletter: decode: %w", err)
	}
	if r.Trailer, err = canonicalCopy(r.Trailer, "trailer field"); err != nil {
		return Request{}, fmt.Errorf("httpletter: decode: %w", err)
	}
	return r, nil
}

// canonicalCopy checks h (see canonical) and returns it with its names
// canonical: h itself if they are already.
func canonicalCopy(h http.Header, kind string) (http.Header, error) {
	ok, err := canonical(h, nil, kind)
	if err != nil || ok {
		return h, err
	}
	c := make(http.Header, len(h))
	if _, err := canonical(h, c, kind); err != nil {
		return nil, err
	}
	return c, nil
}

// duplicate returns an error naming a member of the request document, or
// a name of its header or trailer, that payload (a document Decode read)
// has twice: encoding/json keeps the last one's value and drops the
// others' (and matches the members' names case-insensitively).
func duplicate(payload []byte) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	var members []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		m, _ := t.(string)
		if slices.ContainsFunc(members, func(s string) bool { return strings.EqualFold(s, m) }) {
			return fmt.Errorf("the document has %q twice: want each member once", clip(m))
		}
		members = append(members, m)
		var kind string
		switch {
		case strings.EqualFold(m, "header"):
			kind = "header"
		case strings.EqualFold(m, "trailer"):
			kind = "trailer field"
		default:
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		}
		if t, err = dec.Token(); err != nil || t != json.Delim('{') {
			continue // null; or an error Decode has reported
		}
		names := map[string]bool{}
		for dec.More() {
			if t, err = dec.Token(); err != nil {
				return err
			}
			n, _ := t.(string)
			if names[n] {
				return fmt.Errorf("%s %s is named twice: want each name once, with all its values in one list in the order to send them", kind, clip(n))
			}
			names[n] = true
			if err := skipValue(dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // }
			return err
		}
	}
	return nil
}

// skipValue reads the next value of dec.
func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}

// spaceInQuery refuses a URL whose query holds a space: net/http writes
// the query into the request line as it is, where a space ends the request
// target ("GET /?a HTTP/1.0 HTTP/1.1"), and servers and proxies read the
// rest each their own way.
func spaceInQuery(u *url.URL) error {
	if i := strings.IndexByte(u.RawQuery, ' '); i >= 0 {
		return fmt.Errorf("URL %q: its query has a space at %d, which would end the request target in the request line: want it encoded (%%20 or +)", clip(u.Redacted()), i)
	}
	return nil
}

// canonical checks h: each name an HTTP token, none the request's framing
// or hop-by-hop (framing), no two the same header, no value with a control
// byte other than a tab. It copies h into into with the names canonical
// (net/http sends a header map's names as they are: an "idempotency-key"
// would go beside the letter's Idempotency-Key); with a nil into, it copies
// nothing and reports whether every name is canonical already.
func canonical(h, into http.Header, kind string) (allCanonical bool, err error) {
	allCanonical = true
	for name, vs := range h {
		if !token(name) {
			return false, fmt.Errorf("%s name %q is not an HTTP token", kind, clip(name))
		}
		c := http.CanonicalHeaderKey(name)
		if framing(c) {
			return false, fmt.Errorf("%s %s: a letter holds no framing or hop-by-hop header (Host, Content-Length, Transfer-Encoding, Trailer, Connection, Keep-Alive, Proxy-Connection, Te, Upgrade): net/http writes the framing from the request, and the host goes in the letter's host field", kind, clip(name))
		}
		for _, v := range vs {
			if i := strings.IndexFunc(v, control); i >= 0 {
				return false, fmt.Errorf("%s %s has a value with the control byte %#02x at %d: want visible text, spaces and tabs", kind, clip(name), v[i], i)
			}
		}
		allCanonical = allCanonical && c == name
		if into != nil {
			if _, dup := into[c]; dup {
				return false, fmt.Errorf("%s %s is named twice, in different cases: want each name once, with all its values in one list in the order to send them", kind, c)
			}
			into[c] = append([]string(nil), vs...)
		}
	}
	return allCanonical, nil
}

// validHost reports whether net/http sends h as a Host header: the bytes
// that golang.org/x/net/http/httpguts.ValidHostHeader accepts.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0) {
			return false
		}
	}
	return true
}

// control reports whether r is a control character that a header value
// cannot hold (RFC 9110 §5.5: anything but a tab below 0x20, and DEL).
func control(r rune) bool {
	return (r < ' ' && r != '\t') || r == 0x7f
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

// New returns r as a request to send with ctx, with GetBody set. It
// refuses what Decode refuses in r's header, trailer and URL's query (New
// is also for a Request that Decode did not make), and sends the header
// and trailer names in canonical form. With a trailer, the body (empty or
// not) is sent chunked, its length unknown (ContentLength -1), since
// net/http sends a trailer only after a chunked body.
func (r Request) New(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, fmt.Errorf("httpletter: %w", err)
	}
	if err := spaceInQuery(req.URL); err != nil {
		return nil, fmt.Errorf("httpletter: %w", err)
	}
	if _, err := canonical(r.Header, req.Header, "header"); err != nil {
		return nil, fmt.Errorf("httpletter: %w", err)
	}
	if len(r.Trailer) > 0 {
		req.Trailer = make(http.Header, len(r.Trailer))
		if _, err := canonical(r.Trailer, req.Trailer, "trailer field"); err != nil {
			return nil, fmt.Errorf("httpletter: %w", err)
		}
		// net/http sends a trailer only after a body sent chunked: one
		// of unknown length, empty or not.
		if req.Body == nil {
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(nil)), nil }
			req.Body, _ = req.GetBody()
		}
		req.ContentLength = -1
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	return req, nil
}

// Handler returns a deadletter.Handler that sends a letter's request with
// client (http.DefaultClient if nil), after prepare (if set) has had its say
// (to add credentials, say); the letter's Key, if any, goes in the
// Idempotency-Key header. The outcome, by the response:
//
//   - 2xx, 303 (See Other: executed, its result elsewhere) and 304 (a
//     conditional request satisfied): done, the letter is deleted;
//   - another 3xx, a redirect that client did not follow (one whose
//     CheckRedirect returns http.ErrUseLastResponse, or past its limit):
//     permanent, the letter is parked, its error naming where the redirect
//     points; the request was not executed where it was sent; so is a
//     request that the client followed through a 301 or 302 with a GET
//     without the body (net/http does for methods other than GET and
//     HEAD), whatever the GET got: the request was executed nowhere;
//   - 408, 409 (the same key still running on the server), 429, 500, 502,
//     503, 504, and transport errors: failed, redriven later, not before
//     the server's Retry-After (or rate-limit reset), however far ahead
//     (one past what a time.Duration holds: about 292 years);
//   - any other status (400, 404, 422, 501...): permanent, the letter is
//     parked for an operator. Without prepare, a 401 or 407 says in its
//     error that the letter holds no credentials and that prepare adds them.
//
// The error, which the redriver stores in the letter, holds no credential
// of the request sent: its URL is written without userinfo, without the
// listed query parameters and without those that prepare added, and the
// values of these and of the credential headers are replaced by "xxxxx";
// so are those of a URL it was redirected to.
//
// A payload that Decode refuses, or a Key with a control byte (which no
// header value holds), is permanent too, and is not counted as an attempt
// (deadletter.ErrNotAttempted): nothing was sent. So is a request
// that prepare refused, which is tried again later. Every response body is
// drained (up to 64 KiB) and closed.
func Handler(client *http.Client, prepare func(*http.Request) error) deadletter.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, l deadletter.Letter) error {
		r, err := Decode(l.Payload)
		if err != nil {
			return retry.Permanent(fmt.Errorf("letter %s: %w: %w", l.ID, deadletter.ErrNotAttempted, err))
		}
		req, err := r.New(ctx)
		if err != nil {
			return retry.Permanent(fmt.Errorf("%w: %w", deadletter.ErrNotAttempted, err))
		}
		if i := strings.IndexFunc(l.Key, control); i >= 0 {
			return retry.Permanent(fmt.Errorf("httpletter: letter %s: %w: its Key has the control byte %#02x at %d, which an Idempotency-Key header cannot hold: want visible text, spaces and tabs", l.ID, deadletter.ErrNotAttempted, l.Key[i], i))
		}
		if l.Key != "" {
			req.Header.Set(header.IdempotencyKey, l.Key)
		}
		query := req.URL.RawQuery // the letter's, before prepare's credentials
		if prepare != nil {
			target := req.URL.String()
			if err := prepare(req); err != nil {
				return hide(req, query, fmt.Errorf("httpletter: prepare %s %s: %w: %w", req.Method, target, deadletter.ErrNotAttempted, err))
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return hide(req, query, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		err = outcome(req, resp, time.Now())
		if turned := turnedIntoGet(resp); err == nil && turned != nil {
			err = retry.Permanent(&StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: turned.StatusCode, Status: turned.Status,
				Location: turned.Header.Get("Location"), Followed: true})
		}
		var se *StatusError
		if prepare == nil && errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusProxyAuthRequired) {
			err = retry.Permanent(fmt.Errorf("%w (the letter holds no credentials, which httpletter leaves out: the redrive must add fresh ones, with Handler's prepare function)", se))
		}
		return hide(req, query, err)
	}
}

// StatusError is a redrive's response that did not complete the work: a
// status of 400 or above, or a redirect that the client did not follow (a
// 3xx other than 303 and 304) or followed with a GET without the body (a
// 301 or 302 to another method). Handler returns it marked with
// retry.Permanent, or with the server's hint (retry.After), as the status
// asks.
type StatusError struct {
	Method, URL string // the request, its URL without a password
	Code        int    // the status code
	Status      string // the status line, e.g. "503 Service Unavailable"
	// Location is where a redirect not followed points, as the server
	// wrote it; empty for other statuses.
	Location string
	// Followed says that the client followed the redirect, with a GET
	// without the body (a 301 or 302 to another method than GET and
	// HEAD), so that the request was executed nowhere.
	Followed bool
}

// Error says which request got which status, e.g. "httpletter: POST
// https://partner.example/charges: 503 Service Unavailable", and where a
// redirect not followed points.
func (e *StatusError) Error() string {
	if e.Code >= 300 && e.Code < 400 {
		to := ""
		if e.Location != "" {
			to = " to " + e.Location
		}
		if e.Followed {
			return fmt.Sprintf("httpletter: %s %s: %s%s, followed as a GET without the body: the request was not executed", e.Method, e.URL, e.Status, to)
		}
		return fmt.Sprintf("httpletter: %s %s: %s%s, not followed: the request was not executed there", e.Method, e.URL, e.Status, to)
	}
	return fmt.Sprintf("httpletter: %s %s: %s", e.Method, e.URL, e.Status)
}

// turnedIntoGet returns the redirect on the way to resp, if any, that
// net/http followed with a GET without the body: a 301 or 302 answered to
// a method other than GET and HEAD. The request was then executed nowhere
// (a 303 says that it was, and points to its result).
func turnedIntoGet(resp *http.Response) *http.Response {
	for hop := resp.Request; hop != nil && hop.Response != nil; hop = hop.Response.Request {
		red := hop.Response
		if (red.StatusCode == http.StatusMovedPermanently || red.StatusCode == http.StatusFound) && red.Request != nil &&
			red.Request.Method != http.MethodGet && red.Request.Method != http.MethodHead {
			return red
		}
	}
	return nil
}

// outcome classifies a redrive's response at now.
func outcome(req *http.Request, resp *http.Response, now time.Time) error {
	switch c := resp.StatusCode; {
	case c < 300, c == http.StatusSeeOther, c == http.StatusNotModified:
		return nil
	case c < 400:
		// A redirect the client did not follow: the request was not
		// executed where it was sent.
		return retry.Permanent(&StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: c, Status: resp.Status,
			Location: resp.Header.Get("Location")})
	}
	se := &StatusError{Method: req.Method, URL: req.URL.Redacted(), Code: resp.StatusCode, Status: resp.Status}
	if again(resp.StatusCode) {
		if d, ok := httpretry.ParseRetryAfter(resp.Header.Get(header.RetryAfter), now); ok {
			return retry.After(se, d)
		}
		if d, ok := httpretry.RateLimitReset(resp.Header, now); ok && (resp.StatusCode == 429 || resp.StatusCode == 503) {
			return retry.After(se, d)
		}
		return se
	}
	return retry.Permanent(se)
}
