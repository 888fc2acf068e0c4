package curl

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// checkRange reads -r's RANGE as curl 7.88 reads it: digits without a
// dash are a start ("500" is "500-", with a warning), a range with other
// characters than digits, '-' and ',' is sent with a warning (the server
// decides), a start too large for 64 bits is refused (exit 2), as curl
// refuses it. A control character is refused (it would end the header).
func (o *httpOptions) checkRange(w io.Writer) error {
	r := o.byteRange
	if strings.IndexFunc(r, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
		return cli.Usagef("-r %q: a range cannot hold control characters; want START-END, START-, -SUFFIX or several of them with ',' (e.g. 0-499)", r)
	}
	if r != "" && r[0] >= '0' && r[0] <= '9' && !strings.Contains(r, "-") {
		n, ok, overflow := leadingInt(r)
		if !ok || overflow {
			return cli.Usagef("-r %s: the start is too large: want a byte offset below 2^63, such as 0-499 or 500-", r)
		}
		o.byteRange = fmt.Sprintf("%d-", n)
		o.say(w, "-r %s: a range has a dash: sending %s (from byte %d to the end), as curl does", r, o.byteRange, n)
		return nil
	}
	if strings.IndexFunc(r, func(c rune) bool { return (c < '0' || c > '9') && c != '-' && c != ',' }) >= 0 {
		o.say(w, "-r %s: a range holds digits, '-' and ',' only (START-END, START-, -SUFFIX); sent as given, as curl sends it: the server decides", r)
	}
	return nil
}

// setRange sets the header -r asks for, as curl 7.88 sets it: a request
// with a body (-d, --json, -T, but not -F) gets "Content-Range: bytes
// RANGE/SIZE" (SIZE -1 for -T's stdin, which curl sends chunked), any
// other "Range: bytes=RANGE". -H's Range or Content-Range replace it.
func (o *httpOptions) setRange(req *http.Request, hasBody bool) {
	switch {
	case !o.rangeSet || o.formType != "":
	case o.upload == "-":
		req.Header.Set("Content-Range", "bytes "+o.byteRange+"/-1")
	case o.upload != "" || hasBody:
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %s/%d", o.byteRange, req.ContentLength))
	default:
		req.Header.Set("Range", "bytes="+o.byteRange)
	}
}

// rangeOnRedirect sets -r's header on the request that follows a
// redirect: one without a body (a 301, 302 or 303 drops it) asks for
// "Range: bytes=RANGE" in place of Content-Range, as curl does; -H's
// are kept.
func (o *httpOptions) rangeOnRedirect(req *http.Request) {
	if !o.rangeSet || req.Body != nil && req.Body != http.NoBody {
		return
	}
	if !o.givenHeader("Content-Range") {
		req.Header.Del("Content-Range")
	}
	if !o.givenHeader("Range") {
		req.Header.Set("Range", "bytes="+o.byteRange)
	}
}

// givenHeader reports whether -H names the header (to send, empty or
// removed).
func (o *httpOptions) givenHeader(name string) bool {
	for _, h := range o.headers {
		if n, _, _ := cutHeader(h); strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
