package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rangeServer serves the document "0123456789" on a loopback port as
// its path says: /ok honours Range (206 from the start asked, 416 past
// the end), /ignore answers 200 with the whole document, /r416 answers
// 416, /wrong a 206 that starts at byte 2, /nocr a 206 without
// Content-Range, /busy a 503 then as /ok, /cut as /ok but the first
// answer's connection is closed after 3 bytes of the body (a link cut
// mid-body). It records the Range header of each request.
type rangeServer struct {
	*httptest.Server
	mu     sync.Mutex
	ranges []string
	n      int
}

const rangeDoc = "0123456789"

func startRangeServer(t *testing.T) *rangeServer {
	t.Helper()
	s := &rangeServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *rangeServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func (s *rangeServer) serve(w http.ResponseWriter, r *http.Request) {
	rng := r.Header.Get("Range")
	s.mu.Lock()
	s.ranges = append(s.ranges, rng)
	s.n++
	n := s.n
	s.mu.Unlock()
	start := 0
	if v, ok := strings.CutPrefix(rng, "bytes="); ok {
		start, _ = strconv.Atoi(strings.TrimSuffix(v, "-"))
	}
	partial := func(from int, body string) {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(rangeDoc)-1, len(rangeDoc)))
		w.Header().Set("Content-Length", strconv.Itoa(len(rangeDoc)-from))
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte(body))
	}
	switch r.URL.Path {
	case "/busy":
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
	case "/cut":
		if n == 1 && rng != "" {
			partial(start, rangeDoc[start:start+3])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is closed mid-body
		}
		if n == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(rangeDoc)))
			w.Write([]byte(rangeDoc[:3]))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	case "/ignore":
		w.Write([]byte(rangeDoc))
		return
	case "/r416":
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(rangeDoc)))
		http.Error(w, "no", http.StatusRequestedRangeNotSatisfiable)
		return
	case "/wrong":
		partial(2, rangeDoc[2:])
		return
	case "/nocr":
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte(rangeDoc[min(start, len(rangeDoc)):]))
		return
	}
	switch {
	case rng == "":
		w.Write([]byte(rangeDoc))
	case start >= len(rangeDoc):
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(rangeDoc)))
		http.Error(w, "no", http.StatusRequestedRangeNotSatisfiable)
	default:
		partial(start, rangeDoc[start:])
	}
}

// TestHTTPContinueAtLikeCurl runs yaoki http and curl 7.88 with -C
// against the same loopback server, each on a copy of the same output
// file, and compares the Range they ask for, the file after the run, the
// stdout and the exit code.
func TestHTTPContinueAtLikeCurl(t *testing.T) {
	const none = "\x00none"
	for _, tc := range []struct {
		name string
		path string
		file string // the output file before the run (none: no file)
		args []string
		code int
	}{
		{name: "offset, no file", path: "/ok", file: none, args: []string{"-C", "3", "-o", "OUT"}},
		{name: "offset appends", path: "/ok", file: "0123", args: []string{"-C", "3", "-o", "OUT"}},
		{name: "- continues the file", path: "/ok", file: "0123", args: []string{"-C", "-", "-o", "OUT"}},
		{name: "- without file", path: "/ok", file: none, args: []string{"-C", "-", "-o", "OUT"}},
		{name: "- on a whole file: 416", path: "/ok", file: rangeDoc, args: []string{"-C", "-", "-o", "OUT"}},
		{name: "416 -f", path: "/r416", file: "0123", args: []string{"-f", "-C", "-", "-o", "OUT"}, code: 22},
		{name: "200 cannot resume", path: "/ignore", file: "0123", args: []string{"-C", "-", "-o", "OUT"}, code: 33},
		{name: "200 without file", path: "/ignore", file: none, args: []string{"-C", "3", "-o", "OUT"}, code: 33},
		{name: "200 of the file's size: already whole", path: "/ignore", file: rangeDoc, args: []string{"-C", "-", "-o", "OUT"}},
		{name: "206 from elsewhere", path: "/wrong", file: "0123", args: []string{"-C", "-", "-o", "OUT"}, code: 33},
		{name: "206 without Content-Range", path: "/nocr", file: "0123", args: []string{"-C", "-", "-o", "OUT"}, code: 33},
		{name: "-C 0 rewrites", path: "/ok", file: "0123", args: []string{"-C", "0", "-o", "OUT"}},
		{name: "+3", path: "/ok", file: none, args: []string{"-C", "+3", "-o", "OUT"}},
		{name: "stdout", path: "/ok", file: none, args: []string{"-C", "3"}},
		{name: "- to stdout", path: "/ok", file: none, args: []string{"-C", "-"}},
		{name: "-C wins over -r", path: "/ok", file: none, args: []string{"-C", "3", "-r", "0-4", "-o", "OUT"}},
		{name: "-H Range is compared with -C", path: "/ok", file: "0123", args: []string{"-H", "Range: bytes=5-", "-C", "-", "-o", "OUT"}, code: 33},
		{name: "negative", path: "/ok", file: none, args: []string{"-C", "-5", "-o", "OUT"}, code: 2},
		{name: "not a number", path: "/ok", file: none, args: []string{"-C", "3x", "-o", "OUT"}, code: 2},
		{name: "too large", path: "/ok", file: none, args: []string{"-C", "99999999999999999999", "-o", "OUT"}, code: 2},
		{name: "cut without --retry-all-errors: 18", path: "/cut", file: "01", args: []string{"--retry", "2", "-C", "-", "-o", "OUT"}, code: 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type outcome struct {
				code           int
				stdout, file   string
				ranges         []string
				stderrNotEmpty bool
			}
			var got [2]outcome
			for i, who := range []string{"yaoki", "curl"} {
				s := startRangeServer(t)
				out := filepath.Join(t.TempDir(), "out")
				if tc.file != none {
					if err := os.WriteFile(out, []byte(tc.file), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				args := []string{"-sS"}
				for _, a := range tc.args {
					args = append(args, strings.ReplaceAll(a, "OUT", out))
				}
				r := runAs(t, who, append(args, s.URL+tc.path)...)
				b, err := os.ReadFile(out)
				file := string(b)
				if err != nil {
					file = none
				}
				got[i] = outcome{code: r.code, stdout: r.stdout, file: file, ranges: s.seen(), stderrNotEmpty: r.stderr != ""}
			}
			y, c := got[0], got[1]
			if y.code != tc.code || c.code != tc.code {
				t.Fatalf("exit: yaoki %d, curl %d; want %d", y.code, c.code, tc.code)
			}
			if y.file != c.file || y.stdout != c.stdout {
				t.Errorf("file %q stdout %q (yaoki); file %q stdout %q (curl)", y.file, y.stdout, c.file, c.stdout)
			}
			if fmt.Sprint(y.ranges) != fmt.Sprint(c.ranges) {
				t.Errorf("Range asked: yaoki %q, curl %q", y.ranges, c.ranges)
			}
			if y.stderrNotEmpty != c.stderrNotEmpty {
				t.Errorf("stderr written: yaoki %v, curl %v", y.stderrNotEmpty, c.stderrNotEmpty)
			}
		})
	}
}

// TestHTTPContinueAtRetryAfterCut cuts the link after 3 bytes of the
// first answer's body (the server closes the connection mid-body) under
// -C - --retry-all-errors: yaoki http writes those 3 bytes and asks the
// retry for the bytes after them, where curl 7.88 truncates the file and
// asks again from -C's offset; both end with the whole document. Under
// -C - without a file (no Range), the first answer is whole and cut: the
// retry asks yaoki's for the bytes after the 3 written. To stdout, yaoki
// http writes each byte once, curl the cut part twice.
func TestHTTPContinueAtRetryAfterCut(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		toFile                  bool
		file                    string // the file before the run ("": none)
		yaokiRanges, curlRanges string
		yaokiOut, curlOut       string
	}{
		{name: "-o", toFile: true, file: "01", yaokiRanges: "[bytes=2- bytes=5-]", curlRanges: "[bytes=2- bytes=2-]"},
		{name: "-o without file: the whole answer cut", toFile: true, yaokiRanges: "[ bytes=3-]", curlRanges: "[ ]"},
		{name: "stdout", yaokiRanges: "[bytes=2- bytes=5-]", curlRanges: "[bytes=2- bytes=2-]", yaokiOut: "23456789", curlOut: "23423456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, who := range []string{"yaoki", "curl"} {
				s := startRangeServer(t)
				out := filepath.Join(t.TempDir(), "out")
				args := []string{"-sS", "--retry", "2", "--retry-all-errors", "-C"}
				if tc.toFile {
					if tc.file != "" {
						os.WriteFile(out, []byte(tc.file), 0o600)
					}
					args = append(args, "-", "-o", out)
				} else {
					args = append(args, "2")
				}
				if who == "yaoki" {
					args = append(args, fastRetries...)
				} else {
					args = append(args, "--retry-delay", "1")
				}
				r := runAs(t, who, append(args, s.URL+"/cut")...)
				if r.code != 0 {
					t.Fatalf("%s exit %d, want 0; stderr %s", who, r.code, r.stderr)
				}
				wantRanges, wantOut := tc.yaokiRanges, tc.yaokiOut
				if who == "curl" {
					wantRanges, wantOut = tc.curlRanges, tc.curlOut
				}
				if got := fmt.Sprint(s.seen()); got != wantRanges {
					t.Errorf("%s asked for %s, want %s", who, got, wantRanges)
				}
				if r.stdout != wantOut {
					t.Errorf("%s stdout %q, want %q", who, r.stdout, wantOut)
				}
				if tc.toFile {
					if b, _ := os.ReadFile(out); string(b) != rangeDoc {
						t.Errorf("%s: file %q, want %q", who, b, rangeDoc)
					}
				}
			}
		})
	}
}

// TestHTTPContinueAtRetries503 answers a -C request with a 503, then the
// part asked for: yaoki http retries it and appends the part (curl 7.88
// exits 33 at the 503, TestHTTPContinueAtLikeCurl's 404 shows its rule).
func TestHTTPContinueAtRetries503(t *testing.T) {
	s := startRangeServer(t)
	out := filepath.Join(t.TempDir(), "out")
	os.WriteFile(out, []byte("0123"), 0o600)
	r := run(t, nil, append(append([]string{"http", "-sS", "-C", "-", "-o", out}, fastRetries...), s.URL+"/busy")...)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != rangeDoc {
		t.Errorf("file %q, want %q", b, rangeDoc)
	}
	if got := fmt.Sprint(s.seen()); got != "[bytes=4- bytes=4-]" {
		t.Errorf("asked for %s, want [bytes=4- bytes=4-]", got)
	}
}

// longDoc is a document longer than the body yaoki http reads whole
// within an attempt (16 MiB): 20 MiB of a pattern that shows where a
// byte came from.
var longDoc = func() []byte {
	b := make([]byte, 20<<20)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

// longServer serves longDoc from the byte its Range asks for (206, or
// 200 without Range) and records each Range. Its k-th answer is cut at
// cuts[k-1], a byte of the document: the connection is closed once the
// bytes before it are sent (a link cut mid-body).
type longServer struct {
	*httptest.Server
	cuts   []int
	mu     sync.Mutex
	ranges []string
}

func startLongServer(t *testing.T, cuts ...int) *longServer {
	t.Helper()
	s := &longServer{cuts: cuts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *longServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func (s *longServer) serve(w http.ResponseWriter, r *http.Request) {
	rng := r.Header.Get("Range")
	s.mu.Lock()
	s.ranges = append(s.ranges, rng)
	k := len(s.ranges)
	s.mu.Unlock()
	start := 0
	if v, ok := strings.CutPrefix(rng, "bytes="); ok {
		start, _ = strconv.Atoi(strings.TrimSuffix(v, "-"))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(longDoc)-start))
	if rng != "" {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(longDoc)-1, len(longDoc)))
		w.WriteHeader(http.StatusPartialContent)
	}
	if k <= len(s.cuts) {
		w.Write(longDoc[start:s.cuts[k-1]])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Write(longDoc[start:])
}

// TestHTTPContinueAtLongBodyCutResumes cuts a -C download of 20 MiB
// past the 16 MiB that an attempt reads whole, twice: each retry asks for
// the bytes after those written, and the file (or stdout) ends whole.
// When every attempt is cut, the run exits 18 with what came written,
// a cut before 16 MiB too.
func TestHTTPContinueAtLongBodyCutResumes(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		file       int // bytes of the document in -o's file before the run; -1: to stdout
		retries    string
		cuts       []int
		wantCode   int
		wantRanges string
		wantBytes  int // bytes of the document written, in all
		wantSize   string
	}{
		{name: "-o", file: 1000, retries: "3", cuts: []int{17 * mib, 18*mib + 7}, wantRanges: fmt.Sprintf("[bytes=1000- bytes=%d- bytes=%d-]", 17*mib, 18*mib+7), wantBytes: len(longDoc), wantSize: fmt.Sprint(len(longDoc) - (18*mib + 7))},
		{name: "stdout", file: -1, retries: "3", cuts: []int{17 * mib}, wantRanges: fmt.Sprintf("[ bytes=%d-]", 17*mib), wantBytes: len(longDoc), wantSize: fmt.Sprint(len(longDoc) - 17*mib)},
		{name: "every attempt cut before 16 MiB", file: 1000, retries: "1", cuts: []int{1005, 1009}, wantCode: 18, wantRanges: "[bytes=1000- bytes=1005-]", wantBytes: 1009, wantSize: "4"},
		{name: "every attempt cut", file: 1000, retries: "1", cuts: []int{17 * mib, 18 * mib}, wantCode: 18, wantRanges: fmt.Sprintf("[bytes=1000- bytes=%d-]", 17*mib), wantBytes: 18 * mib, wantSize: fmt.Sprint(mib)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startLongServer(t, tc.cuts...)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"http", "-sS", "--retry", tc.retries, "--retry-all-errors", "-w", "%{size_download}", "-C", "-"}, fastRetries...)
			if tc.file >= 0 {
				if err := os.WriteFile(out, longDoc[:tc.file], 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-o", out)
			}
			r := run(t, nil, append(args, s.URL)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, tc.wantCode, r.stderr)
			}
			if got := fmt.Sprint(s.seen()); got != tc.wantRanges {
				t.Errorf("asked for %s, want %s", got, tc.wantRanges)
			}
			got, size := []byte(r.stdout), r.stdout
			if tc.file >= 0 {
				got, _ = os.ReadFile(out)
			} else {
				got, size = got[:max(len(got)-len(tc.wantSize), 0)], size[max(len(size)-len(tc.wantSize), 0):]
			}
			if !bytes.Equal(got, longDoc[:tc.wantBytes]) {
				t.Errorf("wrote %d bytes, want the document's first %d (equal up to byte %d)", len(got), tc.wantBytes, commonPrefix(got, longDoc))
			}
			if size != tc.wantSize {
				t.Errorf("-w %%{size_download} %q, want %q (the last attempt's bytes)", size, tc.wantSize)
			}
			if tc.wantCode == 18 && !strings.Contains(r.stderr, fmt.Sprintf("transfer closed with %d bytes remaining to read", len(longDoc)-tc.wantBytes)) {
				t.Errorf("stderr %q, want the bytes remaining", r.stderr)
			}
		})
	}
}

// commonPrefix is how many bytes a and b share from the start.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestHTTPContinueAtWriteFailsNotRetried: with -C and
// --retry-all-errors, what came of an attempt cut short is written before
// the retry; when that write fails (the disk is full: /dev/full), the run
// stops with curl's exit 23 instead of asking the server again.
func TestHTTPContinueAtWriteFailsNotRetried(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	for _, cut := range []int{5, 17 << 20} {
		s := startLongServer(t, cut)
		r := run(t, nil, append(append([]string{"http", "-sS", "--retry", "3", "--retry-all-errors", "-C", "-", "-o", "/dev/full"}, fastRetries...), s.URL)...)
		if r.code != 23 || !strings.Contains(r.stderr, "failure writing output to destination") || !strings.Contains(r.stderr, "no space left on device") {
			t.Errorf("cut at %d: exit %d, stderr %q; want 23, failure writing output to destination: … no space left on device", cut, r.code, r.stderr)
		}
		if got := s.seen(); len(got) != 1 {
			t.Errorf("cut at %d: %d requests (%q), want one", cut, len(got), got)
		}
	}
}

// versionServer serves a document with http.ServeContent (which honours
// Range and If-Range) under an ETag, a Last-Modified, or both: the first
// answer is that of version 1, cut after its first 4 bytes; the later
// ones are of version 2 when changed is set (the document was replaced
// between the cut and the retry). It records each Range and If-Range.
type versionServer struct {
	*httptest.Server
	changed, etag, modified bool
	mu                      sync.Mutex
	ranges, ifRanges        []string
}

// cutWriter closes the connection once limit bytes of the body are out.
type cutWriter struct {
	http.ResponseWriter
	limit int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) > c.limit {
		c.ResponseWriter.Write(p[:c.limit])
		c.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	c.limit -= len(p)
	return c.ResponseWriter.Write(p)
}

func (s *versionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.ifRanges = append(s.ifRanges, r.Header.Get("If-Range"))
	k := len(s.ranges)
	s.mu.Unlock()
	doc, etag, mod := "version 1 of the document", `"v1"`, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if k > 1 && s.changed {
		doc, etag, mod = "VERSION 2 OF THE DOCUMENT", `"v2"`, mod.Add(time.Hour)
	}
	if s.etag {
		w.Header().Set("ETag", etag)
	}
	if !s.modified {
		mod = time.Time{}
	}
	if k == 1 {
		w = &cutWriter{ResponseWriter: w, limit: 4}
	}
	http.ServeContent(w, r, "", mod, strings.NewReader(doc))
}

// TestHTTPContinueAtRetryIfRange: after a cut, the retry asks for the
// bytes after those written only if the document is still the one they
// came from (If-Range with its strong ETag, else its Last-Modified), so
// that a document replaced in between is refused (exit 33, the file left
// with the old bytes alone) instead of spliced onto them.
func TestHTTPContinueAtRetryIfRange(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		changed, etag, modified bool
		wantIfRange             string
		wantCode                int
		wantFile                string
	}{
		{name: "same, ETag", etag: true, modified: true, wantIfRange: `"v1"`, wantFile: "version 1 of the document"},
		{name: "same, Last-Modified", modified: true, wantIfRange: "Tue, 01 Dec 2026 10:00:00 GMT", wantFile: "version 1 of the document"},
		{name: "changed, ETag", changed: true, etag: true, modified: true, wantIfRange: `"v1"`, wantCode: 33, wantFile: "vers"},
		{name: "changed, Last-Modified", changed: true, modified: true, wantIfRange: "Tue, 01 Dec 2026 10:00:00 GMT", wantCode: 33, wantFile: "vers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &versionServer{changed: tc.changed, etag: tc.etag, modified: tc.modified}
			s.Server = httptest.NewServer(s)
			defer s.Close()
			out := filepath.Join(t.TempDir(), "out")
			r := run(t, nil, append(append([]string{"http", "-sS", "--retry", "2", "--retry-all-errors", "-C", "-", "-o", out}, fastRetries...), s.URL)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, tc.wantCode, r.stderr)
			}
			s.mu.Lock()
			ranges, ifRanges := fmt.Sprintf("%q", s.ranges), fmt.Sprintf("%q", s.ifRanges)
			s.mu.Unlock()
			if want := `["" "bytes=4-"]`; ranges != want {
				t.Errorf("Range %s, want %s", ranges, want)
			}
			if want := fmt.Sprintf("%q", []string{"", tc.wantIfRange}); ifRanges != want {
				t.Errorf("If-Range %s, want %s", ifRanges, want)
			}
			if b, _ := os.ReadFile(out); string(b) != tc.wantFile {
				t.Errorf("file %q, want %q", b, tc.wantFile)
			}
			if tc.wantCode == 33 && !strings.Contains(r.stderr, "the document changed after its bytes up to 4 were written") {
				t.Errorf("stderr %q, want it to say the document changed", r.stderr)
			}
		})
	}
}

// TestHTTPRetryAllErrorsLongBodyRestartsLikeCurl cuts a download of
// 20 MiB to -o's file past the 16 MiB an attempt reads whole: with
// --retry-all-errors and no -C, yaoki http asks for the whole document
// again and the file ends whole, as with curl; when every attempt is cut,
// both exit 18 with the last attempt's bytes in the file.
func TestHTTPRetryAllErrorsLongBodyRestartsLikeCurl(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name      string
		retries   string
		cuts      []int
		wantCode  int
		wantBytes int
	}{
		{name: "cut once", retries: "2", cuts: []int{17 * mib}, wantBytes: len(longDoc)},
		{name: "every attempt cut", retries: "1", cuts: []int{18 * mib, 17 * mib}, wantCode: 18, wantBytes: 17 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, who := range []string{"yaoki", "curl"} {
				s := startLongServer(t, tc.cuts...)
				out := filepath.Join(t.TempDir(), "out")
				args := []string{"-sS", "--retry", tc.retries, "--retry-all-errors", "-o", out}
				if who == "yaoki" {
					args = append(args, fastRetries...)
				} else {
					args = append(args, "--retry-delay", "1")
				}
				r := runAs(t, who, append(args, s.URL)...)
				if r.code != tc.wantCode {
					t.Fatalf("%s: exit %d, want %d; stderr %s", who, r.code, tc.wantCode, r.stderr)
				}
				if got := s.seen(); len(got) != len(tc.cuts)+1 && tc.wantCode == 0 || len(got) != len(tc.cuts) && tc.wantCode != 0 || slices.ContainsFunc(got, func(v string) bool { return v != "" }) {
					t.Errorf("%s asked for %q, want the whole document each time", who, got)
				}
				if b, _ := os.ReadFile(out); !bytes.Equal(b, longDoc[:tc.wantBytes]) {
					t.Errorf("%s wrote %d bytes, want the document's first %d (equal up to byte %d)", who, len(b), tc.wantBytes, commonPrefix(b, longDoc))
				}
			}
		})
	}
}

// -C with an offset above 0 makes -o's file at the run's start, as curl
// 7.88 opens it for appending before its transfer: a run that fails (a
// refused connection, a 404 with -f) leaves it there, empty; -C - and
// -C 0 to a missing file make none until something is written.
func TestHTTPContinueAtMakesTheFileLikeCurl(t *testing.T) {
	s := startScripted(t, false, status(404, "no\n"))
	for _, tc := range []struct {
		name string
		args []string
		url  string // "": the scripted server's
		code int
	}{
		{"-C 100, refused", []string{"-C", "100"}, "http://127.0.0.1:1/", 7},
		{"-C -, refused", []string{"-C", "-"}, "http://127.0.0.1:1/", 7},
		{"-C 0, refused", []string{"-C", "0"}, "http://127.0.0.1:1/", 7},
		{"-C 5 -f 404", []string{"-C", "5", "-f"}, "", 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url
			if url == "" {
				url = s.url + "p"
			}
			var made [2]bool
			for i, who := range []string{"yaoki", "curl"} {
				out := filepath.Join(t.TempDir(), "out")
				r := runAs(t, who, append(append([]string{"-s", "--retry", "0", "-o", out}, tc.args...), url)...)
				if r.code != tc.code {
					t.Errorf("%s: exit %d, want %d", who, r.code, tc.code)
				}
				st, err := os.Stat(out)
				made[i] = err == nil
				if err == nil && st.Size() != 0 {
					t.Errorf("%s: the file holds %d bytes, want none", who, st.Size())
				}
				s.restart()
			}
			if made[0] != made[1] {
				t.Errorf("-o's file made: yaoki %v, curl %v", made[0], made[1])
			}
		})
	}
}
