package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// The binary form of a Response, for stores that keep it as one value
// (Redis, PostgreSQL):
//
//	version  byte (1)
//	status   uvarint
//	flags    byte (bit 0: Omitted, bit 1: Cut)
//	size     uvarint
//	headers  uvarint count, then per field: name, uvarint count, values
//	body     the rest
//
// where each name and value is a uvarint length and its bytes. Header
// fields are written in sorted order, so equal responses encode equally.
const encodingVersion = 1

// ErrBadEncoding matches the errors of Response.UnmarshalBinary.
var ErrBadEncoding = errors.New("idempotency: bad stored response")

// MarshalBinary encodes r (see the format above). It never fails.
func (r Response) MarshalBinary() ([]byte, error) {
	n := 1 + 2*binary.MaxVarintLen64 + 1 + len(r.Body) + binary.MaxVarintLen64
	for k, vs := range r.Header {
		n += len(k) + 2*binary.MaxVarintLen64
		for _, v := range vs {
			n += len(v) + binary.MaxVarintLen64
		}
	}
	b := make([]byte, 0, n)
	b = append(b, encodingVersion)
	b = binary.AppendUvarint(b, uint64(r.Status))
	var flags byte
	if r.Omitted {
		flags |= 1
	}
	if r.Cut {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.Size))
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		vs := r.Header[k]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return append(b, r.Body...), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// UnmarshalBinary decodes what MarshalBinary encoded into r. Bad input
// returns an error matching ErrBadEncoding, never a panic. The body is
// copied, so data may be reused afterwards.
func (r *Response) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	if v := d.byte(); v != encodingVersion {
		return badEncoding("version %d, want %d", v, encodingVersion)
	}
	status := d.uvarint()
	flags := d.byte()
	size := d.uvarint()
	nk := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if status > 999 || flags > 3 || size > 1<<62 {
		return badEncoding("status %d, flags %d, size %d out of range", status, flags, size)
	}
	if nk > uint64(len(d.b)) { // every field takes at least two bytes
		return badEncoding("%d header fields in %d bytes", nk, len(d.b))
	}
	var h http.Header
	if nk > 0 {
		h = make(http.Header, nk)
	}
	for i := uint64(0); i < nk && d.err == nil; i++ {
		k := d.string()
		nv := d.uvarint()
		if nv > uint64(len(d.b)) {
			return badEncoding("%d values in %d bytes", nv, len(d.b))
		}
		vs := make([]string, 0, nv)
		for j := uint64(0); j < nv && d.err == nil; j++ {
			vs = append(vs, d.string())
		}
		h[k] = vs
	}
	if d.err != nil {
		return d.err
	}
	*r = Response{Status: int(status), Header: h, Omitted: flags&1 != 0, Cut: flags&2 != 0, Size: int64(size)}
	if len(d.b) > 0 {
		r.Body = append([]byte(nil), d.b...)
	}
	return nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = badEncoding("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = badEncoding("truncated or overlong number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = badEncoding("string of %d bytes in %d", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

type encodingError struct{ msg string }

func (e *encodingError) Error() string        { return "idempotency: bad stored response: " + e.msg }
func (e *encodingError) Is(target error) bool { return target == ErrBadEncoding }

func badEncoding(format string, args ...any) error {
	return &encodingError{fmt.Sprintf(format, args...)}
}
