package idempotency

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxDecodedFactor bounds the body a replay decodes for a client that does
// not accept the stored content coding, as a multiple of MaxResponseBytes
// (32 MiB by default): a stored body that decodes to more is replayed as
// stored.
const maxDecodedFactor = 32

// decodedFor returns the stored body of resp decoded from its content
// coding when the request r does not accept that coding, and ok true; ok
// is false when the body goes as stored: no coding, one the request
// accepts, one this package cannot decode (br, zstd, a list of codings),
// a partial answer (206), or a body that does not decode within max bytes.
//
// A handler that compresses its answer when the request accepts it does so
// for the first request; a retry may come from another client (a redrive,
// a curl without --compressed) that does not accept it, and would get
// bytes it cannot read.
func decodedFor(r *http.Request, resp *Response, max int64) (body []byte, ok bool) {
	ce := resp.Header["Content-Encoding"]
	if len(ce) != 1 || len(resp.Body) == 0 || resp.Status == http.StatusPartialContent {
		return nil, false
	}
	coding := strings.ToLower(trimOWS(ce[0]))
	if coding == "x-gzip" {
		coding = "gzip"
	}
	if (coding != "gzip" && coding != "deflate") || accepts(r.Header["Accept-Encoding"], coding) {
		return nil, false
	}
	var zr io.ReadCloser
	var err error
	if coding == "gzip" {
		zr, err = gzip.NewReader(bytes.NewReader(resp.Body))
	} else {
		zr, err = zlib.NewReader(bytes.NewReader(resp.Body))
	}
	if err != nil {
		return nil, false
	}
	defer zr.Close()
	body, err = io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil || int64(len(body)) > max {
		return nil, false
	}
	return body, true
}

// accepts reports whether the Accept-Encoding field values ae accept
// coding (gzip or deflate; x-gzip is gzip) with a weight above 0, by name
// or through "*" (RFC 9110 §12.5.3). A request without the field accepts
// none: the RFC lets a server send any coding then, but clients that send
// no Accept-Encoding (curl without --compressed, Go's with
// DisableCompression) do not decode, and servers compress only for those
// that ask.
func accepts(ae []string, coding string) bool {
	named, star := -1.0, -1.0
	for _, v := range ae {
		for elem := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(elem, ";")
			name = strings.ToLower(trimOWS(name))
			if name == "x-gzip" {
				name = "gzip"
			}
			q := weight(params)
			switch name {
			case coding:
				named = q
			case "*":
				star = q
			}
		}
	}
	if named >= 0 {
		return named > 0
	}
	return star > 0
}

// weight returns the q parameter among params (";q=0.5"), 1 when there is
// none, 0 when it is not a number.
func weight(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(trimOWS(k), "q") {
			q, err := strconv.ParseFloat(trimOWS(v), 64)
			if err != nil || q < 0 {
				return 0
			}
			return q
		}
	}
	return 1
}

// weakETag returns the ETag field values made weak: a strong tag names
// the encoded bytes, which a decoded replay does not send.
func weakETag(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if strings.HasPrefix(v, `"`) {
			v = "W/" + v
		}
		out[i] = v
	}
	return out
}
