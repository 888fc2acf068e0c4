package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidDocument matches every error that Parse, Load, Validate and ApplyEnv
// return for a document that cannot be used.
var ErrInvalidDocument = errors.New("policy: invalid document")

// Error is one thing wrong with a document: where it is (file, line,
// column, and the JSON path such as Retry[1].BackoffRate) and what is
// wrong, with the value found and what is accepted. Parse and Load return
// every error they find, joined with errors.Join; errors.As gives the
// first.
type Error struct {
	File   string // the file's name, "" when parsed from bytes
	Line   int    // 1-based; 0 when the error has no place in a file
	Column int    // 1-based, in bytes
	Offset int64  // byte offset in the file
	Path   string // JSON path of the value, e.g. Retry[1].BackoffRate; "" for the whole document
	Msg    string // what is wrong and what is accepted
}

// Error returns "policy: FILE:LINE:COL: PATH: MSG", leaving out the parts
// that are not known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if e.File != "" || e.Line > 0 {
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is matches ErrInvalidDocument.
func (e *Error) Is(target error) bool { return target == ErrInvalidDocument }

// errs collects the errors of one document, in file order.
type errs []error

func (l *errs) add(e *Error) { *l = append(*l, e) }

func (l errs) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return errors.Join(l...)
}
