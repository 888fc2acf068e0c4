package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a document: a policy is three levels deep,
// and an attacker's file of a million brackets must not cost a million
// frames.
const maxDepth = 32

// node is one JSON value with the byte offset where it starts, so that a
// validation error can point at it.
type node struct {
	off   int64
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str   string
	num   json.Number
	b     bool
	keys  []string // object keys, in file order
	koff  []int64  // offset of each key
	vals  []*node  // object values, parallel to keys
	elems []*node  // array elements
}

func (n *node) kindName() string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	}
	return "null"
}

// found says what n is, for messages: `"3" is a string`, or `null`
// alone for a null value (a field left empty in YAML).
func (n *node) found() string {
	if n.kind == 'z' {
		return "null"
	}
	return n.raw() + " is " + n.kindName()
}

// raw returns the value as it would be written in the file, shortened, for
// messages.
func (n *node) raw() string {
	switch n.kind {
	case 's':
		return quote(n.str)
	case 'n':
		s := n.num.String()
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return s
	case 'b':
		return strconv.FormatBool(n.b)
	case 'z':
		return "null"
	case 'a':
		return "[…]"
	}
	return "{…}"
}

// parseTree reads one JSON value from data, with the offset of every value
// and key. shift is subtracted from every offset (used when the caller
// wrapped a fragment in braces). The error is a *Error with a position.
func parseTree(data []byte, src *source) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &treeParser{dec: dec, data: data, src: src}
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.start()
	if _, err := dec.Token(); err != io.EOF {
		return nil, src.errAt(off, "", "unexpected data after the document: a policy file holds one JSON object (or one Retry array)")
	}
	return root, nil
}

type treeParser struct {
	dec  *json.Decoder
	data []byte
	src  *source
}

// start returns the offset where the next token begins: the decoder's
// offset is the end of the previous token, before any space, ',' or ':'.
func (p *treeParser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *treeParser) token() (json.Token, int64, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, off, p.syntax(err, off)
	}
	return tok, off, nil
}

func (p *treeParser) syntax(err error, off int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
		if off > 0 {
			off-- // the decoder's offset is just past the bad byte
		}
		return p.src.errAt(off, "", "invalid JSON: "+strings.TrimPrefix(se.Error(), "json: ")+": "+p.hint())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.src.errAt(int64(len(p.data)), "", "invalid JSON: the document ends too early (a bracket or brace is not closed)")
	}
	return p.src.errAt(off, "", "invalid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

func (p *treeParser) hint() string {
	return "check for a missing comma, a trailing comma or an unquoted name"
}

func (p *treeParser) value(depth int) (*node, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	return p.fromToken(tok, off, depth)
}

func (p *treeParser) fromToken(tok json.Token, off int64, depth int) (*node, error) {
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, p.src.errAt(off, "", fmt.Sprintf("the document is nested more than %d levels deep", maxDepth))
		}
		switch t {
		case '{':
			n.kind = 'o'
			var seen map[string]bool // the keys, once there are many: a scan of them all for each key is quadratic
			for p.dec.More() {
				ktok, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				key, _ := ktok.(string)
				dup := seen[key]
				if seen == nil {
					dup = slices.Contains(n.keys, key)
					if len(n.keys) >= 16 {
						seen = make(map[string]bool, 2*len(n.keys))
						for _, k := range n.keys {
							seen[k] = true
						}
					}
				}
				if dup {
					return nil, p.src.errAt(koff, "", "field "+quote(key)+" appears twice in the same object: keep one")
				}
				if seen != nil {
					seen[key] = true
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.koff = append(n.koff, koff)
				n.vals = append(n.vals, v)
			}
		case '[':
			n.kind = 'a'
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		default:
			return nil, p.src.errAt(off, "", fmt.Sprintf("invalid JSON: unexpected %q", rune(t)))
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.num = 'n', t
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = 'z'
	}
	return n, nil
}

// quote returns s in Go quotes for a message, its first 40 bytes (cut
// at a character) and "…" when it is longer: a name of a megabyte must
// not make a message of a megabyte.
func quote(s string) string {
	if len(s) <= 40 {
		return strconv.Quote(s)
	}
	n := 40
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n] + "…")
}

// source is the text being loaded: its name (a file path, or "" for
// bytes) and content, to turn offsets into lines and columns.
type source struct {
	name  string
	data  []byte
	shift int64 // bytes added in front of the user's text
	bom   int64 // bytes of a byte order mark in the file before the text, left out of data
}

// position returns the 1-based line and column (in bytes) of offset off.
func (s *source) position(off int64) (line, col int) {
	off -= s.shift
	if off < 0 {
		off = 0
	}
	data := s.data[s.shift:]
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func (s *source) errAt(off int64, path, msg string) *Error {
	// A wrapped fragment has a brace added on each side: an offset is
	// clamped to the user's own text.
	off = min(max(off, s.shift), int64(len(s.data))-s.shift)
	line, col := s.position(off)
	return &Error{File: s.name, Line: line, Column: col, Offset: off - s.shift + s.bom, Path: path, Msg: msg}
}
