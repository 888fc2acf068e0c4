package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
)

// readBody reads the whole request body, bounded by MaxRequestBytes. A
// non-zero p.Status is the problem to answer instead.
func (c *Config) readBody(r *http.Request) (body []byte, p Problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, Problem{}
	}
	max := c.MaxRequestBytes
	if r.ContentLength > max {
		return nil, c.bodyTooLarge()
	}
	n := r.ContentLength
	if n < 0 || n > 64<<10 {
		n = 512 // unknown or large: grow as it comes
	}
	buf := make([]byte, 0, n+1) // +1: see the end of the body without another read
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):min(int64(cap(buf)), max+1)]
		k, err := r.Body.Read(room)
		buf = buf[:len(buf)+k]
		switch {
		case int64(len(buf)) > max:
			return nil, c.bodyTooLarge()
		case err == io.EOF:
			return buf, Problem{}
		case err != nil:
			return nil, Problem{Status: http.StatusBadRequest, Reason: ReasonBodyUnreadable,
				Detail: "idempotency: the request body could not be read: " + err.Error()}
		}
	}
}

func (c *Config) bodyTooLarge() Problem {
	return Problem{Status: http.StatusRequestEntityTooLarge, Reason: ReasonBodyTooLarge,
		Detail: fmt.Sprintf("idempotency: the request body is larger than %d bytes, the most this server reads for a keyed request", c.MaxRequestBytes)}
}

// bodyReader is the body the handler reads: the bytes read to fingerprint
// the request.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// fingerprint hashes the method, the target, the selected header fields and
// a SHA-256 of the body, each preceded by its length so that no two
// requests share an input.
func (c *Config) fingerprint(r *http.Request, body []byte) Fingerprint {
	sum := sha256.Sum256(body)
	var scratch [512]byte
	b := appendField(scratch[:0], r.Method)
	b = appendField(b, r.URL.EscapedPath())
	b = appendField(b, r.URL.RawQuery)
	for _, name := range c.FingerprintHeaders {
		vs := r.Header[name]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendField(b, v)
		}
	}
	b = append(b, sum[:]...)
	return sha256.Sum256(b)
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
