package idempotency

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/yaoki-go/yaoki/header"
)

// MaxKeyLen is the longest key accepted, in bytes, after unquoting. Stripe
// accepts keys of up to 255 characters; the draft leaves the length to the
// server.
const MaxKeyLen = 255

// ErrMalformedKey matches every *KeyError.
var ErrMalformedKey = errors.New("idempotency: malformed Idempotency-Key")

// KeyError says why an Idempotency-Key header was refused. Its Is matches
// ErrMalformedKey.
type KeyError struct {
	Value  string // the field value as received (cut to 64 bytes when longer)
	Reason string // what was wrong, in words
}

// Error says what was wrong and what is accepted.
func (e *KeyError) Error() string {
	return fmt.Sprintf("idempotency: malformed Idempotency-Key %s: %s; want 1 to %d printable ASCII characters, bare (abc) or as a quoted string (\"abc\")",
		strconv.Quote(e.Value), e.Reason, MaxKeyLen)
}

// Is matches ErrMalformedKey.
func (e *KeyError) Is(target error) bool { return target == ErrMalformedKey }

func keyErr(value, reason string) *KeyError {
	if len(value) > 64 {
		value = value[:64] + "..."
	}
	return &KeyError{Value: value, Reason: reason}
}

// ParseKey parses one Idempotency-Key field value and returns the key.
//
// Two forms are accepted and name the same key: the draft's Structured
// Field string ("abc", with \" and \\ as the only escapes) and a bare
// token (abc), which is what most clients send. Whitespace around the value
// is ignored. A bare key may not hold a comma: "a, b" is what a proxy makes
// of two Idempotency-Key fields, and is refused (a key with a comma is sent
// quoted: "a,b"). The key must be 1 to MaxKeyLen bytes of printable ASCII
// (0x20-0x7E); Structured Field parameters after the string ("abc";p=1) are
// refused, since the draft defines none. Any other input returns a *KeyError
// saying what was wrong.
func ParseKey(value string) (string, error) {
	v := trimOWS(value)
	if v == "" {
		return "", keyErr(value, "empty")
	}
	if v[0] != '"' {
		if len(v) > MaxKeyLen {
			return "", keyErr(value, fmt.Sprintf("%d bytes long", len(v)))
		}
		for i := 0; i < len(v); i++ {
			switch c := v[i]; {
			case c < 0x20 || c > 0x7e:
				return "", keyErr(value, fmt.Sprintf("byte 0x%02x at offset %d is not printable ASCII", c, i))
			case c == ',':
				return "", keyErr(value, fmt.Sprintf("a comma at offset %d: two keys joined into one field (as a proxy joins repeated fields), or a bare key with a comma, which must be sent quoted", i))
			}
		}
		return v, nil
	}
	return parseQuoted(value, v)
}

// parseQuoted parses an sf-string (RFC 8941 §3.3.3): DQUOTE, printable ASCII
// with \" and \\ escaped, DQUOTE, and nothing after it.
func parseQuoted(orig, v string) (string, error) {
	// Fast path: no escapes, so the key is a substring and costs nothing.
	var buf []byte
	escaped := false
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) {
				return "", keyErr(orig, "unterminated quoted string")
			}
			n := v[i+1]
			if n != '"' && n != '\\' {
				return "", keyErr(orig, fmt.Sprintf("invalid escape \\%c at offset %d (only \\\" and \\\\ are allowed)", n, i))
			}
			if !escaped {
				buf = append(make([]byte, 0, len(v)), v[1:i]...)
				escaped = true
			}
			buf = append(buf, n)
			i++
		case c == '"':
			if i != len(v)-1 {
				return "", keyErr(orig, fmt.Sprintf("unexpected %q after the closing quote (parameters are not accepted)", v[i+1:]))
			}
			key := v[1:i]
			if escaped {
				key = string(buf)
			}
			switch {
			case key == "":
				return "", keyErr(orig, "empty")
			case len(key) > MaxKeyLen:
				return "", keyErr(orig, fmt.Sprintf("%d bytes long", len(key)))
			}
			return key, nil
		case c < 0x20 || c > 0x7e:
			return "", keyErr(orig, fmt.Sprintf("byte 0x%02x at offset %d is not printable ASCII", c, i))
		default:
			if escaped {
				buf = append(buf, c)
			}
		}
	}
	return "", keyErr(orig, "unterminated quoted string")
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// keyFrom returns the request's key: ok is false when the request has no
// Idempotency-Key field; err is set when it has one that is malformed or
// more than one.
func keyFrom(h http.Header) (key string, ok bool, err error) {
	vs := h[header.IdempotencyKey]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		key, err = ParseKey(vs[0])
		return key, true, err
	}
	return "", true, &KeyError{Value: vs[0], Reason: fmt.Sprintf("sent in %d fields, want exactly one", len(vs))}
}
