package curl

import (
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"
)

// acceptEncoding is the Accept-Encoding that --compressed sends: the
// encodings the standard library decodes (curl also asks for br and
// zstd).
const acceptEncoding = "deflate, gzip"

// errDecode marks a body that --compressed could not decode: curl's
// exit 61.
var errDecode = errors.New("error while processing content unencoding")

// decodeBody returns what to write of a body read from r whose
// Content-Encoding is encoding: r itself without one (or "identity"),
// else r decoded (gzip, x-gzip, deflate), or an error for an encoding
// yaoki http cannot decode.
func decodeBody(r io.Reader, encoding string) (io.Reader, error) {
	var (
		dec io.Reader
		err error
	)
	switch e := strings.ToLower(strings.TrimSpace(encoding)); e {
	case "", "identity":
		return r, nil
	case "gzip", "x-gzip":
		dec, err = gzip.NewReader(r)
	case "deflate": // zlib's format, as HTTP means it
		dec, err = zlib.NewReader(r)
	default:
		return nil, fmt.Errorf("%w: unrecognized content encoding %q: yaoki http decodes gzip and deflate", errDecode, encoding)
	}
	if err != nil {
		if re := (readError{}); errors.As(err, &re) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errDecode, err)
	}
	return decodeReader{dec}, nil
}

// decodeReader marks the errors of a decoder that did not come from the
// connection under it as decoding errors.
type decodeReader struct{ r io.Reader }

func (d decodeReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		if re := (readError{}); !errors.As(err, &re) {
			return n, fmt.Errorf("%w: %v", errDecode, err)
		}
	}
	return n, err
}

// bodyCounter counts the bytes read through it: the body as it came,
// before decoding (curl's %{size_download}).
type bodyCounter struct {
	r io.Reader
	n int64
}

func (c *bodyCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
