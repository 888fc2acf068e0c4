package retrytest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/header"
)

// Step is one scripted answer of a Server or a RoundTripper: a status with
// headers and a body, or a failure instead of an answer.
type Step struct {
	// Status is the status code answered (100..599); 0 with Fail set.
	Status int
	// Fail, if set, replaces the answer by a failure.
	Fail Failure
	// RetryAfter is the Retry-After header's value, "" for none. It is
	// sent as written, except the forms "date+D", "rfc850+D" and
	// "asctime+D" (D a Go duration, or "-D" for the past), which stand for
	// the moment D from when the answer is made, written as an HTTP-date
	// in the IMF-fixdate, RFC 850 or asctime form.
	RetryAfter string
	// DoNotRetry adds "Do-Not-Retry: true" to the answer.
	DoNotRetry bool
	// Header holds more response headers, in order, as name and value.
	Header [][2]string
	// Body is the response body.
	Body string
	// Delay is how long to wait before answering (or failing).
	Delay time.Duration
	// Cut, with a status, cuts the answer's body after its first CutAfter
	// bytes (a link cut as the answer comes): the Content-Length
	// announces the whole Body, and then a Server closes the connection,
	// a RoundTripper's body read fails with io.ErrUnexpectedEOF, as
	// net/http's does. CutAfter is below len(Body).
	Cut      bool
	CutAfter int
}

// Failure is a way for a scripted attempt to fail without an answer.
type Failure uint8

const (
	// Reset: the connection is reset (RST) before an answer.
	Reset Failure = iota + 1
	// EOF: the connection is closed (FIN) before an answer.
	EOF
	// Refused: the connection is refused (RoundTripper only: a real
	// server that exists cannot refuse).
	Refused
	// Hang: no answer ever; the attempt ends when its context does (or,
	// for a Server, when the client gives up or the server closes).
	Hang
)

var failureNames = [...]string{Reset: "reset", EOF: "eof", Refused: "refused", Hang: "hang"}

// String returns the failure's name in scripts: "reset", "eof",
// "refused" or "hang".
func (f Failure) String() string {
	if int(f) < len(failureNames) && f > 0 {
		return failureNames[f]
	}
	return fmt.Sprintf("Failure(%d)", uint8(f))
}

// ErrScript matches every error of ParseScript.
var ErrScript = errors.New("retrytest: invalid script")

// ScriptError is a script that ParseScript cannot read: which step (from 1;
// 0 for the script as a whole), its text, and what is wrong with it and
// what is accepted. errors.Is(err, ErrScript) is true.
type ScriptError struct {
	Step int    // the step, from 1; 0 for the whole script
	Text string // the step as written
	Msg  string // what is wrong and what is accepted
}

// Error names the step (from 1) and what is wrong with it.
func (e *ScriptError) Error() string {
	if e.Step == 0 {
		return "retrytest: " + e.Msg
	}
	return fmt.Sprintf("retrytest: step %d %q: %s", e.Step, e.Text, e.Msg)
}

// Is matches ErrScript.
func (e *ScriptError) Is(target error) bool { return target == ErrScript }

// ParseScript parses a script: steps separated by commas, each a status
// code or a failure, options after colons, and an optional repeat count:
//
//	script  = step *( "," step )
//	step    = ( status / failure ) *( ":" option ) [ "*" count ]
//	failure = "reset" / "eof" / "refused" / "hang"
//	option  = "retry-after=" value   ; see Step.RetryAfter
//	        / "delay=" duration      ; a Go duration: 10ms, 1.5s
//	        / "body=" text
//	        / "cut=" bytes           ; the body cut after so many bytes
//	        / "header=" name "=" value
//	        / "do-not-retry"
//
// Spaces around steps are ignored; values cannot contain commas, colons or
// asterisks (an HTTP-date has commas and colons: write "date+3s"). After
// the last step, every request is answered 200 with an empty body. For example
// "503,429:retry-after=1,200" answers 503, then 429 with Retry-After: 1,
// then 200; "reset*2,200:body=ok" resets two connections, then answers
// 200 "ok"; "200:body=hello:cut=2,200:body=hello" sends "he" of an answer
// announced as 5 bytes and closes the connection, then answers whole. The error of a bad script, a *ScriptError, says where and what
// is accepted.
func ParseScript(script string) ([]Step, error) {
	var steps []Step
	if strings.TrimSpace(script) == "" {
		return nil, &ScriptError{Msg: `empty script: want steps like "503,429:retry-after=1,200"`}
	}
	for i, item := range strings.Split(script, ",") {
		item = strings.TrimSpace(item)
		count := 1
		if base, n, ok := strings.Cut(item, "*"); ok {
			base, n = strings.TrimSpace(base), strings.TrimSpace(n)
			c, err := strconv.Atoi(n)
			if err != nil || c < 1 || c > 10000 {
				return nil, &ScriptError{Step: i + 1, Text: item, Msg: fmt.Sprintf("repeat count %q: want an integer in 1..10000", n)}
			}
			item, count = base, c
		}
		s, err := parseStep(item)
		if err != nil {
			return nil, &ScriptError{Step: i + 1, Text: item, Msg: err.Error()}
		}
		for range count {
			steps = append(steps, s)
		}
	}
	return steps, nil
}

func parseStep(item string) (Step, error) {
	var s Step
	parts := strings.Split(item, ":")
	head := parts[0]
	switch head {
	case "reset":
		s.Fail = Reset
	case "eof":
		s.Fail = EOF
	case "refused":
		s.Fail = Refused
	case "hang":
		s.Fail = Hang
	default:
		code, err := strconv.Atoi(head)
		if err != nil || len(head) != 3 || code < 100 || code > 599 {
			return s, fmt.Errorf("%q is not a step: want a status code in 100..599 or one of reset, eof, refused, hang", head)
		}
		s.Status = code
	}
	for _, opt := range parts[1:] {
		name, value, hasValue := strings.Cut(opt, "=")
		switch {
		case name == "retry-after" && hasValue:
			if value == "" || strings.ContainsAny(value, "\r\n") {
				return s, errors.New("retry-after needs a value: want retry-after=SECONDS or retry-after=date+DURATION")
			}
			s.RetryAfter = value
		case name == "delay" && hasValue:
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return s, fmt.Errorf("delay %q: want a Go duration ≥ 0, like 10ms", value)
			}
			s.Delay = d
		case name == "body" && hasValue:
			s.Body = value
		case name == "header" && hasValue:
			k, v, ok := strings.Cut(value, "=")
			if !ok || !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
				return s, fmt.Errorf("header %q: want header=Name=value", value)
			}
			s.Header = append(s.Header, [2]string{k, v})
		case name == "do-not-retry" && !hasValue:
			s.DoNotRetry = true
		case name == "cut" && hasValue:
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return s, fmt.Errorf("cut %q: want the bytes of the body sent before the cut, an integer ≥ 0", value)
			}
			s.Cut, s.CutAfter = true, n
		default:
			return s, fmt.Errorf("option %q: want retry-after=V, delay=D, body=T, cut=N, header=N=V or do-not-retry", opt)
		}
	}
	if s.Cut && (s.Fail != 0 || s.CutAfter >= len(s.Body)) {
		return s, fmt.Errorf("cut=%d: want a status with a body longer than the bytes sent before the cut (body=%q has %d)", s.CutAfter, s.Body, len(s.Body))
	}
	return s, nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// String returns the step in script form; ParseScript reads it back.
func (s Step) String() string {
	var b strings.Builder
	if s.Fail != 0 {
		b.WriteString(s.Fail.String())
	} else {
		b.WriteString(strconv.Itoa(s.Status))
	}
	if s.RetryAfter != "" {
		b.WriteString(":retry-after=" + s.RetryAfter)
	}
	if s.Delay != 0 {
		b.WriteString(":delay=" + s.Delay.String())
	}
	if s.Body != "" {
		b.WriteString(":body=" + s.Body)
	}
	if s.Cut {
		b.WriteString(":cut=" + strconv.Itoa(s.CutAfter))
	}
	for _, h := range s.Header {
		b.WriteString(":header=" + h[0] + "=" + h[1])
	}
	if s.DoNotRetry {
		b.WriteString(":do-not-retry")
	}
	return b.String()
}

// FormatScript returns steps as a script that ParseScript reads back.
func FormatScript(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.String()
	}
	return strings.Join(parts, ",")
}

// retryAfter returns the Retry-After value to send at now.
func (s Step) retryAfter(now time.Time) string {
	form, d, ok := strings.Cut(s.RetryAfter, "+")
	if !ok {
		if form, d, ok = strings.Cut(s.RetryAfter, "-"); ok {
			d = "-" + d
		}
	}
	if !ok {
		return s.RetryAfter
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		return s.RetryAfter
	}
	t := now.Add(dur).UTC()
	switch form {
	case "date":
		return t.Format(http.TimeFormat)
	case "rfc850":
		// time.RFC850 would write the zone as "UTC"; an HTTP-date is
		// always in GMT (RFC 9110 §5.6.7).
		return t.Format("Monday, 02-Jan-06 15:04:05 GMT")
	case "asctime":
		return t.Format(time.ANSIC)
	}
	return s.RetryAfter
}

// header returns the step's response headers (without Content-Length).
func (s Step) header(now time.Time) http.Header {
	h := make(http.Header, len(s.Header)+2)
	if s.RetryAfter != "" {
		h.Set(header.RetryAfter, s.retryAfter(now))
	}
	if s.DoNotRetry {
		h.Set(header.DoNotRetry, "true")
	}
	for _, kv := range s.Header {
		h.Add(kv[0], kv[1])
	}
	return h
}

// Attempt is one request as a Server or RoundTripper received it.
type Attempt struct {
	N      int         // its order of arrival, from 1
	Method string      // its method
	URL    string      // its URL (for a Server: path and query)
	Header http.Header // its headers
	Body   []byte      // its body, read in full
	At     time.Time   // when it arrived
	Step   Step        // how it was answered
}

// played is what a RoundTripper and a Server share: the script, and the
// requests it answered. mu also guards the counters of the type that
// embeds it.
type played struct {
	steps []Step

	mu       sync.Mutex
	attempts []Attempt
}

// take records a request that arrived at at and returns its step: the
// script's n-th for the n-th request (from 1), or a 200 once the script is
// over.
func (p *played) take(method, url string, h http.Header, body []byte, at time.Time) Step {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.attempts) + 1
	step := Step{Status: http.StatusOK}
	if n <= len(p.steps) {
		step = p.steps[n-1]
	}
	p.attempts = append(p.attempts, Attempt{N: n, Method: method, URL: url, Header: h.Clone(), Body: body, At: at, Step: step})
	return step
}

// list returns the requests received so far, in order of arrival.
func (p *played) list() []Attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Attempt(nil), p.attempts...)
}
