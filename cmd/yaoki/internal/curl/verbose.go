package curl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// verboseTransport writes what curl -v writes for every attempt it sends:
// the request line and headers as "> " lines, the response's status line
// and headers as "< " lines. It sits under httpretry.Transport, so it sees
// each attempt with the headers the retrying transport added
// (Attempt-Count, Idempotency-Key).
type verboseTransport struct {
	base http.RoundTripper
	w    *lockedWriter
}

func (v *verboseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var b strings.Builder
	target := req.URL.RequestURI()
	fmt.Fprintf(&b, "> %s %s HTTP/1.1\n", req.Method, target)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	fmt.Fprintf(&b, "> Host: %s\n", host)
	writeHeaderLines(&b, "> ", req.Header)
	if req.ContentLength > 0 {
		fmt.Fprintf(&b, "> Content-Length: %d\n", req.ContentLength)
	}
	b.WriteString(">\n")
	v.w.write(b.String())
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		v.w.write(fmt.Sprintf("* %s\n", lastMessage(err)))
		return resp, err
	}
	b.Reset()
	fmt.Fprintf(&b, "< %s %s\n", resp.Proto, resp.Status)
	writeHeaderLines(&b, "< ", resp.Header)
	b.WriteString("<\n")
	v.w.write(b.String())
	return resp, nil
}

func (v *verboseTransport) CloseIdleConnections() {
	if ci, ok := v.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// writeHeaderLines writes h sorted by name, one "prefix Name: value" line
// per value. Headers with an empty value are not sent, so not written.
func writeHeaderLines(b *strings.Builder, prefix string, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range h[k] {
			if v == "" && prefix == "> " {
				continue
			}
			fmt.Fprintf(b, "%s%s: %s\n", prefix, k, v)
		}
	}
}

// lockedWriter serialises the lines of the verbose transport and of the
// observer, which may run on different goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s)
}

// httpObserver counts attempts and retries, remembers why the loop gave
// up, and with -v writes each attempt's outcome and each retry decision
// as curl-style "* " lines.
type httpObserver struct {
	w       *lockedWriter
	verbose bool
	limit   string       // the attempt limit, "unlimited" or a number
	window  *retryWindow // --retry-max-time's, nil without it

	mu      sync.Mutex
	n       int // attempts of the current hop
	total   int // attempts of every hop
	retries int
	reason  string
	gaveErr error // the GaveUp event's error (a *retry.Error)
}

func (h *httpObserver) Observe(_ context.Context, e event.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case event.AttemptStart:
		if e.Attempt == 1 {
			h.reason = "" // a new hop (-L): its own loop
		}
		if h.verbose {
			h.w.write(fmt.Sprintf("* attempt %d of %s\n", e.Attempt, h.limit))
		}
	case event.AttemptEnd:
		h.n = e.Attempt
		h.total++
		if !h.verbose {
			return
		}
		what := ""
		switch {
		case e.Status > 0:
			what = fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
		case e.Err != nil:
			what = "error: " + lastMessage(e.Err)
		}
		h.w.write(fmt.Sprintf("* attempt %d: %s in %s\n", e.Attempt, what, flags.SecondsText(e.Duration)))
	case event.RetryScheduled:
		if e.Source == event.RateLimit { // the rate limiter holds attempt e.Attempt back: no retry
			if h.verbose {
				h.w.write(fmt.Sprintf("* throttled: waiting %s before attempt %d for the client-side rate limiter\n", flags.SecondsText(e.Wait), e.Attempt))
			}
			return
		}
		h.retries++
		if h.verbose {
			src := "backoff"
			if e.Source == event.ServerHint {
				src = "server (Retry-After or rate-limit reset)"
			}
			h.w.write(fmt.Sprintf("* retrying: waiting %s before attempt %d, from %s\n", flags.SecondsText(e.Wait), e.Attempt+1, src))
		}
	case event.Hedge:
		if h.verbose {
			h.w.write(fmt.Sprintf("* hedging: no answer after %s, attempt %d sent beside the others\n", flags.SecondsText(e.Wait), e.Attempt))
		}
	case event.HedgeWon:
		if h.verbose {
			h.w.write(fmt.Sprintf("* hedge won: attempt %d answered first; the others are cancelled\n", e.Attempt))
		}
	case event.HedgeRefused:
		if h.verbose {
			h.w.write(fmt.Sprintf("* hedge not sent: %s\n", strings.ReplaceAll(e.Reason, "_", " ")))
		}
	case event.GaveUp:
		h.reason, h.gaveErr = e.Reason, e.Err
		if h.verbose {
			why := strings.ReplaceAll(e.Reason, "_", " ")
			if w := h.window.why(); w != "" && e.Reason == retry.ReasonPermanent.Key() {
				why = w
			}
			h.w.write(fmt.Sprintf("* stopped after %d attempt%s: %s\n", e.Attempt, cli.Plural(e.Attempt), why))
		}
	}
}

// deadlineWhy says why the loop gave up on the deadline when it did so
// before the deadline passed, because the next wait would have ended
// after it: "the server's wait (Retry-After) 5.000s would end after it
// (1.500s left)"; "" otherwise.
func (h *httpObserver) deadlineWhy() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var re *retry.Error
	if !errors.As(h.gaveErr, &re) || re.Reason != retry.ReasonDeadline || re.Cause != nil || re.Wait <= 0 {
		return ""
	}
	src := "the backoff's wait"
	switch re.Source {
	case event.ServerHint:
		src = "the server's wait (Retry-After)"
	case event.RateLimit:
		src = "the rate limiter's wait"
	}
	return fmt.Sprintf("%s %s would end after it (%s left)", src, flags.SecondsText(re.Wait), flags.SecondsText(re.Limit))
}

func (h *httpObserver) gaveUp() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

// counts returns the attempts of the last hop, of all hops, and the
// retries made.
func (h *httpObserver) counts() (last, total, retries int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.total, h.retries
}
