package curl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// checkOutput makes sure the file of -o, -O or -D (flag) can be created
// before the request is sent: its folder exists and is a folder.
func checkOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: cannot write there: %v", flag, path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not a folder", flag, path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s: is a folder: want a file name", flag, path)
	}
	return nil
}

// remoteFileName is -O's file name: the last segment of the URL's path as
// written (percent escapes kept, as curl keeps them), or false when the
// path ends with / or there is none.
func remoteFileName(tg *target) (string, bool) {
	p := tg.url.EscapedPath()
	if tg.written {
		p = tg.shown
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	return name, name != ""
}

// errReadBody marks a failure to read the answer's body (as opposed to
// writing it).
var errReadBody = errors.New("failure when receiving data from the peer")

// write writes the answer: headers with -i or -I (with -f too, as curl
// does; with -L those of each redirect first), then the body (not with
// noBody, nor for -I), to -o or stdout; and the headers to -D's file. It
// returns the body's size.
func (o *httpOptions) write(stdout io.Writer, resp *http.Response, noBody bool) (int64, error) {
	o.nameFromHeader(resp)
	if o.dumpHeader != "" {
		if err := writeTo(o.dumpHeader, stdout, o.headerLines(resp)); err != nil {
			return 0, err
		}
	}
	var resumeErr error
	if o.resume != nil && !noBody && !o.head {
		var drop bool
		if drop, resumeErr = o.resume.judge(resp); drop {
			noBody = true
			if o.output != "" && o.output != "-" {
				// As curl: the file is made, nothing written to it.
				f, err := o.resume.open()
				if err != nil {
					return 0, fmt.Errorf("failure writing output to destination: %v", err)
				}
				if err := f.Close(); err != nil {
					return 0, fmt.Errorf("failure writing output to destination: %v", err)
				}
			}
		}
	}
	if noBody && !o.include && !o.head {
		return 0, resumeErr
	}
	out := stdout
	if o.output != "" && o.output != "-" {
		open := func() (*os.File, error) { return os.Create(o.output) }
		if o.namedByServer {
			open = func() (*os.File, error) {
				f, err := createNew(o.output)
				if errors.Is(err, os.ErrExist) {
					return nil, fmt.Errorf("refusing to overwrite %s, named by the answer's Content-Disposition (-J): the file is there", o.output)
				}
				return f, err
			}
		}
		if o.resume != nil {
			open = o.resume.open
		}
		f, err := open()
		if err != nil {
			return 0, fmt.Errorf("failure writing output to destination: %v", err)
		}
		defer f.Close()
		out = f
	}
	if o.include || o.head {
		if _, err := out.Write(o.headerLines(resp)); err != nil {
			return 0, fmt.Errorf("failure writing output to destination: %v", err)
		}
	}
	if o.head || noBody {
		if err := closeOut(out, stdout); err != nil {
			return 0, err
		}
		return 0, resumeErr
	}
	var inline int64 // written by -C's attempt as the body came (resumeState.take)
	if o.resume != nil {
		inline = o.resume.inlineBytes()
	}
	came := &bodyCounter{r: readerErr{resp.Body}, n: inline}
	var src io.Reader = came
	if o.compressed {
		var err error
		var end func()
		src, end, err = decodeBody(came, strings.Join(resp.Header.Values("Content-Encoding"), ","))
		defer end()
		if err != nil {
			return came.n, o.readFailed(err)
		}
	}
	if _, err := io.Copy(writerOnly{out}, src); err != nil {
		return came.n, o.readFailed(err)
	}
	// As curl: a chunked body's trailer fields after it, with -i, and at
	// the end of -D's headers.
	if tr := trailerLines(resp); len(tr) > 0 {
		if o.include {
			if _, err := out.Write(tr); err != nil {
				return came.n, fmt.Errorf("failure writing output to destination: %v", err)
			}
		}
		if o.dumpHeader != "" {
			if err := appendTo(o.dumpHeader, stdout, tr); err != nil {
				return came.n, err
			}
		}
	}
	return came.n, closeOut(out, stdout)
}

// trailerLines is resp's trailer fields, read with its body, one
// "Name: value" line each, sorted by name (net/http keeps neither their
// order nor their case), as curl writes them after the body: without
// the empty line that ended them.
func trailerLines(resp *http.Response) []byte {
	var b bytes.Buffer
	names := make([]string, 0, len(resp.Trailer))
	for k, vs := range resp.Trailer {
		if len(vs) > 0 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range resp.Trailer[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	return b.Bytes()
}

// appendTo adds b at the end of the file path, or writes it to stdout
// for "-".
func appendTo(path string, stdout io.Writer, b []byte) error {
	if path == "-" {
		return writeTo(path, stdout, b)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("failure writing output to destination: %v", err)
	}
	return nil
}

// readFailed is write's error for err, met while copying the body: a
// read from the connection (errReadBody), a body that could not be
// decoded (errDecode), or else a write that failed.
func (o *httpOptions) readFailed(err error) error {
	var re readError
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("%w: %w", errReadBody, re.err)
	case errors.Is(err, errDecode):
		return err
	}
	return fmt.Errorf("failure writing output to destination: %v", err)
}

// writeTo writes b to the file path, or to stdout for "-".
func writeTo(path string, stdout io.Writer, b []byte) error {
	if path == "-" {
		if _, err := stdout.Write(b); err != nil {
			return fmt.Errorf("failure writing output to destination: %v", err)
		}
		return nil
	}
	if err := os.WriteFile(path, b, 0o666); err != nil {
		return fmt.Errorf("failure writing output to destination: %v", err)
	}
	return nil
}

func closeOut(out, stdout io.Writer) error {
	if f, ok := out.(*os.File); ok && out != stdout {
		if err := f.Close(); err != nil {
			return fmt.Errorf("failure writing output to destination: %v", err)
		}
	}
	return nil
}

// readerErr marks the errors of the body it reads, so that write can tell
// a broken connection (56) from a failed write (23).
type readerErr struct{ r io.Reader }

type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

func (r readerErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		return n, readError{err}
	}
	return n, err
}

// writerOnly hides ReadFrom so that io.Copy reads through readerErr.
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// writeInfo writes -w's format, if any, on stdout (or stderr after
// %{stderr}).
func (o *httpOptions) writeInfo(stdout, stderr io.Writer, format string, info *transferInfo) {
	o.infoWritten = true
	if o.realStderr != nil {
		stderr = o.realStderr // as curl 7.88: -w's %{stderr} is not --stderr's file
	}
	if format != "" {
		info.writeOut(format, stdout, stderr)
	}
}

// headerLines is the answer's header block as -i and -D write it; past
// --max-filesize, without the empty line that ends it, as curl 7.88 stops
// there.
func (o *httpOptions) headerLines(resp *http.Response) []byte {
	b := headerBlock(resp, o.trace.raw)
	if o.tooLarge {
		if c, ok := bytes.CutSuffix(b, []byte("\r\n")); ok && bytes.HasSuffix(c, []byte("\n")) {
			b = c
		} else if c, ok := bytes.CutSuffix(b, []byte("\n")); ok && bytes.HasSuffix(c, []byte("\n")) {
			b = c
		}
	}
	return b
}

// outputFlag is -o: the first given names the file, as curl, whose next
// -o's are for the next URLs; extra counts those.
type outputFlag struct {
	dst   *string
	set   bool
	extra *int
}

func (f *outputFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return *f.dst
}

func (f *outputFlag) Set(v string) error {
	if f.set {
		*f.extra++
		return nil
	}
	*f.dst, f.set = v, true
	return nil
}

func (f *outputFlag) Type() string { return "string" }
