package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
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
// requests share an input; and, when a layer outside the middleware parsed
// the request's form before it (so that the body it read was empty), the
// form (see appendForm).
func (c *Config) fingerprint(r *http.Request, body []byte) Fingerprint {
	sum := sha256.Sum256(body)
	var scratch [512]byte
	b := appendField(scratch[:0], r.Method)
	path, query := target(r)
	b = appendField(b, path)
	b = appendField(b, query)
	for _, name := range c.FingerprintHeaders {
		if name == "Host" && r.Host != "" {
			// net/http moves the field out of r.Header into r.Host.
			b = binary.AppendUvarint(b, 1)
			b = appendField(b, r.Host)
			continue
		}
		vs := r.Header[name]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendField(b, v)
		}
	}
	b = append(b, sum[:]...)
	b = appendForm(b, r)
	return sha256.Sum256(b)
}

// target returns the path and query of the request's target as the client
// sent it (r.RequestURI, which a server sets), not as a layer outside the
// middleware may have rewritten r.URL: http.StripPrefix makes /v1/pay and
// /v2/pay both /pay, and one middleware mounted under both prefixes would
// take a key sent to each for one request. For a request in origin form
// (/path?query, what clients send) these are the bytes r.URL's EscapedPath
// and RawQuery give when nothing rewrote it, so fingerprints stay what they
// were. Other forms (absolute, as to a proxy), and requests made in the
// process, use r.URL.
func target(r *http.Request) (path, query string) {
	if uri := r.RequestURI; strings.HasPrefix(uri, "/") {
		path, query, _ = strings.Cut(uri, "?")
		return path, query
	}
	return r.URL.EscapedPath(), r.URL.RawQuery
}

// appendForm appends the form that a layer outside the middleware parsed
// from the request's body before the middleware read it (a CSRF check
// reading its token with r.PostFormValue): ParseForm and ParseMultipartForm
// read the whole body, so the middleware reads nothing, and without the
// form two different forms sent with one key would look alike and the
// second would get the first one's response. It appends the form's fields
// (r.PostForm, which holds a multipart form's values too) and each file of
// a multipart form: its field, name, size and a SHA-256 of its content.
// Without a parsed form it appends nothing, so the fingerprint of every
// other request is what it always was.
func appendForm(b []byte, r *http.Request) []byte {
	mf := r.MultipartForm
	if len(r.PostForm) == 0 && (mf == nil || len(mf.File) == 0) {
		return b
	}
	b = append(b, 'F')
	b = appendField(b, r.PostForm.Encode()) // sorted by name
	if mf == nil {
		return b
	}
	names := make([]string, 0, len(mf.File))
	for name := range mf.File {
		names = append(names, name)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		fhs := mf.File[name]
		b = appendField(b, name)
		b = binary.AppendUvarint(b, uint64(len(fhs)))
		for _, fh := range fhs {
			b = appendField(b, fh.Filename)
			b = binary.AppendUvarint(b, uint64(fh.Size))
			b = appendFileSum(b, fh)
		}
	}
	return b
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendFileSum appends a SHA-256 of the content of a multipart form's
// file and a 0, or, when it cannot be read (its temporary file removed), a
// SHA-256 of what was read and a 1: a marker, not the error's text, which
// names the temporary file and would differ from one request to the next.
func appendFileSum(b []byte, fh *multipart.FileHeader) []byte {
	h := sha256.New()
	f, err := fh.Open()
	if err == nil {
		_, err = io.Copy(h, f)
		f.Close()
	}
	b = h.Sum(b)
	if err != nil {
		return append(b, 1)
	}
	return append(b, 0)
}
