package curl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// parseContinueAt reads -C's value as curl 7.88 reads it: "-" (auto: from
// where the output file ends), or a byte offset in decimal, after spaces
// and an optional '+'. A negative offset, other characters or an offset
// of 2^63 or more are refused (exit 2), as curl refuses them.
func parseContinueAt(s string) (offset int64, auto bool, err error) {
	if s == "-" {
		return 0, true, nil
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if strings.HasPrefix(t, "-") {
		return 0, false, cli.Usagef("-C %q: want a byte offset ≥ 0 (such as 1024), or - to continue from where the output file ends", s)
	}
	t = strings.TrimPrefix(t, "+")
	if t == "" || strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false, cli.Usagef("-C %q: want a byte offset in decimal digits (such as 1024), or - to continue from where the output file ends", s)
	}
	n, perr := strconv.ParseInt(t, 10, 64)
	if perr != nil {
		return 0, false, cli.Usagef("-C %s: the offset is too large: want a byte offset below 2^63", s)
	}
	return n, false, nil
}

// resumeVerdict is what -C makes of an answer to a GET that asked for
// the bytes from an offset.
type resumeVerdict uint8

const (
	resumeWrite   resumeVerdict = iota // write the body, appended to what is there
	resumeIgnore                       // 416: the range is past the end; write no body (exit 0, 22 with -f)
	resumeDone                         // the whole document is already there: write nothing, exit 0
	resumeRefused                      // the server did not send the part asked for: exit 33
)

// judgeResume decides, as curl 7.88 does, what to do with an answer of
// status to a GET that asked for the bytes from offset (> 0): a 416 is
// taken as no error and its body dropped; an answer whose Content-Range
// starts at offset is written; a Content-Range without a start ("*/10")
// makes the body the whole document, written; without a Content-Range
// that starts at offset, an answer whose Content-Length is offset says
// the document is already whole, any other cannot resume.
func judgeResume(offset int64, status int, contentRange []string, contentLength int64) resumeVerdict {
	if offset <= 0 {
		return resumeWrite
	}
	if status == http.StatusRequestedRangeNotSatisfiable {
		return resumeIgnore
	}
	matched := false
	for _, v := range contentRange {
		start, ok := contentRangeStart(v)
		switch {
		case !ok:
			offset = 0 // no start: curl takes the body as the whole document
		case start == offset:
			matched = true
		}
	}
	switch {
	case offset == 0 || matched:
		return resumeWrite
	case contentLength == offset:
		return resumeDone
	}
	return resumeRefused
}

// contentRangeStart reads the first byte position of a Content-Range
// value as curl reads it: "bytes 4-9/10", "bytes: 4-", "4-" (the first
// digits after anything else); ok is false when an '*' or the end comes
// before any digit. A start too large for 64 bits is -1 (it matches no
// offset).
func contentRangeStart(v string) (start int64, ok bool) {
	i := strings.IndexFunc(v, func(r rune) bool { return r == '*' || r >= '0' && r <= '9' })
	if i < 0 || v[i] == '*' {
		return 0, false
	}
	j := i
	for j < len(v) && v[j] >= '0' && v[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(v[i:j], 10, 64)
	if err != nil {
		return -1, true
	}
	return n, true
}

// resumeState is -C's state over one run's attempts: the offset the next
// attempt asks for, which moves past what the attempts cut short wrote,
// so that a retry continues where the last one stopped instead of asking
// again for bytes already written (curl truncates the file and asks again
// from -C's offset). Safe for concurrent use.
type resumeState struct {
	given  int64  // -C's offset (that of -C -: the file's size)
	ranged bool   // -H Range (or -r without a -C offset) names the range: the attempts keep it
	path   string // -o's file, or "" for stdout
	stdout io.Writer

	mu    sync.Mutex
	from  int64 // what the next attempt asks for
	saved int64 // bytes written by attempts cut short
}

func newResumeState(given int64, ranged bool, path string, stdout io.Writer) *resumeState {
	return &resumeState{given: given, ranged: ranged, path: path, stdout: stdout, from: given}
}

// offset is the byte offset the next attempt asks for.
func (r *resumeState) offset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.from
}

// prepare sets the Range of an attempt to the bytes from the offset, and
// returns that offset; a request with -H Range keeps it.
func (r *resumeState) prepare(req *http.Request) (*http.Request, int64) {
	from := r.offset()
	if r.ranged || from == 0 || req.Method == http.MethodHead {
		return req, from
	}
	req = req.Clone(req.Context())
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	return req, from
}

// open opens the output file for the body: appended to when -C's offset
// is past 0 or an attempt cut short wrote to it, else made anew.
func (r *resumeState) open() (*os.File, error) {
	r.mu.Lock()
	appendTo := r.given > 0 || r.saved > 0
	r.mu.Unlock()
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	return os.OpenFile(r.path, flag, 0o666)
}

// keep writes what came of an answer to an attempt that asked for the
// bytes from asked before its body was cut short, when that is the part
// asked for (so that the next attempt continues after it), and reports
// whether it did.
func (r *resumeState) keep(asked int64, resp *http.Response, data []byte) (bool, error) {
	if r.ranged || len(data) == 0 || resp.StatusCode/100 != 2 {
		return false, nil
	}
	if asked == 0 {
		if resp.StatusCode != http.StatusOK || len(resp.Header.Values("Content-Range")) > 0 {
			return false, nil
		}
	} else if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != asked {
		return false, nil
	}
	if r.path == "" {
		if _, err := r.stdout.Write(data); err != nil {
			return false, err
		}
	} else {
		f, err := r.open()
		if err != nil {
			return false, err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.from > math.MaxInt64-int64(len(data)) {
		return true, nil
	}
	r.from += int64(len(data))
	r.saved += int64(len(data))
	return true, nil
}

// errCannotResume is write's error when the answer to a -C request is
// not the part asked for: curl's exit 33.
var errCannotResume = errors.New("the server does not seem to support byte ranges: cannot resume")

// judge applies -C's verdict to the answer about to be written: it
// reports whether its body is to be left out, or errCannotResume.
func (r *resumeState) judge(resp *http.Response) (noBody bool, err error) {
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return false, nil
	}
	from := r.offset()
	switch judgeResume(from, resp.StatusCode, resp.Header.Values("Content-Range"), resp.ContentLength) {
	case resumeIgnore, resumeDone:
		return true, nil
	case resumeRefused:
		cr := resp.Header.Get("Content-Range")
		if cr == "" {
			cr = "none"
		}
		return true, fmt.Errorf("%w: asked for the bytes from %d, got %s (Content-Range: %s)", errCannotResume, from, resp.Status, cr)
	}
	return false, nil
}

// setupResume reads -C's offset (for "-", the size of -o's file, 0 when
// there is none or the body goes to stdout) and makes the run's
// resumeState: an offset past 0 asks for "Range: bytes=OFFSET-" in place
// of -r's, as curl does.
func (o *httpOptions) setupResume(stdout io.Writer) {
	offset, auto, _ := parseContinueAt(o.continueAt) // checked by check
	path := ""
	if o.output != "" && o.output != "-" {
		path = o.output
	}
	if auto {
		offset = 0
		if st, err := os.Stat(path); path != "" && err == nil && st.Mode().IsRegular() {
			offset = st.Size()
		}
	}
	if offset > 0 {
		o.byteRange, o.rangeSet = fmt.Sprintf("%d-", offset), true
	}
	ranged := o.givenHeader("Range") || o.rangeSet && offset == 0
	o.resume = newResumeState(offset, ranged, path, stdout)
}
