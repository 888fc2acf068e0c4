package httpretry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// BodyCutError is an attempt's error when the body of its answer ended
// before its end (Content-Length, or the last chunk) within the bytes
// that Transport.ReadBody reads: retried as a transport error, and
// wrapped in the *Error a call that ends on it returns. It unwraps to the
// read's error (io.ErrUnexpectedEOF, a reset, the attempt's timeout).
type BodyCutError struct {
	Status string // the answer's status line, such as "200 OK"
	Read   int64  // the bytes of the body that came
	Err    error  // the read's error
}

// Error says which answer was cut, after how many bytes, and why.
func (e *BodyCutError) Error() string {
	return fmt.Sprintf("httpretry: %s: the answer's body was cut after %d bytes: %v", e.Status, e.Read, e.Err)
}

// Unwrap returns the read's error.
func (e *BodyCutError) Unwrap() error { return e.Err }

// readAhead reads up to c.readBody bytes of resp's body within its
// attempt (see Transport.ReadBody). A body that fits is read whole, its
// original closed; a longer one reads from what was read, then from the
// rest. When the read fails, the body is closed and the error is a
// *BodyCutError.
func (c *config) readAhead(resp *http.Response) error {
	body := resp.Body
	if body == nil || body == http.NoBody {
		return nil
	}
	size := c.readBody + 1
	if cl := resp.ContentLength; cl >= 0 && cl < c.readBody {
		size = cl + 1 // the whole body and the end; no growing
	}
	data, err := readUpTo(body, size)
	if err != nil {
		_ = body.Close()
		return &BodyCutError{Status: resp.Status, Read: int64(len(data)), Err: err}
	}
	if int64(len(data)) > c.readBody {
		resp.Body = &readAheadBody{Reader: io.MultiReader(bytes.NewReader(data), body), rest: body}
		return nil
	}
	_ = body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

// readUpTo reads r until its end or until n bytes have come, whichever
// is first; io.EOF is no error.
func readUpTo(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(n, 64<<10))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		m, err := r.Read(buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// readAheadBody is the body of an answer longer than Transport.ReadBody:
// what was read, then the rest as it comes.
type readAheadBody struct {
	io.Reader
	rest io.ReadCloser
}

func (b *readAheadBody) Close() error { return b.rest.Close() }
