package curl

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// formPart is one -F or --form-string as given, in command-line order.
type formPart struct {
	spec    string
	literal bool // --form-string: the value is sent as written
}

// formFlag is a pflag.Value that appends to the list shared by -F and
// --form-string, so that the parts keep the order they were written in.
type formFlag struct {
	literal bool
	parts   *[]formPart
}

func (f formFlag) String() string { return "" }
func (f formFlag) Type() string   { return "NAME=VALUE" }
func (f formFlag) Set(v string) error {
	if _, _, ok := strings.Cut(v, "="); !ok {
		flag := "-F"
		if f.literal {
			flag = "--form-string"
		}
		return fmt.Errorf("%s %q: want NAME=VALUE, NAME=@FILE (upload FILE) or NAME=<FILE (FILE's content as the value)", flag, v)
	}
	*f.parts = append(*f.parts, formPart{spec: v, literal: f.literal})
	return nil
}

// formField is one part of a multipart form, as curl 7.88 reads a -F
// spec.
type formField struct {
	name     string
	value    string // the content, or the file to read with file or fromFile
	file     bool   // NAME=@FILE: upload FILE (filename and a Content-Type sent)
	fromFile bool   // NAME=<FILE: FILE's content is the value
	filename string // ;filename=, or FILE's base name for @FILE
	ctype    string // ;type=
}

// formKeywords are the modifiers curl reads after a -F value; any other
// ";word" after a type belongs to the type (type=text/plain;charset=utf-8).
var formKeywords = []string{"type=", "filename=", "headers=", "encoder="}

// parseFormSpec reads one -F spec as curl 7.88 does: NAME=VALUE, with
// VALUE "@FILE" (an upload), "<FILE" (the value read from FILE) or a
// word ("..." quoted, with \" and \\ escapes, keeps its ';'), followed by
// ";type=TYPE" and ";filename=NAME" modifiers; other modifiers are
// skipped.
func parseFormSpec(spec string, literal bool) (formField, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return formField{}, fmt.Errorf("-F %q: want NAME=VALUE, NAME=@FILE or NAME=<FILE", spec)
	}
	f := formField{name: name}
	if literal {
		f.value = rest
		return f, nil
	}
	switch {
	case strings.HasPrefix(rest, "@"):
		f.file, rest = true, rest[1:]
	case strings.HasPrefix(rest, "<"):
		f.fromFile, rest = true, rest[1:]
	}
	f.value, rest = formWord(rest)
	if f.file {
		f.filename = filepath.Base(f.value)
	}
	for strings.HasPrefix(rest, ";") {
		rest = strings.TrimLeft(rest[1:], " \t")
		switch {
		case strings.HasPrefix(rest, "type="):
			rest = strings.TrimLeft(rest[len("type="):], " \t")
			end := len(rest)
			for i := 0; i < len(rest); i++ {
				if rest[i] == ';' && formKeyword(strings.TrimLeft(rest[i+1:], " \t")) {
					end = i
					break
				}
			}
			f.ctype, rest = strings.TrimRight(rest[:end], " \t"), rest[end:]
		case strings.HasPrefix(rest, "filename="):
			var fn string
			fn, rest = formWord(rest[len("filename="):])
			if !f.fromFile {
				f.filename = fn
			}
		default:
			_, rest = formWord(rest)
		}
	}
	return f, nil
}

// formKeyword reports whether s starts with a modifier curl knows.
func formKeyword(s string) bool {
	for _, k := range formKeywords {
		if strings.HasPrefix(s, k) {
			return true
		}
	}
	return false
}

// formWord returns the word at the start of s and what follows it (from
// its ';'): a "quoted" word without its quotes and escapes, or the text
// up to the first ';' without trailing spaces.
func formWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				b.WriteByte(s[i+1])
				i++
				continue
			}
			if c == '"' {
				rest = s[i+1:]
				if j := strings.IndexByte(rest, ';'); j >= 0 {
					return b.String(), rest[j:]
				}
				return b.String(), ""
			}
			b.WriteByte(c)
		}
		// No closing quote: curl takes the word as written.
	}
	if j := strings.IndexByte(s, ';'); j >= 0 {
		return strings.TrimRight(s[:j], " \t"), s[j:]
	}
	return strings.TrimRight(s, " \t"), ""
}

// contentTypeFor returns the Content-Type curl gives an uploaded file
// from its name's extension (curl's own short table), or
// application/octet-stream.
func contentTypeFor(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".gif":
		return "image/gif"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	case ".txt":
		return "text/plain"
	case ".htm", ".html":
		return "text/html"
	case ".pdf":
		return "application/pdf"
	case ".xml":
		return "application/xml"
	}
	return "application/octet-stream"
}

// formEscape escapes a name or filename for a Content-Disposition
// parameter as curl does: '"' as %22, CR as %0D, LF as %0A.
func formEscape(s string) string {
	return strings.NewReplacer(`"`, "%22", "\r", "%0D", "\n", "%0A").Replace(s)
}

// newBoundary returns a boundary as curl makes them: 24 dashes and 16
// random hex digits.
func newBoundary() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return strings.Repeat("-", 24) + hex.EncodeToString(b[:])
}

// formBody builds the multipart body curl sends for parts, with boundary,
// and returns it with its Content-Type: ctype (-H Content-Type's, if any;
// multipart/form-data if empty) and the boundary. As curl, the parts'
// disposition is form-data under multipart/form-data, attachment under
// another type. Files are read once
// (@- and <- from stdin), so that every attempt sends the same bytes. A
// file that cannot be read is exit 26, as curl.
func formBody(parts []formPart, boundary, ctype string, stdin io.Reader) ([]byte, string, error) {
	if ctype == "" {
		ctype = "multipart/form-data"
	}
	disposition := "form-data"
	if !strings.EqualFold(ctype, "multipart/form-data") {
		disposition = "attachment"
	}
	var b bytes.Buffer
	for _, p := range parts {
		f, err := parseFormSpec(p.spec, p.literal)
		if err != nil {
			return nil, "", cli.Usagef("%v", err)
		}
		content := []byte(f.value)
		pt := f.ctype
		if f.file || f.fromFile {
			if content, err = readFileArg(f.value, stdin); err != nil {
				return nil, "", cli.Exit(curlReadError, fmt.Sprintf("(26) -F %s: cannot read the form part's file: %v", p.spec, err))
			}
			if f.file && f.value != "-" && pt == "" {
				pt = contentTypeFor(f.value)
			}
		}
		b.WriteString("--" + boundary + "\r\n")
		if disposition == "form-data" || f.name != "" || f.filename != "" {
			b.WriteString("Content-Disposition: " + disposition)
			if f.name != "" {
				fmt.Fprintf(&b, `; name="%s"`, formEscape(f.name))
			}
			if f.filename != "" {
				fmt.Fprintf(&b, `; filename="%s"`, formEscape(f.filename))
			}
			b.WriteString("\r\n")
		}
		if pt != "" {
			b.WriteString("Content-Type: " + pt + "\r\n")
		}
		b.WriteString("\r\n")
		b.Write(content)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes(), ctype + "; boundary=" + boundary, nil
}
