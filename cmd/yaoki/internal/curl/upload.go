package curl

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// uploadURL is rawURL as -T FILE sends to it: when its path is empty or
// ends with '/', with the file's name added, as curl adds it (not for
// stdin).
func uploadURL(rawURL, file string) string {
	if file == "" || file == "-" {
		return rawURL
	}
	// The path ends at the first '?' (the query) or '#' (the fragment);
	// what follows is kept as written.
	rest, suffix := rawURL, ""
	if i := strings.IndexAny(rawURL, "?#"); i >= 0 {
		rest, suffix = rawURL[:i], rawURL[i:]
	}
	afterScheme := rest
	if _, a, ok := strings.Cut(rest, "://"); ok {
		afterScheme = a
	}
	switch i := strings.IndexByte(afterScheme, '/'); {
	case i < 0:
		rest += "/" + filepath.Base(file)
	case strings.HasSuffix(rest, "/"):
		rest += filepath.Base(file)
	}
	return rest + suffix
}

// uploadBody sets req's body to -T's file, sent again from the start on
// each attempt (GetBody reopens it, so that a large file is not held in
// memory), or to stdin's content for "-". A file that cannot be read
// exits 26, as curl exits.
func (o *httpOptions) uploadBody(req *http.Request, stdin io.Reader) error {
	if o.upload == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return o.failWith(curlReadError, fmt.Sprintf("-T -: cannot read stdin: %v", err))
		}
		req.ContentLength = int64(len(b))
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		return nil
	}
	f, err := os.Open(o.upload)
	if err != nil {
		return o.failWith(curlReadError, fmt.Sprintf("-T %s: cannot open it: %v", o.upload, err))
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return o.failWith(curlReadError, fmt.Sprintf("-T %s: not a file that can be read", o.upload))
	}
	req.ContentLength, req.Body = st.Size(), f
	req.GetBody = func() (io.ReadCloser, error) { return os.Open(o.upload) }
	if st.Size() == 0 {
		f.Close()
		req.Body, req.GetBody = http.NoBody, nil
	}
	return nil
}
