package curl

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// acceptEncoding is the Accept-Encoding that --compressed sends: curl
// 7.88's, built with zlib, brotli and zstd (measured: curl --compressed
// sends "deflate, gzip, br, zstd").
const acceptEncoding = "deflate, gzip, br, zstd"

// maxEncodings is the most encodings one body may have been through:
// curl (since 7.84) refuses more than 5, which would cost a decoder each.
const maxEncodings = 5

// maxZstdWindow bounds the memory a zstd body may ask for its window:
// 2^27 bytes (128 MiB), libzstd's default limit
// (ZSTD_WINDOWLOG_LIMIT_DEFAULT), so that one body cannot take more.
const maxZstdWindow = 1 << 27

// errDecode marks a body that --compressed could not decode: curl's
// exit 61.
var errDecode = errors.New("error while processing content unencoding")

// decodeBody returns what to write of a body read from r whose
// Content-Encoding is encoding: r itself without one (or "identity"),
// else r decoded (gzip, x-gzip, deflate, br, zstd, or several of them
// in the order they were applied, "gzip, br" meaning br over gzip), or
// an error for an encoding yaoki http cannot decode. The function
// returned ends the decoders (zstd's holds buffers); call it once the
// body is written.
func decodeBody(r io.Reader, encoding string) (io.Reader, func(), error) {
	var names []string
	for _, e := range strings.Split(encoding, ",") {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			names = append(names, e)
		}
	}
	if len(names) > maxEncodings {
		return nil, func() {}, fmt.Errorf("%w: reject response with %d content encodings: yaoki http decodes at most %d, as curl", errDecode, len(names), maxEncodings)
	}
	var closers []func()
	end := func() {
		for _, c := range closers {
			c()
		}
	}
	if len(names) == 0 {
		return r, func() {}, nil
	}
	// Read as curl reads, 16 KiB at a time (CURL_MAX_WRITE_SIZE), so that
	// %{size_download} counts the same bytes when a decoder stops early.
	buf := bufio.NewReaderSize(r, 16<<10)
	for _, name := range names {
		switch name {
		case "identity", "gzip", "x-gzip", "deflate", "br", "zstd":
		default:
			// As curl, which fails on the first part of the body it reads.
			_, _ = buf.Peek(1)
			return nil, func() {}, fmt.Errorf("%w: unrecognized content encoding %q: yaoki http decodes gzip, deflate, br and zstd", errDecode, name)
		}
	}
	var dec io.Reader = buf
	for i := len(names) - 1; i >= 0; i-- {
		var err error
		switch names[i] {
		case "identity":
			continue
		case "gzip", "x-gzip":
			dec, err = gzip.NewReader(dec)
		case "deflate": // zlib's format, as HTTP means it
			dec, err = zlib.NewReader(dec)
		case "br":
			dec = brotli.NewReader(dec)
		case "zstd":
			var z *zstd.Decoder
			z, err = zstd.NewReader(dec, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
			if err == nil {
				closers = append(closers, z.Close)
				dec = z.IOReadCloser()
			}
		}
		if err != nil {
			end()
			if re := (readError{}); errors.As(err, &re) {
				return nil, func() {}, err
			}
			return nil, func() {}, fmt.Errorf("%w: %v", errDecode, err)
		}
		dec = decodeReader{dec}
	}
	return dec, end, nil
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
