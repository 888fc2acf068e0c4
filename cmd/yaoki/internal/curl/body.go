package curl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// dataKind says how curl reads one data flag's value.
type dataKind uint8

const (
	dataAscii     dataKind = iota // -d/--data: @FILE without CR and LF, joined with &
	dataBinary                    // --data-binary: @FILE as is, joined with &
	dataRaw                       // --data-raw: no @ meaning, joined with &
	dataJSON                      // --json: @FILE as is, joined with nothing
	dataURLEncode                 // --data-urlencode: [name]=content or [name]@FILE, content percent-encoded, joined with &
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
			return nil, false, false, cli.Usagef("--json cannot be combined with -d, --data-binary or --data-raw: send the JSON with --json only")
		}
		if i > 0 && p.kind != dataJSON {
			b.WriteByte('&')
		}
		v := []byte(p.value)
		name, content, file := "", p.value, p.kind != dataRaw
		if p.kind == dataURLEncode {
			name, content, file = cutURLEncode(p.value)
		} else if file {
			content, file = strings.CutPrefix(p.value, "@")
		}
		if file {
			if v, err = readFileArg(content, stdin); err != nil {
				return nil, false, false, cli.Exit(curlReadError, fmt.Sprintf("(26) cannot read the request body from %s: %v", p.value, err))
			}
			if p.kind == dataAscii {
				v = bytes.ReplaceAll(bytes.ReplaceAll(v, []byte("\r"), nil), []byte("\n"), nil)
			}
		}
		if p.kind == dataURLEncode {
			if !file {
				v = []byte(content)
			}
			v = formEncode(name, v)
		}
		b.Write(v)
	}
	return b.Bytes(), len(parts) > 0, isJSON, nil
}

// cutURLEncode splits a --data-urlencode value as curl does: at the first
// '=' ("name=content", "=content"), else at the first '@' ("name@FILE",
// "@FILE": the content is the file's), else the whole value is the
// content.
func cutURLEncode(v string) (name, content string, file bool) {
	if n, c, ok := strings.Cut(v, "="); ok {
		return n, c, false
	}
	if n, f, ok := strings.Cut(v, "@"); ok {
		return n, f, true
	}
	return "", v, false
}

// formEncode returns "name=" (when name is not empty) and content
// percent-encoded as curl's --data-urlencode encodes it: letters, digits
// and -._~ as they are, space as '+', every other byte as %XX.
func formEncode(name string, content []byte) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString(name)
		b.WriteByte('=')
	}
	const hex = "0123456789ABCDEF"
	for _, c := range content {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.Bytes()
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

// readFileArg reads the file an argument names, as curl reads @FILE:
// "-" is stdin, read to its end.
func readFileArg(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}
