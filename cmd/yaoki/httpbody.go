package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// dataKind says how curl reads one data flag's value.
type dataKind uint8

const (
	dataAscii  dataKind = iota // -d/--data: @FILE without CR and LF, joined with &
	dataBinary                 // --data-binary: @FILE as is, joined with &
	dataRaw                    // --data-raw: no @ meaning, joined with &
	dataJSON                   // --json: @FILE as is, joined with nothing
)

// dataPart is one data flag as given, in command-line order.
type dataPart struct {
	kind  dataKind
	value string
}

// dataFlag is a pflag.Value that appends to a list shared by every data
// flag, so that -d a --data-binary b keeps the order the user wrote them
// in, as curl does.
type dataFlag struct {
	kind  dataKind
	parts *[]dataPart
}

func (d dataFlag) String() string { return "" }
func (d dataFlag) Type() string   { return "data" }
func (d dataFlag) Set(v string) error {
	*d.parts = append(*d.parts, dataPart{kind: d.kind, value: v})
	return nil
}

// requestBody builds the body curl would send for parts: values joined by
// "&" (--json values by nothing), @FILE read from a file (@- from stdin).
// It reports whether there is a body and whether it is JSON. A file that
// cannot be read is exit code 26 (curl's read error).
func requestBody(parts []dataPart, stdin io.Reader) (body []byte, has, isJSON bool, err error) {
	var b bytes.Buffer
	for i, p := range parts {
		if p.kind == dataJSON {
			isJSON = true
		} else if isJSON {
			return nil, false, false, usagef("--json cannot be combined with -d, --data-binary or --data-raw: send the JSON with --json only")
		}
		if i > 0 && p.kind != dataJSON {
			b.WriteByte('&')
		}
		v := []byte(p.value)
		if name, ok := strings.CutPrefix(p.value, "@"); ok && p.kind != dataRaw {
			if name == "-" {
				v, err = io.ReadAll(stdin)
			} else {
				v, err = os.ReadFile(name)
			}
			if err != nil {
				return nil, false, false, exit(curlReadError, fmt.Sprintf("(26) cannot read the request body from %s: %v", p.value, err))
			}
			if p.kind == dataAscii {
				v = bytes.ReplaceAll(bytes.ReplaceAll(v, []byte("\r"), nil), []byte("\n"), nil)
			}
		}
		b.Write(v)
	}
	return b.Bytes(), len(parts) > 0, isJSON, nil
}

// validHeaderName reports whether s is an HTTP field name: one or more
// tchar (RFC 9110 §5.1, §5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s may be sent as a field value: no
// control characters but tab (RFC 9110 §5.5).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validToken reports whether s is a method name: a token (RFC 9110 §9.1).
func validToken(s string) bool { return validHeaderName(s) }
