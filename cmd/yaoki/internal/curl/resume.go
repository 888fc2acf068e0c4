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
// attempt asks for, which moves past what the attempts wrote before they
// ended (a body cut short, or a long body written as it came), so that a
// retry continues where the last one stopped instead of asking again for
// bytes already written (curl truncates the file and asks again from -C's
// offset). Attempts are sequential (-C refuses --hedge-after); safe for
// concurrent use all the same.
type resumeState struct {
	given   int64  // -C's offset (that of -C -: the file's size)
	ranged  bool   // -H Range (or -r without a -C offset) names the range: the attempts keep it
	include bool   // -i: the headers go before the body, so a body is written only once its attempt has ended
	decoded bool   // --compressed: the body is written decoded, so an encoded one only once its attempt has ended
	ifRange bool   // -H If-Range names the validator: the attempts keep it
	restart bool   // no -C: each attempt asks for the whole body again, and what it writes replaces what was written
	path    string // -o's file, or "" for stdout
	stdout  io.Writer

	mu     sync.Mutex
	from   int64 // what the next attempt asks for
	asked  int64 // what the last attempt asked for
	saved  int64 // bytes written before their attempts ended
	inline int64 // of them, those of the last attempt
	// The validator (a strong ETag, or Last-Modified) of the answer whose
	// bytes were written before its attempt ended: the next attempts send
	// it as If-Range, so that a document changed in between is sent
	// whole (and refused) instead of spliced onto the old one's bytes.
	validator string
}

func newResumeState(given int64, ranged, include, decoded, ifRange bool, path string, stdout io.Writer) *resumeState {
	return &resumeState{given: given, ranged: ranged, include: include, decoded: decoded, ifRange: ifRange, path: path, stdout: stdout, from: given, asked: given}
}

// prepare sets the Range of an attempt to the bytes from the offset, and
// returns that offset (0 for each attempt of a restart); a request with
// -H Range keeps it. After an attempt
// wrote bytes, the next ones carry its answer's validator as If-Range
// (unless -H If-Range gives one).
func (r *resumeState) prepare(req *http.Request) (*http.Request, int64) {
	r.mu.Lock()
	if r.restart {
		r.from, r.saved = r.given, 0
	}
	from, validator := r.from, r.validator
	r.asked, r.inline = from, 0
	r.mu.Unlock()
	if r.ranged || from == 0 || req.Method == http.MethodHead {
		return req, from
	}
	req = req.Clone(req.Context())
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	if validator != "" && !r.ifRange {
		req.Header.Set("If-Range", validator)
	}
	return req, from
}

// validatorOf is the validator of resp that If-Range may carry (RFC 9110,
// 13.1.5): its ETag when strong, else its Last-Modified, else "".
func validatorOf(resp *http.Response) string {
	if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		return etag
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		if _, err := http.ParseTime(lm); err == nil {
			return lm
		}
	}
	return ""
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

// makeFile makes -o's file, if missing, when -C continues from an
// offset above 0, as curl 7.88 opens it for appending before its
// transfer: a run that then fails (a refused connection, a 404 with -f)
// leaves it there. A nil r (no -C) makes none.
func (r *resumeState) makeFile() error {
	if r == nil || r.restart || r.path == "" || r.given == 0 {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	return f.Close()
}

// keepable reports whether the body of resp, the answer to an attempt
// that asked for the bytes from asked, may be written before its attempt
// has ended, so that the next attempt continues after what was written:
// it must be the part asked for (a 200 without Content-Range from byte 0,
// or a 206 whose Content-Range starts at asked), written as it came (not
// decoded by --compressed), with no headers to go before it (-i) and no
// range of -H Range or -r to keep.
func (r *resumeState) keepable(asked int64, resp *http.Response) bool {
	if r.ranged || r.include || resp.StatusCode/100 != 2 {
		return false
	}
	if r.decoded && len(resp.Header.Values("Content-Encoding")) > 0 {
		return false
	}
	if asked == 0 {
		return resp.StatusCode == http.StatusOK && len(resp.Header.Values("Content-Range")) == 0
	}
	start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
	return ok && start == asked
}

// errWriteOut is an attempt's error when what it kept could not be
// written: final (curl's exit 23), never retried.
type errWriteOut struct{ err error }

func (e *errWriteOut) Error() string {
	return "failure writing output to destination: " + e.err.Error()
}

func (e *errWriteOut) Unwrap() error { return e.err }

// keeper writes the bytes of an attempt as they come, to -o's file or
// stdout, and moves the offset past each write.
type keeper struct {
	r *resumeState
	w io.Writer
	f *os.File // -o's, or nil
}

// keeper opens the output for the bytes of resp, the current attempt's
// answer.
func (r *resumeState) keeper(resp *http.Response) (*keeper, error) {
	r.mu.Lock()
	if r.validator == "" {
		r.validator = validatorOf(resp)
	}
	r.mu.Unlock()
	if r.path == "" {
		return &keeper{r: r, w: r.stdout}, nil
	}
	f, err := r.open()
	if err != nil {
		return nil, &errWriteOut{err}
	}
	return &keeper{r: r, w: f, f: f}, nil
}

func (k *keeper) Write(p []byte) (int, error) {
	n, err := k.w.Write(p)
	k.r.mu.Lock()
	if k.r.from <= math.MaxInt64-int64(n) {
		k.r.from += int64(n)
	}
	k.r.saved += int64(n)
	k.r.inline += int64(n)
	k.r.mu.Unlock()
	if err != nil {
		return n, &errWriteOut{err}
	}
	return n, nil
}

func (k *keeper) close() error {
	if k.f == nil {
		return nil
	}
	if err := k.f.Close(); err != nil {
		return &errWriteOut{err}
	}
	return nil
}

// take reads the body of resp, the answer to an attempt that asked for
// the bytes from asked, for --retry-all-errors. A body of at most
// maxRetriedBody is read whole (readWhole): when it is cut short, what
// came is written if keepable, and the next attempt asks for the bytes
// after it. A longer keepable body is written as it comes, within the
// attempt, so that a cut anywhere in it is retried from where it
// stopped: resp's body is then empty, and inlineBytes counts what was
// written. A longer body that is not keepable is handed up as it comes,
// and a cut in it is not retried.
func (r *resumeState) take(asked int64, resp *http.Response) error {
	err := readWhole(resp)
	if cut := (*errBodyCut)(nil); errors.As(err, &cut) {
		if !r.keepable(asked, resp) {
			return err
		}
		k, kerr := r.keeper(resp)
		if kerr != nil {
			return kerr
		}
		_, kerr = io.Copy(k, cut.resp.Body)
		if cerr := k.close(); kerr == nil {
			kerr = cerr
		}
		if kerr != nil {
			return kerr
		}
		cut.resp.Body = http.NoBody
		return err
	}
	long, ok := resp.Body.(*longBody)
	if err != nil || !ok || !r.keepable(asked, resp) {
		return err
	}
	defer long.rest.Close()
	resp.Body = http.NoBody
	k, err := r.keeper(resp)
	if err != nil {
		return err
	}
	n, err := io.Copy(k, readerErr{long})
	if cerr := k.close(); err == nil {
		err = cerr
	}
	var re readError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && errors.Is(re.err, io.ErrUnexpectedEOF):
		cut := &errBodyCut{err: re.err, remaining: -1, resp: resp}
		if resp.ContentLength > n {
			cut.remaining = resp.ContentLength - n
		}
		return cut
	case errors.As(err, &re):
		return re.err
	}
	return err
}

// inlineBytes is how many bytes of the last attempt's body were written
// within it (take).
func (r *resumeState) inlineBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inline
}

// errCannotResume is write's error when the answer to a -C request is
// not the part asked for: curl's exit 33.
var errCannotResume = errors.New("the server does not seem to support byte ranges: cannot resume")

// judge applies -C's verdict to the answer about to be written, against
// the offset its attempt asked for: it reports whether its body is to be left out, or errCannotResume.
func (r *resumeState) judge(resp *http.Response) (noBody bool, err error) {
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return false, nil
	}
	r.mu.Lock()
	from, validator := r.asked, r.validator
	r.mu.Unlock()
	if validator != "" && !r.ifRange && !r.ranged && from > 0 && resp.StatusCode == http.StatusOK {
		return true, fmt.Errorf("%w: the document changed after its bytes up to %d were written: asked for the bytes from %d if it was still %s (If-Range), got %s with the whole of it", errCannotResume, from, from, validator, resp.Status)
	}
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
	o.resume = newResumeState(offset, ranged, o.include, o.compressed, o.givenHeader("If-Range"), path, stdout)
}

// setupRestart makes the run's resumeState for a download to -o's file
// with --retry-all-errors and no -C: each attempt asks for the whole
// body, as curl's retries do, and an answer longer than the 16 MiB an
// attempt reads whole is written to the file as it comes (replacing what
// an earlier attempt wrote), so that a cut anywhere in it is retried.
// Not with --hedge-after (parallel copies would write to one file).
func (o *httpOptions) setupRestart(stdout io.Writer) {
	if !o.retryAll || o.output == "" || o.output == "-" {
		return
	}
	ranged := o.givenHeader("Range") || o.rangeSet
	o.resume = newResumeState(0, ranged, o.include, o.compressed, o.givenHeader("If-Range"), o.output, stdout)
	o.resume.restart = true
}
